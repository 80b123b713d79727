/**
 * `make bench-segments`: issue 33's figure, what a store holds for a compacted topic once what
 * passes let go has been freed. A carrying kcompact (its own process, from the CLI, alone in its
 * carrier group) in front of Apache Kafka 4.4 with its cleaner off and its default segments
 * (1 GiB, 7 days) is compared with Kafka 4.4 with its cleaner on, given the same rewrite workload
 * at the same time: every key rewritten once per round, a round every --round-ms, in batches of
 * --batch records compressed with --codec, to topics with cleanup.policy=compact, the same
 * segment.ms and min.cleanable.dirty.ratio, and both cleaners running on their own every
 * --cleaner-backoff-ms. The dirty ratio is low by default (as the carrying benchmark's): at
 * Kafka's 0.5 a round that rewrites every key sits right at the threshold, and whether the
 * last one is cleaned depends on where each side's (virtual) segments happened to roll. kcompact writes the workload twice, to two topics: one whose store
 * segments kcompact set (src/compaction/config/store-segments.ts), and one whose store segment
 * configs the benchmark removed at once (the store's defaults, as before issue 33).
 *
 * One record after the last round (past segment.ms, so both sides roll their active segment),
 * then each side's partition size (DescribeLogDirs) is read once it has not changed for a while:
 * the store's two topics against Kafka's, and the ratios. Both stores check their log start and
 * retention every --retention-check-ms (Kafka's default is 5 minutes, which only delays when the
 * bytes go).
 *
 *   node dist/bench/store-segments.js [--keys 20000] [--rounds 25] [--codec lz4] [--segment-ms 2000] [--json FILE]
 *   (--help lists every flag)
 */
import fs from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { ApiKey } from '../src/protocol/messages.js';
import { Compression, type CompressionCodec } from '../src/protocol/records/compression.js';
import { askOnce } from '../test/support/raw-client.js';
import { scrape } from '../test/support/prometheus.js';
import { missingPeers, startKafka, type RunningKafka } from '../test/support/index.js';
import { printHelpAndExit } from './bench-help.js';
import { benchDirs } from './bench-dirs.js';
import { createTopics } from './bench-topics.js';
import { bytesBelowLogStart, logRange, partitionDir, segmentBases, settledSize } from './kafka-logs.js';
import { inspectTopic } from './engine-client.js';
import { numberFlags } from './number-flag.js';
import { startProxyProcess, type RunningProxyProcess } from './proxy-process.js';
import { RewriteProducer } from './rewrite-producer.js';
import { table } from './text-table.js';

const MIB = 1024 * 1024;

const OPTIONS = {
  keys: { type: 'string', default: '20000' },
  rounds: { type: 'string', default: '25' },
  'round-ms': { type: 'string', default: '1000' },
  batch: { type: 'string', default: '500' },
  'value-size': { type: 'string', default: '100' },
  values: { type: 'string', default: 'text' },
  codec: { type: 'string', default: 'lz4' },
  'segment-ms': { type: 'string', default: '2000' },
  'dirty-ratio': { type: 'string', default: '0.01' },
  'cleaner-backoff-ms': { type: 'string', default: '1000' },
  'retention-check-ms': { type: 'string', default: '1000' },
  'quiet-ms': { type: 'string', default: '10000' },
  'index-dir': { type: 'string' },
  json: { type: 'string' },
  help: { type: 'boolean', default: false },
} as const;

const HELP: Record<keyof typeof OPTIONS, string> = {
  keys: 'keys, each rewritten once per round',
  rounds: 'rounds of the workload',
  'round-ms': 'a round starts this long after the one before (or as soon as it is written, when that takes longer)',
  batch: 'records per produced batch',
  'value-size': 'value bytes',
  values: 'text (JSON-like, which a codec squeezes) or random (which no codec does)',
  codec: 'codec of the produced batches: none, gzip, snappy, lz4 or zstd',
  'segment-ms': 'segment.ms of the topics on both sides',
  'dirty-ratio':
    "min.cleanable.dirty.ratio of the topics on both sides (low: each cleaner cleans whatever it can every round, so the figure is what the store holds, not where each cleaner's threshold fell)",
  'cleaner-backoff-ms': "pause between cleaner rounds on both sides (kcompact's --cleaner-backoff-ms, Kafka's log.cleaner.backoff.ms)",
  'retention-check-ms': "log.retention.check.interval.ms of both brokers: how soon segments below a moved log start go (Kafka's default is 300000)",
  'quiet-ms': 'a partition has settled once its size has not changed for this long',
  'index-dir': "parent of the proxy's data directory (default: the system temp dir)",
  json: 'also write every figure to this file',
  help: 'print the flags',
};

