/**
 * Budget (c) of the compaction benchmark: the proxy process stays under 300 MiB resident with
 * 10M keys indexed. A proxy process of its own (so nothing else it did counts) indexes a
 * compacted topic of distinct keys, written straight to the upstream in steps (1M, then up to
 * 3M, then up to 10M keys by default). After each step: RSS once the step is indexed, RSS once
 * it is cleaned (the survivor set of every key then lives in the proxy's memory too), the peak
 * so far (VmHWM), the index's size on disk and its share per record, and where the memory sits
 * (JS heaps and Buffers of the main and worker threads, from a diagnostic report; the rest is
 * native: SQLite, node, V8). Then a reader goes through the whole compacted view, which is
 * when the fetch path holds the most.
 */
import type { RunningProxyProcess } from './proxy-process.js';
import { appendRecord, createTopics } from './bench-topics.js';
import { cleanUpTo, engineStatus, indexBytes, waitIndexed } from './engine-client.js';
import { kbench, type KbenchResult } from './kbench.js';
import { heapBreakdown, type HeapBreakdown } from './heap-report.js';
import { memory, type Memory } from './proc-stats.js';

export interface MemoryConfig {
  /** Cumulative distinct keys after each step, ascending. */
  steps: number[];
  valueSize: number;
  segmentMs: number;
}

export interface MemoryStep {
  keys: number;
  /** Records in the log (keys, kbench warm-up records, roll records). */
  records: number;
  produce: KbenchResult;
  /** From the start of the step's produce until the index held all of it. */
  indexSeconds: number;
  cleanSeconds: number;
  indexed: Memory;
  cleaned: Memory;
  heapIndexed: HeapBreakdown;
  heapCleaned: HeapBreakdown;
  /** Largest RSS sampled during the step. */
  sampledPeakRss: number;
  indexBytes: number;
}

export interface MemoryResult {
  config: MemoryConfig;
  /** The idle proxy before the first record. */
  baseline: Memory;
  steps: MemoryStep[];
  read: { result: KbenchResult; during: Memory; sampledPeakRss: number };
}

const TOPIC = 'memory-keys';
const SAMPLE_MS = 250;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export function rssOf(proxy: RunningProxyProcess): Memory {
  const m = memory(proxy.proc.pid);
  if (!m) throw new Error(proxy.crashed() ?? `cannot read /proc/${proxy.proc.pid}/status`);
  return m;
}

/** The largest RSS seen while `run` goes on. */
export async function withPeakRss<T>(proxy: RunningProxyProcess, run: () => Promise<T>): Promise<[T, number]> {
  let peak = 0;
  const timer = setInterval(() => {
    peak = Math.max(peak, memory(proxy.proc.pid)?.rss ?? 0);
  }, SAMPLE_MS);
  try {
    const value = await run();
    return [value, Math.max(peak, rssOf(proxy).rss)];
  } finally {
    clearInterval(timer);
  }
}

/** The proxy must write diagnostic reports into reportDir (heap-report.ts's reportNodeArgs). */
export async function measureMemory(
  upstream: string,
  proxy: RunningProxyProcess,
  reportDir: string,
  cfg: MemoryConfig,
  log: (s: string) => void,
): Promise<MemoryResult> {
  await createTopics(proxy.bootstrap, [{ topic: TOPIC, partitions: 1, configs: { 'cleanup.policy': 'compact', 'segment.ms': String(cfg.segmentMs) } }]);
  // Compacted topics left on the upstream by an earlier phase would be indexed too (their configs
  // live in the upstream) and their memory counted here.
  const others = [...new Set((await engineStatus(proxy.admin)).partitions.map((p) => p.topic).filter((t) => t !== TOPIC))];
  if (others.length) throw new Error(`the memory phase's proxy also indexes ${others.join(', ')}: delete them first`);
  const baseline = rssOf(proxy);
  const steps: MemoryStep[] = [];
  let keys = 0;
  let end = 0;
  for (const target of cfg.steps) {
    const n = target - keys;
    const [step, sampledPeakRss] = await withPeakRss(proxy, async () => {
      log(`(c) producing keys ${keys} to ${target - 1} straight to the upstream`);
      const t0 = performance.now();
      const produce = await kbench(
        'produce',
        upstream,
        TOPIC,
        ['--count', String(n), '--keys', String(n), '--key-base', String(keys), '--value-size', String(cfg.valueSize)],
        900_000,
      );
      const produced = performance.now();
      // kbench writes a warm-up record before its n.
      await waitIndexed(proxy.admin, TOPIC, end + n + 1, 900_000, proxy.crashed);
      const indexSeconds = (performance.now() - t0) / 1000;
      const indexed = rssOf(proxy);
      const heapIndexed = await heapBreakdown(proxy.proc.pid, reportDir);
      await sleep(cfg.segmentMs + 500 - (performance.now() - produced));
      const roll = await appendRecord(upstream, TOPIC, `roll-${target}`);
      await waitIndexed(proxy.admin, TOPIC, roll + 1, 60_000, proxy.crashed);
      end = roll + 1;
      log(`(c) ${target} keys indexed: RSS ${(indexed.rss / 2 ** 20).toFixed(0)} MiB; cleaning`);
      const t1 = performance.now();
      await cleanUpTo(proxy.admin, TOPIC, roll, 900_000);
      const cleanSeconds = (performance.now() - t1) / 1000;
      const cleaned = rssOf(proxy);
      const heapCleaned = await heapBreakdown(proxy.proc.pid, reportDir);
      log(
        `(c) ${target} keys cleaned in ${cleanSeconds.toFixed(1)} s: RSS ${(cleaned.rss / 2 ** 20).toFixed(0)} MiB, peak ${(cleaned.peakRss / 2 ** 20).toFixed(0)} MiB`,
      );
      return {
        keys: target,
        records: end,
        produce,
        indexSeconds,
        cleanSeconds,
        indexed,
        cleaned,
        heapIndexed,
        heapCleaned,
        indexBytes: indexBytes(proxy.dataDir, TOPIC),
      };
    });
    steps.push({ ...step, sampledPeakRss });
    keys = target;
  }
  log(`(c) reading the compacted view of ${keys} keys through the proxy`);
  const [result, sampledPeakRss] = await withPeakRss(proxy, () => kbench('consume', proxy.bootstrap, TOPIC, ['--to-end', '--timeout', '15m'], 960_000));
  return { config: cfg, baseline, steps, read: { result, during: rssOf(proxy), sampledPeakRss } };
}
