/**
 * The load phase of the scale benchmark. Compacted topics totalling many partitions are created
 * through the proxy and filled straight on the upstream with distinct keys, each written
 * --writes-per-key times (cycling through the topic's key range, so the last pass holds every
 * key's latest value), while a consumer reads another topic through the proxy. Then every
 * partition gets one roll record and is cleaned up to it.
 *
 * It reports what budget (a) asks at this scale (records indexed per CPU second of the worker
 * thread while traffic flows), how long indexing everything took, and the proxy's memory once
 * everything is indexed and once it is cleaned. The topics are made with
 * min.cleanable.dirty.ratio=1 (the periodic cleaner never picks them, so the clean measured is
 * the on-demand one alone) and default segment.ms (no roll while loading); segment.ms=1000 then
 * lets the roll records start new segments; the soak's configs come last.
 */
import { alterTopicConfigs, appendToEachPartition, createTopics } from './bench-topics.js';
import { ingestFigures, sampleIngest, waitSampled, type IngestFigures } from './compaction-ingest.js';
import { rssOf, withPeakRss } from './compaction-memory.js';
import { cleanUpToAll, engineStatus, indexFiles, inspectTopic, waitIndexedAll, type IndexFiles } from './engine-client.js';
import { heapBreakdown, type HeapBreakdown } from './heap-report.js';
import { kbench, startKbench, type KbenchResult } from './kbench.js';
import type { Memory } from './proc-stats.js';
import type { RunningProxyProcess } from './proxy-process.js';
import { median } from './text-table.js';

export interface ScaleTopic {
  name: string;
  partitions: number;
  /** Distinct keys key-<keyBase> .. key-<keyBase + keys - 1>. */
  keys: number;
  keyBase: number;
}

export interface LoadConfig {
  topics: ScaleTopic[];
  writesPerKey: number;
  valueSize: number;
  /** Records of 1 KiB in the topic the background consumer reads through the proxy. */
  trafficRecords: number;
  /** The topics' configs for the soak (cleanup.policy=compact besides), set once they are cleaned. */
  soakConfigs: Record<string, string>;
}

/** The proxy's memory at one moment: /proc, the JS heaps and Buffers of both threads, the index files. */
export interface MemoryAt {
  memory: Memory;
  heap: HeapBreakdown;
  files: IndexFiles;
}

export interface LoadResult {
  config: LoadConfig;
  produce: KbenchResult[];
  traffic: KbenchResult;
  /** Records written, kbench's warm-up records included. */
  records: number;
  ingest: IngestFigures;
  /** From the first record produced until the last was acknowledged, and until every partition was indexed. */
  produceSeconds: number;
  indexSeconds: number;
  indexedPeakRss: number;
  indexed: MemoryAt;
  /** GET /status with every partition indexed (median of five). */
  statusMs: number;
  /** Per topic, per partition, the offset of its roll record. */
  rollOffsets: Record<string, number[]>;
  rollAttempts: number;
  /** Wall time of the clean-now calls that cleaned every partition up to its roll, and the engine's clean time summed over partitions. */
  cleanSeconds: number;
  cleanEngineSeconds: number;
  cleanedPeakRss: number;
  cleaned: MemoryAt;
}

export const TRAFFIC_TOPIC = 'scale-traffic';
/** GET /status walks every partition: once a second is enough and costs the worker little. */
const SAMPLE_MS = 1000;
const PHASE_DEADLINE_MS = 3_600_000;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export async function memoryAt(proxy: RunningProxyProcess, reportDir: string): Promise<MemoryAt> {
  return { memory: rssOf(proxy), heap: await heapBreakdown(proxy.proc.pid, reportDir), files: indexFiles(proxy.dataDir) };
}

async function statusMs(proxy: RunningProxyProcess): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    await engineStatus(proxy.admin);
    times.push(performance.now() - t0);
  }
  return median(times);
}

/**
 * Rolls every partition of the topics: one record each, once segment.ms=1000 is in force. The
 * worker learns the new segment.ms a moment after the AlterConfigs answer, so a partition whose
 * roll record was indexed before that gets another one.
 */
async function rollAll(
  upstream: string,
  proxy: RunningProxyProcess,
  topics: ScaleTopic[],
  log: (s: string) => void,
): Promise<{ offsets: Record<string, number[]>; attempts: number }> {
  const offsets: Record<string, number[]> = {};
  let pending = topics;
  let attempts = 0;
  while (pending.length > 0) {
    if (++attempts > 5) throw new Error(`load: partitions of ${pending.map((t) => t.name).join(', ')} did not roll after 5 roll records each`);
    await sleep(1100);
    for (const t of pending) offsets[t.name] = await appendToEachPartition(upstream, t.name, t.partitions, 'roll');
    const still: ScaleTopic[] = [];
    for (const t of pending) {
      const rolls = offsets[t.name]!;
      await waitIndexedAll(
        proxy.admin,
        t.name,
        rolls.map((o) => o + 1),
        300_000,
        proxy.crashed,
      );
      const parts = await inspectTopic(proxy.admin, t.name);
      if (!rolls.every((o, p) => (parts.find((x) => x.partition === p)?.firstUncleanable ?? -1) >= o)) still.push(t);
    }
    if (still.length > 0) log(`load: ${still.length} topic(s) had partitions that did not roll yet; rolling them again`);
    pending = still;
  }
  return { offsets, attempts };
}