const CODECS: Record<string, CompressionCodec> = {
  none: Compression.None,
  gzip: Compression.Gzip,
  snappy: Compression.Snappy,
  lz4: Compression.Lz4,
  zstd: Compression.Zstd,
};

const { values: args } = parseArgs({ options: OPTIONS });
if (args.help) printHelpAndExit('node dist/bench/store-segments.js [flags]', OPTIONS, HELP);
const number = numberFlags(args);
const keys = number('keys');
const rounds = number('rounds');
const roundMs = number('round-ms', { min: 0 });
const batch = number('batch');
const valueSize = number('value-size', { min: 4 });
const segmentMs = number('segment-ms');
const dirtyRatio = number('dirty-ratio', { integer: false, min: 0 });
const backoffMs = number('cleaner-backoff-ms', { min: 10 });
const retentionCheckMs = number('retention-check-ms');
const quietMs = number('quiet-ms');
const codec = CODECS[args.codec];
if (codec === undefined) throw new Error(`--codec must be one of ${Object.keys(CODECS).join(', ')}, got ${args.codec}`);
if (args.values !== 'text' && args.values !== 'random') throw new Error(`--values must be text or random, got ${args.values}`);
const valueKind: 'text' | 'random' = args.values;

const log = (s: string) => process.stderr.write(`bench: ${s}\n`);

const TOPIC = 'segments';
/** kcompact's second topic: its store segment configs removed as soon as kcompact set them (the store's defaults). */
const DEFAULTS_TOPIC = 'segments-store-defaults';

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

/** The topic's segment configs as a broker describes them: value, and whether it is a topic override. */
async function segmentConfigs(bootstrap: string, topic: string): Promise<Record<string, string>> {
  const body = (await askOnce(bootstrap, ApiKey.DescribeConfigs, 4, {
    resources: [{ resourceType: 2, resourceName: topic, configurationKeys: ['segment.ms', 'segment.bytes'] }],
    includeSynonyms: false,
    includeDocumentation: false,
  })) as { results: { errorCode: number; configs: { name: string; value: string; configSource: number }[] }[] };
  const r = body.results[0]!;
  if (r.errorCode) throw new Error(`DescribeConfigs ${topic} at ${bootstrap}: error ${r.errorCode}`);
  return Object.fromEntries(r.configs.map((c) => [c.name, `${c.value}${c.configSource === 1 ? ' (topic)' : ' (default)'}`]));
}

/** Removes the topic's segment overrides on the broker itself: the store's own defaults. */
async function dropSegmentConfigs(bootstrap: string, topic: string): Promise<void> {
  const body = (await askOnce(bootstrap, ApiKey.IncrementalAlterConfigs, 1, {
    resources: [
      {
        resourceType: 2,
        resourceName: topic,
        configs: ['segment.ms', 'segment.bytes'].map((name) => ({ name, configOperation: 1, value: null })),
      },
    ],
    validateOnly: false,
  })) as { responses: { errorCode: number; errorMessage: string | null }[] };
  const r = body.responses[0]!;
  if (r.errorCode) throw new Error(`IncrementalAlterConfigs ${topic}: error ${r.errorCode} ${r.errorMessage ?? ''}`);
}

interface Held {
  bytes: number;
  /** Base offsets of the partition's segments. */
  segments: number[];
  logStart: number;
  end: number;
  /** Bytes of whole batches below the log start that the broker still holds (it deletes whole segments only). */
  belowLogStart: number;
}

async function held(kafka: RunningKafka, topic: string): Promise<Held> {
  const bytes = await settledSize(kafka.bootstrap, topic, 600_000, quietMs);
  const range = await logRange(kafka.bootstrap, topic);
  const dir = partitionDir(`${kafka.dir}/data`, topic);
  return { bytes, segments: segmentBases(dir), logStart: range.start, end: range.end, belowLogStart: bytesBelowLogStart(dir, range.start) };
}

