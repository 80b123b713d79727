/**
 * Budget (b) of the compaction benchmark: reading a compacted topic from offset 0 to its end.
 * The same records (uniformly random updates of a key space, in batches of about N records) go
 * to three topics: one made compacted through the proxy, one left raw (not compacted), both on
 * the upstream without compaction, and one compacted by Apache Kafka 4.4's own cleaner. Once
 * both compacted topics are fully cleaned (active segment rolled, cleaned up to the roll), a
 * franz-go reader (kbench consume --to-end) reads each, round after round:
 *
 *   view         the compacted topic through the proxy (kcompact's compacted Fetch view)
 *   kafka        Kafka's compacted topic, directly
 *   raw-proxy    the raw topic through the proxy
 *   raw-direct   the raw topic on the upstream directly (context only)
 *
 * and, for the fixed cost of a reader (connect, metadata, ListOffsets, fetches that return at
 * once), a topic of one record, through the proxy and directly (context only).
 *
 * The topics have one partition, or as many as the scale bench's sample asks (kgo hashes keys,
 * so the same keys land in the same partitions of each); each partition is rolled.
 *
 * Budget: view at least 10x faster than raw-proxy, and within 2x of kafka.
 */
import type { RunningKafka } from '../test/support/index.js';
import type { RunningProxyProcess } from './proxy-process.js';
import { appendRecord, appendToEachPartition, createTopics, waitKafkaCleaned } from './bench-topics.js';
import { cleanUpToAll, indexBytes, waitIndexedAll } from './engine-client.js';
import { kbench, type KbenchResult } from './kbench.js';
import { median } from './text-table.js';
import { scrape } from '../test/support/prometheus.js';

export interface ReadConfig {
  records: number;
  keys: number;
  valueSize: number;
  batchRecords: number;
  rounds: number;
  segmentMs: number;
  /** Partitions of each topic (default 1); the same keys land in the same partitions of each. */
  partitions?: number;
}

export type ReadTarget = 'view' | 'kafka' | 'raw-proxy' | 'raw-direct' | 'one-proxy' | 'one-direct';
export const READ_TARGETS: readonly ReadTarget[] = ['view', 'kafka', 'raw-proxy', 'raw-direct', 'one-proxy', 'one-direct'];

export interface ReadRun extends KbenchResult {
  round: number;
  target: ReadTarget;
}

export interface ReadResult {
  config: ReadConfig;
  /** What each topic was written with (one kbench produce each). */
  produced: { target: 'kcompact' | 'raw' | 'kafka'; result: KbenchResult }[];
  /** Per partition, the offset of the record that rolled it. */
  rollOffset: { kcompact: number[]; kafka: number[] };
  /** Seconds from the roll until the index held it, and until each side had cleaned up to it. */
  fromRoll: { kcompactIndexed: number; kcompactCleaned: number; kafkaCleaned: number };
  /** Seconds of each clean-now call it took, as the engine reports them. */
  cleanCalls: number[];
  /** Bytes of the compacted topic's index before and after the clean. */
  indexBytes: { indexed: number; cleaned: number };
  runs: ReadRun[];
  /** Reads the fetch view answered from its cache over all rounds, and the bytes it held at the end. */
  viewCache: { reads: number; bytes: number };
  /** Median seconds per target. */
  seconds: Record<ReadTarget, number>;
}

const TOPICS = { compacted: 'table-compacted', raw: 'table-raw', kafka: 'table-compacted', one: 'one-record' } as const;
/** The topics this phase creates on the upstream (not on the Kafka reference). */
export const READ_TOPICS = [TOPICS.compacted, TOPICS.raw, TOPICS.one];
const KEY_BYTES = 12; // kbench's "key-%08d"

function zigzagVarintBytes(n: number): number {
  let v = n * 2;
  let bytes = 1;
  while (v >= 128) {
    v = Math.floor(v / 128);
    bytes++;
  }
  return bytes;
}

/**
 * kgo's --batch-bytes for batches of `n` records: it cuts a batch when the next record's exact
 * wire size would pass it. A record (format v2) is its length, attributes, timestamp delta
 * (0 within a fast batch), offset delta, key and value with their lengths and a header count.
 */
export function batchBytesFor(n: number, valueSize: number): number {
  const BATCH_HEADER = 61;
  let bytes = BATCH_HEADER;
  for (let i = 0; i < n; i++) {
    const body = 1 + 1 + zigzagVarintBytes(i) + zigzagVarintBytes(KEY_BYTES) + KEY_BYTES + zigzagVarintBytes(valueSize) + valueSize + 1;
    bytes += zigzagVarintBytes(body) + body;
  }
  // Less than one more record: room for kgo's own accounting, never for record n+1.
  return bytes + Math.floor(valueSize / 2);
}

