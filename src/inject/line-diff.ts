/**
 * A unified diff of two texts by lines, for `kcompact inject --dry-run`: manifests are small, so
 * a longest-common-subsequence table over what lies between the common head and tail is enough.
 */
const CONTEXT = 3;

type Op = { kind: ' ' | '-' | '+'; line: string };

/** Lines with their newline, so that a last line without one differs from the same line with one, as diff has it. */
function splitLines(text: string): string[] {
  return text.match(/[^\n]*\n|[^\n]+$/g) ?? [];
}

function lineOps(a: string[], b: string[]): Op[] {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const x = a.slice(head, a.length - tail);
  const y = b.slice(head, b.length - tail);
  // lcs[i][j]: the longest common subsequence of x[i..] and y[j..].
  const lcs = Array.from({ length: x.length + 1 }, () => new Uint32Array(y.length + 1));
  for (let i = x.length - 1; i >= 0; i--) {
    for (let j = y.length - 1; j >= 0; j--) lcs[i]![j] = x[i] === y[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  }
  const ops: Op[] = a.slice(0, head).map((line) => ({ kind: ' ', line }));
  let i = 0;
  let j = 0;
  while (i < x.length || j < y.length) {
    if (i < x.length && j < y.length && x[i] === y[j]) {
      ops.push({ kind: ' ', line: x[i++]! });
      j++;
    } else if (i < x.length && (j === y.length || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) {
      ops.push({ kind: '-', line: x[i++]! });
    } else {
      ops.push({ kind: '+', line: y[j++]! });
    }
  }
  for (const line of a.slice(a.length - tail)) ops.push({ kind: ' ', line });
  return ops;
}

/** `diff -u` of `before` and `after` under the two names; empty when they are equal. */
export function unifiedDiff(before: string, after: string, nameBefore: string, nameAfter: string): string {
  if (before === after) return '';
  const ops = lineOps(splitLines(before), splitLines(after));
  const out = [`--- ${nameBefore}`, `+++ ${nameAfter}`];
  let k = 0;
  while (k < ops.length) {
    while (k < ops.length && ops[k]!.kind === ' ') k++;
    if (k === ops.length) break;
    // A hunk: from CONTEXT lines before this change to CONTEXT after the last change within reach.
    const start = Math.max(0, k - CONTEXT);
    let end = k;
    for (;;) {
      while (end < ops.length && ops[end]!.kind !== ' ') end++;
      let next = end;
      while (next < ops.length && ops[next]!.kind === ' ') next++;
      if (next < ops.length && next - end <= 2 * CONTEXT) end = next;
      else break;
    }
    const stop = Math.min(ops.length, end + CONTEXT);
    let oldLine = 1;
    let newLine = 1;
    for (let m = 0; m < start; m++) {
      if (ops[m]!.kind !== '+') oldLine++;
      if (ops[m]!.kind !== '-') newLine++;
    }
    const hunk = ops.slice(start, stop);
    const oldCount = hunk.filter((o) => o.kind !== '+').length;
    const newCount = hunk.filter((o) => o.kind !== '-').length;
    // diff -u names the line before an empty range.
    const range = (line: number, count: number) => `${count === 0 ? line - 1 : line}${count === 1 ? '' : `,${count}`}`;
    out.push(`@@ -${range(oldLine, oldCount)} +${range(newLine, newCount)} @@`);
    for (const o of hunk) {
      if (o.line.endsWith('\n')) out.push(o.kind + o.line.slice(0, -1));
      else out.push(o.kind + o.line, '\\ No newline at end of file');
    }
    k = stop;
  }
  return out.join('\n') + '\n';
}