/** Where kcompact's cleaner stands on the topic (GET /inspect). */
async function cleaned(carrier: RunningProxyProcess, topic: string): Promise<Record<string, number>> {
  const [p] = await inspectTopic(carrier.admin, topic);
  if (!p) return {};
  return {
    cleanedUpTo: p.cleanedUpTo,
    firstUncleanable: p.firstUncleanable,
    cleanBytes: p.cleanBytes,
    cleanableBytes: p.cleanableBytes,
    survivors: p.survivors,
  };
}

interface Result {
  config: Record<string, unknown>;
  produced: { records: number; bytes: number; seconds: number };
  kafka: Held;
  kcompact: Held & { storeConfigs: Record<string, string>; clientConfigs: Record<string, string>; cleaner: Record<string, number> };
  storeDefaults: Held & { storeConfigs: Record<string, string>; cleaner: Record<string, number> };
  carrier: { passes: number; failures: number };
  seconds: number;
}

async function main(): Promise<void> {
  const missing: string[] = missingPeers().filter((m) => m === 'Kafka jars' || m === 'java');
  if (missing.length) throw new Error(`test peers missing (${missing.join(', ')}): run bash test/peers/install.sh`);
  const { indexDir, tmp } = benchDirs(args);
  const started = performance.now();
  const checks = { 'log.retention.check.interval.ms': retentionCheckMs, 'log.segment.delete.delay.ms': 100, 'log.initial.task.delay.ms': 0 };
  let store: RunningKafka | undefined;
  let reference: RunningKafka | undefined;
  let carrier: RunningProxyProcess | undefined;
  const producers: RewriteProducer[] = [];
  try {
    log('starting the store (Kafka 4.4, cleaner off, default segments) and the reference (Kafka 4.4, cleaner on)');
    store = await startKafka({ compaction: 'off', properties: checks });
    reference = await startKafka({
      compaction: 'reference',
      heapMiB: 768,
      properties: { ...checks, 'log.cleaner.backoff.ms': backoffMs, 'log.cleaner.dedupe.buffer.size': 128 * MIB },
    });
    carrier = await startProxyProcess(store.bootstrap, 1, {
      parentDir: indexDir,
      args: ['--cleaner-backoff-ms', String(backoffMs), '--carrier-group', 'kcompact-bench-segments'],
    });
    const configs = { 'cleanup.policy': 'compact', 'segment.ms': String(segmentMs), 'min.cleanable.dirty.ratio': String(dirtyRatio) };
    await createTopics(carrier.bootstrap, [
      { topic: TOPIC, partitions: 1, configs },
      { topic: DEFAULTS_TOPIC, partitions: 1, configs },
    ]);
    await createTopics(reference.bootstrap, [{ topic: TOPIC, partitions: 1, configs }]);
    await dropSegmentConfigs(store.bootstrap, DEFAULTS_TOPIC);
    const storeConfigs = await segmentConfigs(store.bootstrap, TOPIC);
    log(
      `the store's segments of ${TOPIC}: ${JSON.stringify(storeConfigs)}; of ${DEFAULTS_TOPIC}: ${JSON.stringify(await segmentConfigs(store.bootstrap, DEFAULTS_TOPIC))}`,
    );

    const spec = { keys, valueSize, batchRecords: batch, seed: 33, codec };
    const [kept, defaults, kafka] = await Promise.all([
      RewriteProducer.open(carrier.bootstrap, TOPIC, spec),
      RewriteProducer.open(carrier.bootstrap, DEFAULTS_TOPIC, spec),
      RewriteProducer.open(reference.bootstrap, TOPIC, spec),
    ]);
    producers.push(kept, defaults, kafka);
    const produced = { records: 0, bytes: 0, seconds: 0 };
    const writing = performance.now();
    for (let round = 0; round < rounds; round++) {
      const at = performance.now();
      const [k] = await Promise.all([kept.produceRound(round, valueKind), defaults.produceRound(round, valueKind), kafka.produceRound(round, valueKind)]);
      produced.records += k.records;
      produced.bytes += k.bytes;
      if ((round + 1) % 5 === 0) log(`round ${round + 1}/${rounds} written (${k.records} records, ${k.bytes} B, ${k.seconds.toFixed(2)} s)`);
      await sleep(roundMs - (performance.now() - at));
    }
    produced.seconds = (performance.now() - writing) / 1000;
    // Past segment.ms, one more record on each side rolls its active segment, so the last round can be cleaned.
    await sleep(segmentMs + 500);
    await Promise.all([kept.append('end'), defaults.append('end'), kafka.append('end')]);
    log(`written in ${produced.seconds.toFixed(1)} s; waiting for each side to settle (no change for ${quietMs} ms)`);
    const [kcompactHeld, defaultsHeld, kafkaHeld] = await Promise.all([held(store, TOPIC), held(store, DEFAULTS_TOPIC), held(reference, TOPIC)]);
    const metrics = await scrape(carrier.management);
    const result: Result = {
      config: {
        keys,
        rounds,
        roundMs,
        batch,
        valueSize,
        values: valueKind,
        codec: args.codec,
        segmentMs,
        dirtyRatio,
        backoffMs,
        retentionCheckMs,
        quietMs,
        cpus: os.cpus().length,
        tmp,
      },
      produced,
      kafka: kafkaHeld,
      kcompact: { ...kcompactHeld, storeConfigs, clientConfigs: await segmentConfigs(carrier.bootstrap, TOPIC), cleaner: await cleaned(carrier, TOPIC) },
      storeDefaults: { ...defaultsHeld, storeConfigs: await segmentConfigs(store.bootstrap, DEFAULTS_TOPIC), cleaner: await cleaned(carrier, DEFAULTS_TOPIC) },
      carrier: { passes: metrics.value('kcompact_carry_passes_total') ?? 0, failures: metrics.value('kcompact_carry_failures_total') ?? 0 },
      seconds: (performance.now() - started) / 1000,
    };
    process.stdout.write(report(result) + '\n');
    if (args.json) fs.writeFileSync(args.json, JSON.stringify(result, null, 2) + '\n');
  } finally {
    for (const p of producers) p.close();
    await carrier?.stop();
    await reference?.stop();
    await store?.stop();
  }
}

