/**
 * The proxy as the benchmarks run it: its own node process started from the CLI, so it does not
 * share an event loop (or a CPU profile) with the orchestrator, with its metrics and admin
 * listeners on free ports.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePortRun } from '../test/support/kcompact.js';
import { NODE_FLAGS } from '../src/cli/node-flags.js';
import { freePort, makeTempDir, pollUntil, startBackground, tail, type BackgroundProcess } from '../test/support/index.js';

/**
 * The proxy runs as deploy/Dockerfile runs it: two glibc malloc arenas instead of one per thread
 * (the compaction worker, libuv's pool), which keeps freed memory from staying resident with
 * millions of keys indexed (docs/performance.md). An explicit MALLOC_ARENA_MAX in the
 * environment wins.
 */
export const DEPLOYED_MALLOC_ARENA_MAX = process.env.MALLOC_ARENA_MAX ?? '2';

export const cliPath = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../src/cli/main.js');

export interface ProxyProcessOptions {
  /** Write node CPU profiles (main thread and worker threads) into this dir on exit. */
  cpuProfDir?: string;
  /** More node flags. */
  nodeArgs?: string[];
  /** Parent of the proxy's temp dir (its data dir and logs); default os.tmpdir(). */
  parentDir?: string;
  /** More `kcompact proxy` flags. */
  args?: string[];
}

export interface RunningProxyProcess {
  bootstrap: string;
  /** HOST:PORT of the metrics listener (/metrics, probes). */
  management: string;
  /** HOST:PORT of the admin listener (/status, /compact). */
  admin: string;
  dataDir: string;
  proc: BackgroundProcess;
  stderrTail(): string;
  crashed(): string | undefined;
  /** Stops the process (SIGTERM: node writes CPU profiles then) and removes its dir. */
  stop(): Promise<void>;
}

/** Whether something accepts connections on 127.0.0.1:port (true), for pollUntil. */
export function canConnect(port: number): Promise<true | undefined> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(undefined));
  });
}

export async function startProxyProcess(upstream: string, upstreamNodeId: number, opts: ProxyProcessOptions = {}): Promise<RunningProxyProcess> {
  const temp = opts.parentDir
    ? { path: fs.mkdtempSync(path.join(opts.parentDir, 'kcompact-bench-proxy-')), remove: undefined }
    : makeTempDir('kcompact-bench-proxy-');
  const dir = temp.path;
  const remove = () => (temp.remove ? temp.remove() : fs.rmSync(dir, { recursive: true, force: true }));
  const port = await freePortRun(upstreamNodeId + 2);
  const management = `127.0.0.1:${await freePort()}`;
  const admin = `127.0.0.1:${await freePort()}`;
  const dataDir = path.join(dir, 'data');
  const stderrFile = path.join(dir, 'stderr.log');
  const nodeArgs = [...NODE_FLAGS, ...(opts.cpuProfDir ? ['--cpu-prof', '--cpu-prof-dir', opts.cpuProfDir] : []), ...(opts.nodeArgs ?? [])];
  const proc = startBackground(
    process.execPath,
    [
      ...nodeArgs,
      cliPath,
      'proxy',
      '--upstream',
      upstream,
      '--listen',
      `127.0.0.1:${port}`,
      '--broker-port-base',
      String(port + 1),
      '--data-dir',
      dataDir,
      '--metrics-listen',
      management,
      '--admin-listen',
      admin,
      '--log-level',
      'warn',
      // A benchmark's proxy carries only where it names a carrier group, and indexes every
      // compacted partition unless it asks otherwise (the benchmarks write around it).
      ...(opts.args?.includes('--carrier-group') ? [] : ['--carrier-group', 'none']),
      ...(opts.args?.includes('--index-on-demand') ? [] : ['--index-on-demand', 'false']),
      ...(opts.args ?? []),
    ],
    { stdoutFile: path.join(dir, 'stdout.log'), stderrFile, env: { ...process.env, MALLOC_ARENA_MAX: DEPLOYED_MALLOC_ARENA_MAX } },
  );
  const stderrTail = () => tail(fs.existsSync(stderrFile) ? fs.readFileSync(stderrFile, 'utf8') : '');
  const crashed = () => {
    const s = proc.exitStatus();
    return s ? `proxy exited (code ${s.code}, signal ${s.signal}); stderr tail:\n${stderrTail()}` : undefined;
  };
  const stop = async () => {
    try {
      await proc.stop(15_000);
    } finally {
      remove();
    }
  };
  try {
    // The broker listener opens only after the proxy has learnt the upstream's brokers.
    await pollUntil('proxy broker listener', 30_000, () => canConnect(port + 1 + upstreamNodeId), crashed);
  } catch (e) {
    await stop();
    throw e;
  }
  return { bootstrap: `127.0.0.1:${port}`, management, admin, dataDir, proc, stderrTail, crashed, stop };
}