export async function load(upstream: string, proxy: RunningProxyProcess, reportDir: string, cfg: LoadConfig, log: (s: string) => void): Promise<LoadResult> {
  const names = cfg.topics.map((t) => t.name);
  const loadConfigs = { 'cleanup.policy': 'compact', 'min.cleanable.dirty.ratio': '1' };
  const partitions = cfg.topics.reduce((n, t) => n + t.partitions, 0);
  log(`load: creating ${names.length} compacted topics of ${partitions} partitions through the proxy`);
  await createTopics(proxy.bootstrap, [
    ...cfg.topics.map((t) => ({ topic: t.name, partitions: t.partitions, configs: loadConfigs })),
    { topic: TRAFFIC_TOPIC, partitions: 2 },
  ]);
  log(`load: filling ${TRAFFIC_TOPIC} with ${cfg.trafficRecords} records of 1 KiB for the background consumer`);
  await kbench('produce', upstream, TRAFFIC_TOPIC, ['--count', String(cfg.trafficRecords), '--value-size', '1024']);

  const traffic = startKbench('consume', proxy.bootstrap, TRAFFIC_TOPIC, ['--duration', '600m', '--timeout', '601m']);
  const sampler = sampleIngest(proxy, names, SAMPLE_MS);
  const produce: KbenchResult[] = [];
  let records = 0;
  let trafficResult: KbenchResult;
  let produceSeconds = 0;
  let indexSeconds = 0;
  let indexedPeakRss: number;
  try {
    // The consumer is reading through the proxy before the first record arrives.
    await sleep(1000);
    [, indexedPeakRss] = await withPeakRss(proxy, async () => {
      const started = performance.now();
      for (const t of cfg.topics) {
        const count = t.keys * cfg.writesPerKey;
        log(
          `load: producing ${count} records over keys ${t.keyBase}..${t.keyBase + t.keys - 1} to ${t.name} (${t.partitions} partitions) straight to the upstream`,
        );
        produce.push(
          await kbench(
            'produce',
            upstream,
            t.name,
            ['--count', String(count), '--keys', String(t.keys), '--key-base', String(t.keyBase), '--value-size', String(cfg.valueSize), '--timeout', '60m'],
            PHASE_DEADLINE_MS,
          ),
        );
        records += count + 1; // kbench's warm-up record
      }
      produceSeconds = (performance.now() - started) / 1000;
      log(`load: ${records} records produced in ${produceSeconds.toFixed(1)} s; waiting for the index`);
      await waitSampled(sampler.samples, records, proxy, PHASE_DEADLINE_MS);
      indexSeconds = (performance.now() - started) / 1000;
    });
  } finally {
    await sampler.stop();
    trafficResult = await traffic.finish();
  }
  const ingest = ingestFigures(sampler.samples, records, proxy.proc.pid);
  const indexed = await memoryAt(proxy, reportDir);
  const status = await statusMs(proxy);
  log(`load: indexed in ${indexSeconds.toFixed(1)} s; RSS ${(indexed.memory.rss / 2 ** 20).toFixed(0)} MiB; GET /status ${status.toFixed(0)} ms`);

  await alterTopicConfigs(proxy.bootstrap, names, { ...loadConfigs, 'segment.ms': '1000' });
  const roll = await rollAll(upstream, proxy, cfg.topics, log);
  log('load: every partition rolled; cleaning');
  let cleanEngineSeconds = 0;
  const t0 = performance.now();
  const [, cleanedPeakRss] = await withPeakRss(proxy, async () => {
    for (const t of cfg.topics) {
      const calls = await cleanUpToAll(proxy.admin, t.name, roll.offsets[t.name]!, PHASE_DEADLINE_MS);
      cleanEngineSeconds += calls.reduce((n, s) => n + s, 0);
    }
  });
  const cleanSeconds = (performance.now() - t0) / 1000;
  const cleaned = await memoryAt(proxy, reportDir);
  log(`load: cleaned in ${cleanSeconds.toFixed(1)} s; RSS ${(cleaned.memory.rss / 2 ** 20).toFixed(0)} MiB`);
  await alterTopicConfigs(proxy.bootstrap, names, { 'cleanup.policy': 'compact', ...cfg.soakConfigs });

  return {
    config: cfg,
    produce,
    traffic: trafficResult,
    records,
    ingest,
    produceSeconds,
    indexSeconds,
    indexedPeakRss: indexedPeakRss!,
    indexed,
    statusMs: status,
    rollOffsets: roll.offsets,
    rollAttempts: roll.attempts,
    cleanSeconds,
    cleanEngineSeconds,
    cleanedPeakRss,
    cleaned,
  };
}