function report(r: Result): string {
  const mb = (b: number) => `${(b / 1e6).toFixed(2)} MB`;
  const ratio = (b: number) => `${(b / r.kafka.bytes).toFixed(2)}x`;
  const row = (name: string, h: Held, configs: string) => [
    name,
    mb(h.bytes),
    ratio(h.bytes),
    mb(h.belowLogStart),
    String(h.segments.length),
    `${h.logStart}-${h.end}`,
    configs,
  ];
  const show = (c: Record<string, string>) => `segment.ms=${c['segment.ms']}, segment.bytes=${c['segment.bytes']}`;
  const c = r.config;
  return [
    `${c.keys} keys x ${c.rounds} rounds, a round every ${c.roundMs} ms, ${c.valueSize} B ${c.values} values, ${c.codec}, ${c.batch}-record batches; ` +
      `topics: segment.ms=${c.segmentMs}, min.cleanable.dirty.ratio=${c.dirtyRatio}; cleaners every ${c.backoffMs} ms; ` +
      `${r.produced.records} records (${mb(r.produced.bytes)} of batches) per topic in ${r.produced.seconds.toFixed(1)} s`,
    '',
    table([
      ['partition (DescribeLogDirs, once settled)', 'bytes', 'vs Kafka', 'below log start', 'segments', 'offsets', "the store topic's segment configs"],
      row("Kafka 4.4's cleaner", r.kafka, ''),
      row("kcompact's store, segments set by kcompact", r.kcompact, show(r.kcompact.storeConfigs)),
      row("kcompact's store, the store's default segments", r.storeDefaults, show(r.storeDefaults.storeConfigs)),
    ]),
    '',
    `DescribeConfigs through kcompact: ${show(r.kcompact.clientConfigs)}; carry passes ${r.carrier.passes}, failures ${r.carrier.failures}; ${r.seconds.toFixed(0)} s in all`,
  ].join('\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
