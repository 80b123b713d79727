/**
 * `kcompact inject [FILE...]`: adds kcompact as a native sidecar to the pod templates of
 * Kubernetes manifests (files, or stdin for `-` or none) and writes them to stdout, as
 * `linkerd inject` does; `--dry-run` prints a unified diff instead. Exit 2 for input it cannot
 * inject into, with the document named.
 */
import fs from 'node:fs';
import type { Command } from 'commander';
import { InjectError } from '../../inject/inject-error.js';
import { injectManifests, type InjectOptions, type InputFile } from '../../inject/inject-manifests.js';
import { unifiedDiff } from '../../inject/line-diff.js';
import { concatStreams } from '../../inject/manifest-stream.js';
import { DEFAULT_SIDECAR } from '../../inject/sidecar.js';
import { CliError, EXIT_USAGE } from './cli-error.js';

interface InjectFlags {
  image: string;
  configMap: string;
  upstream?: string;
  carrierGroup: string;
  carrierSessionTimeoutMs: string;
  cpuRequest: string;
  memoryRequest: string;
  memoryLimit: string;
  dataSizeLimit: string;
  pointBootstrap?: boolean;
  dryRun?: boolean;
  quiet?: boolean;
}

const STDIN = '-';

function readInput(name: string): InputFile {
  try {
    return { name: name === STDIN ? 'stdin' : name, text: fs.readFileSync(name === STDIN ? 0 : name, 'utf8') };
  } catch (err) {
    throw new CliError(`cannot read ${name === STDIN ? 'stdin' : name}: ${(err as Error).message}`, EXIT_USAGE);
  }
}

const QUANTITY = /^\d+(\.\d+)?(m|k|Ki|M|Mi|G|Gi|T|Ti|P|Pi|E|Ei)?$/;

function options(f: InjectFlags): InjectOptions {
  for (const [flag, value] of [
    ['--cpu-request', f.cpuRequest],
    ['--memory-request', f.memoryRequest],
    ['--memory-limit', f.memoryLimit],
    ['--data-size-limit', f.dataSizeLimit],
  ] as const) {
    if (!QUANTITY.test(value)) throw new CliError(`${flag} ${value} is not a Kubernetes quantity (such as 250m, 512Mi, 2Gi)`, EXIT_USAGE);
  }
  const timeout = Number(f.carrierSessionTimeoutMs);
  if (!Number.isInteger(timeout) || timeout < 1_000 || timeout > 1_800_000) {
    throw new CliError(`--carrier-session-timeout-ms ${f.carrierSessionTimeoutMs} is not a whole number of milliseconds from 1000 to 1800000`, EXIT_USAGE);
  }
  if (f.upstream !== undefined && f.upstream.trim() === '') throw new CliError('--upstream is empty', EXIT_USAGE);
  return {
    ...DEFAULT_SIDECAR,
    image: f.image,
    configMap: f.configMap,
    carrierGroup: f.carrierGroup,
    carrierSessionTimeoutMs: timeout,
    cpuRequest: f.cpuRequest,
    memoryRequest: f.memoryRequest,
    memoryLimit: f.memoryLimit,
    dataSizeLimit: f.dataSizeLimit,
    upstream: f.upstream,
    pointBootstrap: f.pointBootstrap === true,
  };
}

export function addInjectCommand(program: Command): void {
  const d = DEFAULT_SIDECAR;
  program
    .command('inject')
    .description(
      'add kcompact as a native sidecar to Kubernetes manifests (Pod, Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, List) and print them',
    )
    .argument('[files...]', 'manifest files, multi-document YAML; - or none: stdin')
    .option('--image <IMAGE>', 'the kcompact image', d.image)
    .option('--config-map <NAME>', 'the ConfigMap holding kcompact.json, mounted at /etc/kcompact', d.configMap)
    .option('--upstream <HOST:PORT,...>', 'the store kcompact fronts; also writes the ConfigMap, unless the input holds one of that name')
    .option('--carrier-group <GROUP>', 'the carrier group (the same for every kcompact in front of the store)', d.carrierGroup)
    .option('--carrier-session-timeout-ms <MS>', 'how long a dead carrier keeps its partitions', String(d.carrierSessionTimeoutMs))
    .option('--cpu-request <CPU>', "the sidecar's CPU request", d.cpuRequest)
    .option('--memory-request <MEMORY>', "the sidecar's memory request", d.memoryRequest)
    .option('--memory-limit <MEMORY>', "the sidecar's memory limit", d.memoryLimit)
    .option('--data-size-limit <SIZE>', "sizeLimit of the key index's emptyDir (about 100 bytes per indexed record)", d.dataSizeLimit)
    .option(
      '--point-bootstrap',
      "point the application's BOOTSTRAP_SERVERS and *_BOOTSTRAP_SERVERS variables at the sidecar (127.0.0.1:9092); without --upstream, what they held is the upstream",
    )
    .option('--dry-run', 'print a unified diff of what would change, and nothing else')
    .option('-q, --quiet', 'no notes on stderr')
    .action((files: string[], flags: InjectFlags) => {
      const opts = options(flags);
      const names = files.length === 0 ? [STDIN] : files;
      if (names.filter((n) => n === STDIN).length > 1) throw new CliError('stdin (-) can be read once', EXIT_USAGE);
      let result;
      try {
        result = injectManifests(names.map(readInput), opts);
      } catch (err) {
        if (err instanceof InjectError) throw new CliError(err.message, EXIT_USAGE);
        throw err;
      }
      if (flags.dryRun) {
        for (const f of result.files) process.stdout.write(unifiedDiff(f.before, f.after, `a/${f.name}`, `b/${f.name}`));
      } else {
        process.stdout.write(concatStreams(result.files.map((f) => f.after)));
      }
      if (!flags.quiet) for (const note of result.notes) process.stderr.write(`kcompact inject: ${note}\n`);
    });
}
