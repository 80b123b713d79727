/**
 * Budget (a) of the compaction benchmark: the key index keeps up with at least 200k records/s
 * on one core while the proxy serves traffic. Records are produced straight to the upstream
 * into a topic made compacted through the proxy, while a consumer reads another topic through
 * the proxy over and over; meanwhile the engine's indexed offset (GET /status) and the CPU time
 * of each of the proxy's threads are sampled. The engine is a worker thread: the busiest thread
 * besides the main one is it, so its CPU time is what indexing cost on one core.
 */
import type { RunningProxyProcess } from './proxy-process.js';
import { createTopics } from './bench-topics.js';
import { engineStatus, indexBytes } from './engine-client.js';
import { kbench, startKbench, type KbenchResult } from './kbench.js';
import { threadCpuSeconds } from './proc-stats.js';

export interface IngestConfig {
  records: number;
  keys: number;
  partitions: number;
  valueSize: number;
  /** Records of 1 KiB in the topic the background consumer reads through the proxy. */
  trafficRecords: number;
}

export interface IngestResult {
  config: IngestConfig;
  produce: KbenchResult;
  traffic: KbenchResult;
  /** Records the engine indexed while sampled. */
  indexed: number;
  seconds: number;
  /** Indexed records per second over the whole run, from first to last record indexed. */
  recordsPerSec: number;
  /** Indexed records per second over the stretches where the index was behind the upstream. */
  behindRecordsPerSec: number | null;
  behindSeconds: number;
  /** Largest backlog seen (upstream high watermark minus indexed offset, summed over partitions). */
  maxLag: number;
  /** CPU seconds of the busiest non-main thread (the compaction worker), the main thread, all. */
  workerCpuSeconds: number | null;
  mainCpuSeconds: number | null;
  processCpuSeconds: number | null;
  indexBytes: number;
}

export interface Sample {
  at: number;
  next: number;
  highWatermark: number;
  threads: Map<number, number>;
}

const SAMPLE_MS = 100;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Samples the topics' indexing progress (summed over their partitions) and the proxy's
 * per-thread CPU until stopped. Each sample is a GET /status, whose cost grows with the
 * partitions indexed: many partitions want a longer interval.
 */
export function sampleIngest(proxy: RunningProxyProcess, topics: readonly string[], intervalMs = SAMPLE_MS): { samples: Sample[]; stop(): Promise<void> } {
  const wanted = new Set(topics);
  const samples: Sample[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = performance.now();
      const partitions = (await engineStatus(proxy.admin)).partitions.filter((p) => wanted.has(p.topic));
      samples.push({
        at: performance.now(),
        next: partitions.reduce((n, p) => n + p.nextOffset, 0),
        highWatermark: partitions.reduce((n, p) => n + p.highWatermark, 0),
        threads: threadCpuSeconds(proxy.proc.pid),
      });
      await sleep(Math.max(0, intervalMs - (performance.now() - started)));
    }
  })();
  return {
    samples,
    async stop() {
      running = false;
      await loop;
    },
  };
}

/** CPU seconds between two samples: of the busiest thread besides the main one (the worker), of the main thread, of all. */
export function cpuDeltas(first: Sample, last: Sample, mainTid: number): Pick<IngestResult, 'workerCpuSeconds' | 'mainCpuSeconds' | 'processCpuSeconds'> {
  if (last.threads.size === 0) return { workerCpuSeconds: null, mainCpuSeconds: null, processCpuSeconds: null };
  let worker = 0;
  let total = 0;
  for (const [tid, s] of last.threads) {
    const d = s - (first.threads.get(tid) ?? 0);
    total += d;
    if (tid !== mainTid) worker = Math.max(worker, d);
  }
  const main = (last.threads.get(mainTid) ?? 0) - (first.threads.get(mainTid) ?? 0);
  return { workerCpuSeconds: worker, mainCpuSeconds: main, processCpuSeconds: total };
}

