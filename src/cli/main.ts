#!/usr/bin/env -S node --initial-old-space-size=64 --expose-gc --no-lazy-feedback-allocation
/**
 * `kcompact` command line: `proxy` runs the proxy; `status`, `inspect`, `compact` and
 * `rebuild-index` administer a running one through its management endpoint (`status` and
 * `inspect` also read a stopped one's data directory); `get` and `put` read and write keys of
 * compacted topics through its table API; `inject` adds kcompact as a sidecar to Kubernetes manifests.
 */
import fs from 'node:fs';
import { Command, CommanderError } from 'commander';
import { ConfigError } from '../config/settings.js';
import { CliError, EXIT_USAGE } from './commands/cli-error.js';
import { addCompactCommand } from './commands/compact.js';
import { addGetCommand } from './commands/get.js';
import { addPutCommand } from './commands/put.js';
import { addInjectCommand } from './commands/inject.js';
import { addInspectCommand } from './commands/inspect.js';
import { addProxyCommand } from './commands/proxy.js';
import { addRebuildIndexCommand } from './commands/rebuild-index.js';
import { addStatusCommand } from './commands/status.js';

// A reader that goes away (`kcompact --help | head`, a log shipper restarting) must not crash the
// process with an unhandled EPIPE: what it would have read is dropped, the work goes on.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code !== 'EPIPE') throw err;
  });
}

/** The installed package's version: package.json sits three levels above dist/src/cli/, in a clone and in a package alike. */
function packageVersion(): string {
  return (JSON.parse(fs.readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

const program = new Command('kcompact')
  .description('Kafka wire-protocol proxy that adds log compaction to Kafka-protocol stores that lack it')
  .version(packageVersion(), '-V, --version', 'print the version')
  .showHelpAfterError()
  // Usage errors then end up below with the rest, as exit code 2; subcommands inherit both.
  .exitOverride()
  .addHelpText(
    'after',
    '\nExit codes: 0 done, 1 the operation failed (proxy unreachable, unknown topic, no value for a key, a condition not met, ...), 2 invalid configuration or usage.',
  );

addProxyCommand(program);
addStatusCommand(program);
addInspectCommand(program);
addCompactCommand(program);
addRebuildIndexCommand(program);
addGetCommand(program);
addPutCommand(program);
addInjectCommand(program);

try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) {
    // Commander has printed its message (or the help) already.
    process.exitCode = err.exitCode === 0 ? 0 : EXIT_USAGE;
  } else if (err instanceof ConfigError) {
    process.stderr.write(`kcompact: ${err.message}\n`);
    process.exitCode = EXIT_USAGE;
  } else if (err instanceof CliError) {
    process.stderr.write(`kcompact: ${err.message}\n`);
    process.exitCode = err.exitCode;
  } else {
    throw err;
  }
}
