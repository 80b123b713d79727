/**
 * The `kcompact proxy` command as a separate process, the way an operator (or Kubernetes) runs
 * it: flags, JSON logs on stderr, the management endpoint, signals and exit codes.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NODE_FLAGS } from '../../src/cli/node-flags.js';
import { tokenOf } from '../../src/ops/bearer-token.js';
import type { StatusReport } from '../../src/ops/admin-reports.js';
import { freePortRun } from './kcompact.js';
import { freePort } from './ports.js';
import { httpRequest } from './http-request.js';
import { makeTempDir, pollUntil, startBackground, tail, type TempDir } from './processes.js';

const main = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/cli/main.js');

export interface CliProxyOptions {
  upstream: string;
  /** Reused across a restart; a temp dir (removed by stop()) when omitted. */
  dataDir?: string;
  /** More flags, e.g. ['--drain-timeout-ms', '5000']. */
  args?: string[];
  /** Broker ports to keep free after the bootstrap port (default 4). */
  brokerSlots?: number;
  /** Bootstrap, metrics and admin ports, for a restart that clients reconnect to (free ones when omitted). */
  port?: number;
  managementPort?: number;
  adminPort?: number;
  /** Where the admin listener binds (default 127.0.0.1); off loopback it needs adminTokenFile. */
  adminHost?: string;
  /** The admin listener's token file; http() sends what it holds at each request. */
  adminTokenFile?: string;
  startTimeoutMs?: number;
  /** More environment variables (KCOMPACT_* settings, secrets kept off the command line). */
  env?: Record<string, string>;
  /** The `kcompact` command to run, e.g. an installed package's; default this clone's build, with its node flags. */
  executable?: string;
}

export interface LogLine {
  time: string;
  level: string;
  msg: string;
  [field: string]: unknown;
}