/** Waits until the sampler has seen `total` records indexed (the proxy crashing ends the wait). */
export async function waitSampled(samples: readonly Sample[], total: number, proxy: RunningProxyProcess, deadlineMs: number): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while ((samples.at(-1)?.next ?? 0) < total) {
    const why = proxy.crashed();
    if (why) throw new Error(why);
    if (Date.now() > deadline) throw new Error(`the index reached ${samples.at(-1)?.next} of ${total} records in ${deadlineMs / 1000} s`);
    await sleep(SAMPLE_MS);
  }
}

export type IngestFigures = Omit<IngestResult, 'config' | 'produce' | 'traffic' | 'indexBytes'>;

/** What the samples say about indexing `total` records: from the last sample before indexing began to the first that saw all of it. */
export function ingestFigures(samples: readonly Sample[], total: number, mainTid: number): IngestFigures {
  const begin = Math.max(0, samples.findIndex((s) => s.next > 0) - 1);
  const end = samples.findIndex((s) => s.next >= total);
  const first = samples[begin]!;
  const last = samples[end]!;
  let behindRecords = 0;
  let behindMs = 0;
  let maxLag = 0;
  for (let i = begin; i < end; i++) {
    const a = samples[i]!;
    const b = samples[i + 1]!;
    maxLag = Math.max(maxLag, a.highWatermark - a.next);
    if (a.highWatermark - a.next > 0) {
      behindRecords += b.next - a.next;
      behindMs += b.at - a.at;
    }
  }
  const seconds = (last.at - first.at) / 1000;
  const indexed = last.next - first.next;
  return {
    indexed,
    seconds,
    recordsPerSec: indexed / seconds,
    behindRecordsPerSec: behindMs > 0 ? behindRecords / (behindMs / 1000) : null,
    behindSeconds: behindMs / 1000,
    maxLag,
    ...cpuDeltas(first, last, mainTid),
  };
}

const topic = 'ingest-compacted';
const trafficTopic = 'ingest-traffic';
/** The upstream topics this phase creates. */
export const INGEST_TOPICS = [topic, trafficTopic];

export async function measureIngest(upstream: string, proxy: RunningProxyProcess, cfg: IngestConfig, log: (s: string) => void): Promise<IngestResult> {
  await createTopics(proxy.bootstrap, [
    { topic, partitions: cfg.partitions, configs: { 'cleanup.policy': 'compact' } },
    { topic: trafficTopic, partitions: 2 },
  ]);
  log(`(a) filling ${trafficTopic} with ${cfg.trafficRecords} records of 1 KiB for the background consumer`);
  await kbench('produce', upstream, trafficTopic, ['--count', String(cfg.trafficRecords), '--value-size', '1024']);

  const traffic = startKbench('consume', proxy.bootstrap, trafficTopic, ['--duration', '60m', '--timeout', '61m']);
  const sampler = sampleIngest(proxy, [topic]);
  let produce: KbenchResult;
  let trafficResult: KbenchResult;
  try {
    // The consumer is reading through the proxy before the first record arrives.
    await sleep(1000);
    log(`(a) producing ${cfg.records} records (${cfg.valueSize} B values, ${cfg.keys} random keys) straight to the upstream`);
    produce = await kbench(
      'produce',
      upstream,
      topic,
      ['--count', String(cfg.records), '--keys', String(cfg.keys), '--key-order', 'random', '--value-size', String(cfg.valueSize)],
      600_000,
    );
    await waitSampled(sampler.samples, cfg.records + 1, proxy, 600_000); // kbench's warm-up record too
  } finally {
    await sampler.stop();
    trafficResult = await traffic.finish();
  }
  return {
    config: cfg,
    produce: produce!,
    traffic: trafficResult,
    ...ingestFigures(sampler.samples, cfg.records + 1, proxy.proc.pid),
    indexBytes: indexBytes(proxy.dataDir, topic),
  };
}
