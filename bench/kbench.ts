/**
 * Runs kbench, the benchmarks' franz-go load generator (test/peers/go/cmd/kbench), and reads
 * the JSON line it prints.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { binDir } from '../test/support/paths.js';
import { runProcess, tail } from '../test/support/index.js';

export type KbenchMode = 'produce' | 'consume' | 'latency';

export interface LatencySummary {
  avg: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}

export interface KbenchResult {
  mode: KbenchMode;
  records: number;
  bytes: number;
  seconds: number;
  mbPerSec: number;
  recordsPerSec: number;
  /** Per-record produce acknowledgement latency (produce, latency). */
  latencyMs?: LatencySummary;
  /**
   * End-to-end latency (latency with --e2e, its default): from a record's scheduled send time
   * to the poll of kbench's own reader that returned it, over the records it received.
   */
  e2eMs?: LatencySummary;
  /** Records of the run the end-to-end reader received, and those it had not when it stopped. */
  received?: number;
  missing?: number;
  /** Produce and Fetch requests the client wrote. */
  requests: { produce: number; fetch: number };
  /** Record batches produced or fetched. */
  batches: number;
  /** consume: when its first Fetch was written, ms after its clock started (its metadata and ListOffsets came before). */
  firstFetchMs?: number;
  /** Distinct keys read (consume --count-keys). */
  distinctKeys?: number;
  settings: Record<string, unknown>;
}

export const kbenchBin = path.join(binDir, 'kbench');

export function kbenchMissing(): boolean {
  return !fs.existsSync(kbenchBin);
}

function parseResult(argv: string[], code: number | null, signal: string | null, stdout: string, stderr: string): KbenchResult {
  const line = stdout.trimEnd().split('\n').pop() ?? '';
  if (code !== 0 || !line.startsWith('{')) {
    throw new Error(`kbench ${argv.join(' ')} exited ${code ?? signal}\nstdout: ${tail(stdout, 5)}\nstderr: ${tail(stderr)}`);
  }
  return JSON.parse(line) as KbenchResult;
}

/** `cpus`: run kbench on these CPUs only (taskset's list, "0" or "0-1"). */
export async function kbench(mode: KbenchMode, bootstrap: string, topic: string, flags: string[], timeoutMs = 300_000, cpus?: string): Promise<KbenchResult> {
  const argv = [mode, '--brokers', bootstrap, '--topic', topic, ...flags];
  const r =
    cpus === undefined ? await runProcess(kbenchBin, argv, { timeoutMs }) : await runProcess('taskset', ['-c', cpus, kbenchBin, ...argv], { timeoutMs });
  return parseResult(argv, r.code, r.signal, r.stdout, r.stderr);
}

export interface BackgroundKbench {
  /** Ends the run (SIGTERM, which kbench answers by reporting what it did so far). */
  finish(): Promise<KbenchResult>;
  /** Waits for a run that ends by itself (a --duration), without signalling it. */
  done(): Promise<KbenchResult>;
}

/** Background runs still going; one exit hook ends them all if the bench dies first. */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** A kbench run that goes on until finish(), e.g. `consume --duration` as background traffic. */
export function startKbench(mode: KbenchMode, bootstrap: string, topic: string, flags: string[]): BackgroundKbench {
  const argv = [mode, '--brokers', bootstrap, '--topic', topic, ...flags];
  const child = spawn(kbenchBin, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (b: Buffer) => out.push(b));
  child.stderr.on('data', (b: Buffer) => err.push(b));
  const exited = new Promise<KbenchResult>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code, signal) => {
      try {
        resolve(parseResult(argv, code, signal, Buffer.concat(out).toString('utf8'), Buffer.concat(err).toString('utf8')));
      } catch (e) {
        reject(e as Error);
      }
    });
  });
  // A crash before finish() is reported by finish(); this keeps it from being unhandled meanwhile.
  exited.catch(() => undefined);
  running.add(child);
  const forget = () => running.delete(child);
  return {
    finish() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      return exited.finally(forget);
    },
    done() {
      return exited.finally(forget);
    },
  };
}