export interface CliProxy {
  bootstrap: string;
  /** HOST:PORT of the metrics listener (probes, /metrics). */
  management: string;
  /** HOST:PORT to reach the admin listener at (/status, /inspect, /compact, /rebuild-index). */
  admin: string;
  dataDir: string;
  pid: number;
  /** Every complete log line so far, parsed (a line that is not JSON fails the call). */
  logs(): LogLine[];
  exitStatus(): { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** Resolves with the exit status once the process has exited; rejects after the deadline. */
  waitExit(deadlineMs: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /**
   * GET (or another method) on the listener that serves the route: the admin listener for the
   * admin routes, the metrics listener for the rest, unless `opts.listener` names one.
   */
  http(route: string, method?: string, opts?: HttpOptions): Promise<{ status: number; body: string }>;
  /** SIGTERM and wait (SIGKILL past the grace); removes its temp data dir. */
  stop(): Promise<void>;
}

export interface HttpOptions {
  listener?: 'metrics' | 'admin';
  /** Instead of the token header http() sends to the admin listener. */
  headers?: Record<string, string>;
}

/** The admin routes' paths: served on the admin listener only. */
export const ADMIN_PATHS: ReadonlySet<string> = new Set(['/status', '/inspect', '/compact', '/rebuild-index']);

export async function startCliProxy(opts: CliProxyOptions): Promise<CliProxy> {
  const slots = opts.brokerSlots ?? 4;
  const port = opts.port ?? (await freePortRun(slots + 1));
  const managementPort = opts.managementPort ?? (await freePort());
  const temp: TempDir = makeTempDir('kcompact-cli-');
  const dataDir = opts.dataDir ?? path.join(temp.path, 'data');
  const stderrFile = path.join(temp.path, 'stderr.log');
  const management = `127.0.0.1:${managementPort}`;
  const adminPort = opts.adminPort ?? (await freePort());
  const adminHost = opts.adminHost ?? '127.0.0.1';
  const admin = `127.0.0.1:${adminPort}`;
  const args = [
    ...(opts.executable === undefined ? [...NODE_FLAGS, main] : []),
    'proxy',
    '--upstream',
    opts.upstream,
    '--listen',
    `127.0.0.1:${port}`,
    '--broker-port-base',
    String(port + 1),
    '--metrics-listen',
    management,
    '--admin-listen',
    `${adminHost.includes(':') ? `[${adminHost}]` : adminHost}:${adminPort}`,
    ...(opts.adminTokenFile !== undefined ? ['--admin-token-file', opts.adminTokenFile] : []),
    '--data-dir',
    dataDir,
    '--log-level',
    'info',
    // Carrying and indexing on demand are the proxy's defaults; a test proxy does either only when
    // it asks to (most tests write around the proxy and wait for its index).
    ...(opts.args?.includes('--carrier-group') || opts.env?.KCOMPACT_CARRIER_GROUP !== undefined ? [] : ['--carrier-group', 'none']),
    ...(opts.args?.includes('--index-on-demand') || opts.env?.KCOMPACT_INDEX_ON_DEMAND !== undefined ? [] : ['--index-on-demand', 'false']),
    ...(opts.args ?? []),
  ];
  const proc = startBackground(opts.executable ?? process.execPath, args, {
    stdoutFile: path.join(temp.path, 'stdout.log'),
    stderrFile,
    env: { ...process.env, ...opts.env },
  });
  const stderr = () => (fs.existsSync(stderrFile) ? fs.readFileSync(stderrFile, 'utf8') : '');
  const gone = () => {
    const s = proc.exitStatus();
    return s ? `kcompact exited (code ${s.code}, signal ${s.signal}); stderr tail:\n${tail(stderr())}` : undefined;
  };
  const http = async (route: string, method = 'GET', o: HttpOptions = {}) => {
    const listener = o.listener ?? (ADMIN_PATHS.has(new URL(route, 'http://x').pathname) ? 'admin' : 'metrics');
    const token =
      listener === 'admin' && opts.adminTokenFile !== undefined ? { authorization: `Bearer ${tokenOf(fs.readFileSync(opts.adminTokenFile))}` } : undefined;
    const headers = o.headers ?? token;
    const res = await httpRequest(listener === 'admin' ? admin : management, route, { method, ...(headers ? { headers } : {}) });
    return { status: res.status, body: res.body };
  };
  const cli: CliProxy = {
    bootstrap: `127.0.0.1:${port}`,
    management,
    admin,
    dataDir,
    pid: proc.pid,
    logs: () =>
      stderr()
        .split('\n')
        // The last piece is unterminated: still being written, or cut short by a SIGKILL.
        .slice(0, -1)
        .filter((l) => l.trim() !== '')
        .map((l) => JSON.parse(l) as LogLine),
    exitStatus: () => proc.exitStatus(),
    waitExit: (deadlineMs) => pollUntil('kcompact exit', deadlineMs, async () => proc.exitStatus()),
    http,
    async stop() {
      try {
        await proc.stop(20_000);
      } finally {
        temp.remove();
      }
    },
  };
  try {
    await pollUntil(
      'kcompact startup (/startupz)',
      opts.startTimeoutMs ?? 30_000,
      async () => ((await http('/startupz')).status === 200 ? true : undefined),
      gone,
    );
  } catch (err) {
    await cli.stop();
    throw err;
  }
  return cli;
}

/** The flags that make a CLI proxy a carrier: a group of its own unless `groupId` names a shared one. */
export function carrierArgs(groupId = `kcompact-test-${randomUUID()}`, sessionTimeoutMs = 6_000): string[] {
  return ['--carrier-group', groupId, '--carrier-session-timeout-ms', String(sessionTimeoutMs)];
}

/** Waits until the proxy's carrier group assigned it `partitions` partitions at least (of every topic). */
export async function waitCarrying(cli: CliProxy, partitions: number, timeoutMs = 60_000): Promise<StatusReport['carrierGroup']> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await cli.http('/status').catch(() => undefined);
    const group = res?.status === 200 ? (JSON.parse(res.body) as StatusReport).carrierGroup : undefined;
    if (group?.state === 'stable' && group.carried.length >= partitions) return group;
    if (Date.now() > deadline)
      throw new Error(`${cli.bootstrap} was not assigned ${partitions} partitions to carry within ${timeoutMs} ms: ${JSON.stringify(group)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