export async function measureReads(
  upstream: string,
  proxy: RunningProxyProcess,
  kafka: RunningKafka,
  cfg: ReadConfig,
  log: (s: string) => void,
): Promise<ReadResult> {
  const partitions = cfg.partitions ?? 1;
  const compactConfigs = { 'cleanup.policy': 'compact', 'segment.ms': String(cfg.segmentMs), 'min.cleanable.dirty.ratio': '0.01' };
  await createTopics(proxy.bootstrap, [
    { topic: TOPICS.compacted, partitions, configs: compactConfigs },
    { topic: TOPICS.raw, partitions },
    { topic: TOPICS.one, partitions: 1 },
  ]);
  await appendRecord(upstream, TOPICS.one, 'one');
  await createTopics(kafka.bootstrap, [{ topic: TOPICS.kafka, partitions, configs: compactConfigs }]);

  // One seed: every topic gets the same keys in the same order.
  const produceFlags = [
    '--count',
    String(cfg.records),
    '--keys',
    String(cfg.keys),
    '--key-order',
    'random',
    '--seed',
    '42',
    '--value-size',
    String(cfg.valueSize),
    '--batch-bytes',
    String(batchBytesFor(cfg.batchRecords, cfg.valueSize)),
    '--linger',
    '100ms',
  ];
  const produced: ReadResult['produced'] = [];
  for (const [target, bootstrap, topic] of [
    ['kcompact', upstream, TOPICS.compacted],
    ['raw', upstream, TOPICS.raw],
    ['kafka', kafka.bootstrap, TOPICS.kafka],
  ] as const) {
    log(`(b) producing ${cfg.records} records over ${cfg.keys} keys to ${target} (${topic})`);
    produced.push({ target, result: await kbench('produce', bootstrap, topic, produceFlags, 600_000) });
  }

  // Past segment.ms, one more record rolls the active segment on both: everything before it
  // becomes cleanable, and it survives as the latest of its key.
  await new Promise((resolve) => setTimeout(resolve, cfg.segmentMs + 500));
  const rolled = performance.now();
  const since = () => (performance.now() - rolled) / 1000;
  const rollOffset = {
    kcompact: await appendToEachPartition(upstream, TOPICS.compacted, partitions, 'roll'),
    kafka: await appendToEachPartition(kafka.bootstrap, TOPICS.kafka, partitions, 'roll'),
  };
  log(`(b) rolled at ${rollOffset.kcompact.join(',')} (kcompact) and ${rollOffset.kafka.join(',')} (Kafka); waiting for the index and both cleaners`);
  const kafkaCleaned = Promise.all(rollOffset.kafka.map((o, p) => waitKafkaCleaned(`${kafka.dir}/data`, TOPICS.kafka, o, 300_000, p))).then(since);
  await waitIndexedAll(
    proxy.admin,
    TOPICS.compacted,
    rollOffset.kcompact.map((o) => o + 1),
    300_000,
    proxy.crashed,
  );
  const kcompactIndexed = since();
  const indexedBytes = indexBytes(proxy.dataDir, TOPICS.compacted);
  const cleanCalls = await cleanUpToAll(proxy.admin, TOPICS.compacted, rollOffset.kcompact, 300_000);
  const fromRoll = { kcompactIndexed, kcompactCleaned: since(), kafkaCleaned: await kafkaCleaned };
  const cleanedBytes = indexBytes(proxy.dataDir, TOPICS.compacted);

  const where: Record<ReadTarget, [string, string]> = {
    view: [proxy.bootstrap, TOPICS.compacted],
    kafka: [kafka.bootstrap, TOPICS.kafka],
    'raw-proxy': [proxy.bootstrap, TOPICS.raw],
    'raw-direct': [upstream, TOPICS.raw],
    'one-proxy': [proxy.bootstrap, TOPICS.one],
    'one-direct': [upstream, TOPICS.one],
  };
  const runs: ReadRun[] = [];
  const cacheReads = async () => (await scrape(proxy.management)).value('kcompact_view_cache_reads_total') ?? 0;
  const cacheReadsBefore = await cacheReads();
  for (let round = 1; round <= cfg.rounds; round++) {
    for (const target of READ_TARGETS) {
      const [bootstrap, topic] = where[target];
      const r = await kbench('consume', bootstrap, topic, ['--to-end'], 600_000);
      const why = proxy.crashed();
      if (why) throw new Error(why);
      runs.push({ ...r, round, target });
      log(`(b) round ${round} ${target}: ${r.records} records in ${r.seconds.toFixed(3)} s, ${r.requests.fetch} fetches, ${r.batches} batches`);
    }
  }
  const metrics = await scrape(proxy.management);
  const viewCache = {
    reads: (metrics.value('kcompact_view_cache_reads_total') ?? 0) - cacheReadsBefore,
    bytes: metrics.value('kcompact_view_cache_bytes') ?? 0,
  };
  const seconds = Object.fromEntries(READ_TARGETS.map((t) => [t, median(runs.filter((r) => r.target === t).map((r) => r.seconds))])) as Record<
    ReadTarget,
    number
  >;
  return {
    config: cfg,
    produced,
    rollOffset,
    fromRoll,
    cleanCalls,
    indexBytes: { indexed: indexedBytes, cleaned: cleanedBytes },
    runs,
    viewCache,
    seconds,
  };
}
