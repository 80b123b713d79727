/**
 * What /proc says about a process the benchmarks started: CPU time, per thread too (the
 * compaction engine is a worker thread of the proxy process), and resident memory.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat, or null where there is no /proc. */
const clockTicks = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || null;
  } catch {
    return null;
  }
})();

function statCpuSeconds(statFile: string): number | null {
  if (!clockTicks) return null;
  try {
    // The command name (field 2) may hold spaces; count fields after its closing parenthesis.
    const stat = fs.readFileSync(statFile, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / clockTicks;
  } catch {
    return null;
  }
}

/** CPU seconds (user + system) the process has used, or null where there is no /proc. */
export function cpuSeconds(pid: number): number | null {
  return statCpuSeconds(`/proc/${pid}/stat`);
}

/** CPU seconds per thread id (the main thread's id is the pid); empty where there is no /proc. */
export function threadCpuSeconds(pid: number): Map<number, number> {
  const out = new Map<number, number>();
  let tids: string[];
  try {
    tids = fs.readdirSync(`/proc/${pid}/task`);
  } catch {
    return out;
  }
  for (const tid of tids) {
    const s = statCpuSeconds(`/proc/${pid}/task/${tid}/stat`);
    if (s !== null) out.set(Number(tid), s);
  }
  return out;
}

export interface Memory {
  /** Resident set size now, bytes. */
  rss: number;
  /** The most it has been resident so far (VmHWM), bytes. */
  peakRss: number;
  /** Of rss: anonymous memory (heaps, malloc), file-backed pages (code, mapped files), shared memory. */
  anon: number;
  file: number;
  shmem: number;
}

export function memory(pid: number): Memory | null {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
    return { rss: kib('VmRSS'), peakRss: kib('VmHWM'), anon: kib('RssAnon'), file: kib('RssFile'), shmem: kib('RssShmem') };
  } catch {
    return null;
  }
}
