/**
 * A node:test reporter that prints nothing until the run ends, then the tests that failed, one
 * line each with where they are and the first line of their error. `make test` runs it beside
 * the TAP reporter: a CI log cut to its last lines still says what failed.
 */
const MAX_LISTED = 12;
const MAX_MESSAGE = 400;

/** The first line of what failed, without the runner's wrapping of a test's own error. */
function message(error) {
  const cause = error?.cause ?? error;
  const text = cause instanceof Error ? cause.message : String(cause ?? 'failed');
  const line = text.split('\n').find((l) => l.trim() !== '') ?? text;
  return line.length > MAX_MESSAGE ? `${line.slice(0, MAX_MESSAGE)}...` : line;
}

export default async function* failures(source) {
  const failed = [];
  for await (const event of source) {
    if (event.type !== 'test:fail') continue;
    const { name, file, details } = event.data;
    // A suite or test that failed only because a subtest did: the subtest is listed itself.
    if (details?.error?.failureType === 'subtestsFailed') continue;
    failed.push(`${file ? `${file.replace(/^.*\/dist\//, 'dist/')}: ` : ''}${name}: ${message(details?.error)}`);
  }
  if (failed.length === 0) return;
  yield `\n# ${failed.length} failed:\n`;
  for (const f of failed.slice(0, MAX_LISTED)) yield `# - ${f}\n`;
  if (failed.length > MAX_LISTED) yield `# ... and ${failed.length - MAX_LISTED} more (the TAP output above has them all)\n`;
}
