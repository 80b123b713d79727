/**
 * Where a node process's memory sits, from a diagnostic report (`node --report-on-signal`):
 * the JS heap and external (Buffer/ArrayBuffer) memory of the main thread and of each worker
 * thread. What RSS holds beyond those is native: SQLite's caches, node and V8 themselves.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pollUntil } from '../test/support/index.js';

export const REPORT_SIGNAL = 'SIGUSR2';

/** The node flags that make a process write a report into dir on REPORT_SIGNAL. */
export function reportNodeArgs(dir: string): string[] {
  return ['--report-on-signal', `--report-signal=${REPORT_SIGNAL}`, `--report-directory=${dir}`];
}

export interface ThreadHeap {
  /** Bytes the JS heap has reserved (committed) and uses. */
  heapTotal: number;
  heapUsed: number;
  /** Bytes of Buffers and ArrayBuffers the isolate holds outside its heap. */
  external: number;
  /** Bytes each space of the heap has reserved (new_space, old_space, large_object_space, ...). */
  spaces: Record<string, number>;
}

export interface HeapBreakdown {
  main: ThreadHeap;
  workers: ThreadHeap[];
}

interface JavascriptHeap {
  totalMemory: number;
  usedMemory: number;
  externalMemory: number;
  heapSpaces?: Record<string, { memorySize: number }>;
}

function threadHeap(h: JavascriptHeap): ThreadHeap {
  const spaces: Record<string, number> = {};
  for (const [name, space] of Object.entries(h.heapSpaces ?? {})) spaces[name] = space.memorySize;
  return { heapTotal: h.totalMemory, heapUsed: h.usedMemory, external: h.externalMemory, spaces };
}

/** Signals the process and reads the report it writes into dir (then deletes it). */
export async function heapBreakdown(pid: number, dir: string): Promise<HeapBreakdown> {
  const before = new Set(fs.readdirSync(dir));
  process.kill(pid, REPORT_SIGNAL);
  const file = await pollUntil(`a diagnostic report from pid ${pid}`, 30_000, async () => {
    const f = fs.readdirSync(dir).find((n) => !before.has(n) && n.endsWith('.json'));
    if (!f) return undefined;
    // Written in one go at the end, but possibly seen half-written: retry until it parses.
    const text = fs.readFileSync(path.join(dir, f), 'utf8');
    try {
      return { name: f, report: JSON.parse(text) as { javascriptHeap: JavascriptHeap; workers?: { javascriptHeap: JavascriptHeap }[] } };
    } catch {
      return undefined;
    }
  });
  fs.rmSync(path.join(dir, file.name), { force: true });
  return { main: threadHeap(file.report.javascriptHeap), workers: (file.report.workers ?? []).map((w) => threadHeap(w.javascriptHeap)) };
}
