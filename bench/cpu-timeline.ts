/**
 * Where the CPU went over a benchmark, sampled on a timeline so that any window of it can be
 * asked afterwards: the whole machine (other work on it included), this process's main thread
 * and its other threads (an in-process proxy's compaction worker among them), named other
 * processes, and how late this process's event loop ran a short timer (a proxy in this process
 * relays every client's request on that loop).
 *
 * Latency figures on a shared machine are only as good as what else ran beside them; this says
 * what did.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { cpuSeconds, threadCpuSeconds } from './proc-stats.js';

const SAMPLE_MS = 250;
const TICK_MS = 10;

interface Sample {
  at: number;
  /** Jiffies of every CPU: busy, and in all. */
  busy: number;
  total: number;
  /** Microseconds in which some runnable task waited for a CPU (PSI), NaN without it. */
  pressure: number;
  main: number;
  threads: number;
  procs: Map<string, number>;
}

export interface WindowLoad {
  /** Cores busy on average, machine-wide (of os.cpus().length). */
  machineCores: number;
  /** Share of the time some runnable task on the machine waited for a CPU (Linux's PSI "some"). */
  cpuPressure: number;
  mainCores: number;
  /** This process's other threads (worker threads, GC helpers, libuv's pool). */
  threadCores: number;
  /** By the name given to track(). */
  procCores: Record<string, number>;
  /** How late the event loop ran a timer due every few milliseconds: p99 and max. */
  loopLagP99Ms: number;
  loopLagMaxMs: number;
}

const now = () => performance.timeOrigin + performance.now();

function cpuPressureMicros(): number {
  try {
    return Number(/^some .*total=(\d+)/m.exec(fs.readFileSync('/proc/pressure/cpu', 'utf8'))?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}

function machineJiffies(): { busy: number; total: number } {
  const line = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!;
  const f = line.trim().split(/\s+/).slice(1).map(Number);
  const total = f.slice(0, 8).reduce((a, b) => a + b, 0);
  return { busy: total - f[3]! - f[4]!, total };
}

/** A child of this process running `comm` (its /proc command name), if any. */
export function childNamed(comm: string): number | undefined {
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid && name === comm) return Number(d);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

export class CpuTimeline {
  private readonly samples: Sample[] = [];
  /** Pairs of (when the timer ran, how late), flat. */
  private readonly lags: number[] = [];
  private readonly tracked = new Map<string, number>();
  private readonly sampler: NodeJS.Timeout;
  private readonly ticker: NodeJS.Timeout;
  private readonly hz: number;

  constructor() {
    this.hz = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    this.sample();
    this.sampler = setInterval(() => this.sample(), SAMPLE_MS);
    let due = now() + TICK_MS;
    this.ticker = setInterval(() => {
      const t = now();
      this.lags.push(t, Math.max(0, t - due));
      due = t + TICK_MS;
    }, TICK_MS);
  }

  /** Counts the process's CPU under `name` from now on (a later pid under the same name replaces it). */
  track(name: string, pid: number | undefined): void {
    if (pid !== undefined) this.tracked.set(name, pid);
  }

  stop(): void {
    clearInterval(this.sampler);
    clearInterval(this.ticker);
  }

  /** The load between two times (epoch ms, as performance.timeOrigin + performance.now()). */
  window(from: number, to: number): WindowLoad {
    const a = this.nearest(from);
    const b = this.nearest(to);
    const seconds = Math.max(1e-3, (b.at - a.at) / 1000);
    const procCores: Record<string, number> = {};
    for (const [name, cpu] of b.procs) procCores[name] = (cpu - (a.procs.get(name) ?? cpu)) / seconds;
    const lag: number[] = [];
    for (let i = 0; i < this.lags.length; i += 2) if (this.lags[i]! >= from && this.lags[i]! <= to) lag.push(this.lags[i + 1]!);
    lag.sort((x, y) => x - y);
    return {
      machineCores: b.total > a.total ? ((b.busy - a.busy) / (b.total - a.total)) * os.cpus().length : NaN,
      cpuPressure: (b.pressure - a.pressure) / 1000 / Math.max(1e-3, b.at - a.at),
      mainCores: (b.main - a.main) / seconds,
      threadCores: (b.threads - a.threads) / seconds,
      procCores,
      loopLagP99Ms: lag.length ? lag[Math.ceil(0.99 * lag.length) - 1]! : NaN,
      loopLagMaxMs: lag.at(-1) ?? NaN,
    };
  }

  /** Whether the event loop ran a timer more than `ms` late at some moment between the two times. */
  loopStalled(from: number, to: number, ms: number): boolean {
    for (let i = 0; i < this.lags.length; i += 2) {
      const at = this.lags[i]!;
      const late = this.lags[i + 1]!;
      if (late > ms && at - late <= to && at >= from) return true;
    }
    return false;
  }

  /** The highest CPU pressure of the sampling slots that overlap the two times (NaN without PSI). */
  pressureDuring(from: number, to: number): number {
    let most = NaN;
    for (let i = 1; i < this.samples.length; i++) {
      const a = this.samples[i - 1]!;
      const b = this.samples[i]!;
      if (b.at < from || a.at > to) continue;
      const p = (b.pressure - a.pressure) / 1000 / Math.max(1e-3, b.at - a.at);
      if (!(p <= most)) most = p;
    }
    return most;
  }

  /** Every sample as cumulative CPU seconds, and every timer's lateness: for a trace to be read afterwards. */
  raw(): {
    samples: { at: number; machineBusy: number; machineTotal: number; pressureMicros: number; main: number; threads: number; procs: Record<string, number> }[];
    loopLags: number[];
  } {
    return {
      samples: this.samples.map((x) => ({
        at: x.at,
        machineBusy: x.busy,
        machineTotal: x.total,
        pressureMicros: x.pressure,
        main: x.main,
        threads: x.threads,
        procs: Object.fromEntries(x.procs),
      })),
      loopLags: this.lags,
    };
  }

  private nearest(at: number): Sample {
    let best = this.samples[0]!;
    for (const s of this.samples) if (Math.abs(s.at - at) < Math.abs(best.at - at)) best = s;
    return best;
  }

  private sample(): void {
    const m = machineJiffies();
    let main = 0;
    let threads = 0;
    for (const [tid, cpu] of threadCpuSeconds(process.pid)) {
      if (tid === process.pid) main = cpu;
      else threads += cpu;
    }
    const procs = new Map<string, number>();
    for (const [name, pid] of this.tracked) {
      const cpu = cpuSeconds(pid);
      if (cpu !== null) procs.set(name, cpu);
    }
    // A process that exited keeps its last figure, so that windows across its end still add up.
    const last = this.samples.at(-1);
    if (last) for (const [name, cpu] of last.procs) if (!procs.has(name)) procs.set(name, cpu);
    this.samples.push({ at: now(), busy: m.busy / this.hz, total: m.total / this.hz, pressure: cpuPressureMicros(), main, threads, procs });
  }
}
