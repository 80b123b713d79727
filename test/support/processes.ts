/**
 * Child processes for the test bed. Every child leads its own process group and is tracked, so
 * it (and anything it forked, such as a JVM under a wrapper) is killed when the test process
 * exits or is signalled: peers never outlive the test run.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const live = new Set<ChildProcess>();
const tempDirs = new Set<string>();
let hooksInstalled = false;

function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Already gone.
  }
}

function killAll(): void {
  for (const child of live) killGroup(child, 'SIGKILL');
  live.clear();
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
  tempDirs.clear();
}

function onSignal(signal: NodeJS.Signals): void {
  killAll();
  process.removeListener('SIGINT', onSignal);
  process.removeListener('SIGTERM', onSignal);
  // Re-raise so the process ends the way it would have without this hook.
  process.kill(process.pid, signal);
}

function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on('exit', killAll);
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

function track(child: ChildProcess): void {
  installHooks();
  live.add(child);
  child.once('exit', () => live.delete(child));
}

export interface TempDir {
  readonly path: string;
  remove(): void;
}

/** A temp dir for a peer's files, removed by remove() or, failing that, when the process exits. */
export function makeTempDir(prefix: string): TempDir {
  installHooks();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.add(dir);
  return {
    path: dir,
    remove() {
      tempDirs.delete(dir);
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The last `lines` lines of some output, for error messages. */
export function tail(text: string, lines = 40): string {
  const all = text.trimEnd().split('\n');
  return all.slice(-lines).join('\n');
}

export interface RunOptions {
  input?: string | Buffer;
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  stdoutBytes: Buffer;
}

export const DEFAULT_RUN_TIMEOUT_MS = 60_000;

/** Runs a command to completion. Rejects when it cannot start or outlives its timeout. */
export function runProcess(command: string, args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_RUN_TIMEOUT_MS;
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    track(child);
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout!.on('data', (b: Buffer) => out.push(b));
    child.stderr!.on('data', (b: Buffer) => err.push(b));
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup(child, 'SIGKILL');
    }, timeoutMs);
    child.once('error', (e) => {
      clearTimeout(timer);
      reject(new Error(`cannot run ${command}: ${e.message}`));
    });
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const stdoutBytes = Buffer.concat(out);
      const stderr = Buffer.concat(err).toString('utf8');
      if (timedOut) {
        reject(new Error(`${command} ${args.join(' ')} timed out after ${timeoutMs} ms; stderr tail:\n${tail(stderr)}`));
        return;
      }
      resolve({ code, signal, stdout: stdoutBytes.toString('utf8'), stderr, stdoutBytes });
    });
    // A child that exits without reading its input makes the write fail with EPIPE; its exit
    // status says what happened.
    child.stdin!.on('error', () => {});
    child.stdin!.end(opts.input ?? '');
  });
}

/**
 * Starts a peer the test talks to over its stdin and stdout (stderr piped too), tracked like
 * every other child so it dies with the test process.
 */
export function spawnPiped(command: string, args: readonly string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): ChildProcess {
  const child = spawn(command, args, { cwd: opts.cwd, env: opts.env ?? process.env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
  track(child);
  return child;
}

export interface BackgroundProcess {
  readonly pid: number;
  /** Whether it has exited, and how. */
  exitStatus(): { code: number | null; signal: NodeJS.Signals | null } | undefined;
  /** SIGTERM to its process group, SIGKILL after graceMs; resolves once it has exited. */
  stop(graceMs?: number): Promise<void>;
}

export interface BackgroundOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  stdoutFile: string;
  stderrFile: string;
}

/**
 * Starts a long-running peer with its output in files. It does not keep the event loop alive:
 * a test that forgets stop() still ends, and the exit hook then kills the peer.
 */
export function startBackground(command: string, args: readonly string[], opts: BackgroundOptions): BackgroundProcess {
  const stdout = fs.openSync(opts.stdoutFile, 'a');
  const stderr = fs.openSync(opts.stderrFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(command, args, { cwd: opts.cwd, env: opts.env ?? process.env, detached: true, stdio: ['ignore', stdout, stderr] });
  } finally {
    fs.closeSync(stdout);
    fs.closeSync(stderr);
  }
  let status: { code: number | null; signal: NodeJS.Signals | null } | undefined;
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code, signal) => {
      status = { code, signal };
      resolve();
    });
    child.once('error', (e) => {
      fs.appendFileSync(opts.stderrFile, `cannot run ${command}: ${e.message}\n`);
      status = { code: null, signal: null };
      resolve();
    });
  });
  track(child);
  child.unref();

  async function waitExit(ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(false), ms);
    });
    try {
      return await Promise.race([exited.then(() => true), timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  return {
    pid: child.pid ?? -1,
    exitStatus: () => status,
    async stop(graceMs = 10_000) {
      if (status) return;
      killGroup(child, 'SIGTERM');
      if (await waitExit(graceMs)) return;
      killGroup(child, 'SIGKILL');
      if (!(await waitExit(5_000))) throw new Error(`${command} (pid ${child.pid}) survived SIGKILL`);
    },
  };
}

/** Polls `check` until it returns a value, the peer exits, or the deadline passes. */
export async function pollUntil<T>(what: string, deadlineMs: number, check: () => Promise<T | undefined>, gone?: () => string | undefined): Promise<T> {
  const end = Date.now() + deadlineMs;
  let last: unknown;
  for (;;) {
    const why = gone?.();
    if (why) throw new Error(`${what}: ${why}`);
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) {
      const detail = last instanceof Error ? `; last error: ${last.message}` : '';
      throw new Error(`${what}: not ready after ${deadlineMs} ms${detail}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
