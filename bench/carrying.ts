/**
 * `make bench-carry`: the figures of issue 18 (physical compaction: carrying survivors forward)
 * and issue 19's bounded start, each against a baseline measured in the same run. A carrying
 * kcompact (its own process, from the CLI, alone in its carrier group) in front of Apache Kafka
 * 4.4 with its cleaner off is compared with Kafka 4.4 with its cleaner on, given the same workload (carry-workload.ts: keys rewritten many times,
 * in chunks, both sides cleaning after each chunk):
 *
 *   1. store bytes: the partition's size (DescribeLogDirs) on the store behind kcompact against
 *      Kafka's cleaned topic, once every pass has let its range go and both sizes have settled;
 *   2. a replica with an empty data directory (a second kcompact, not carrying): records it reads
 *      from the store until fully indexed (a copy counting as the originals it holds), against
 *      the live keys plus the dirty tail, and the time until then against one consumer reading
 *      Kafka's compacted topic from offset 0, the records its worker indexes per CPU second and its
 *      peak RSS until indexed (issue 37); and a replica with an empty data directory that indexes
 *      on demand (the default): the time from its spawning to the end of its first read from
 *      offset 0, against one consumer reading Kafka's compacted topic (the median of a few such
 *      replicas; issue 19: with
 *      --keys 10000 --rewrites 100, a partition of 1M records over 10k keys);
 *   3. a cold read from offset 0 (a proxy process started afresh on the carrier's data directory,
 *      so an empty view cache, after its first answer) of the carried topic against reading
 *      Kafka's compacted topic, for large produced batches and for 4-record ones;
 *   4. carry passes: records and bytes carried per CPU second of the proxy's compaction worker
 *      thread, and write amplification (bytes carried per byte produced) against what Kafka's
 *      cleaner wrote for the same workload (from its own statistics, logged at INFO).
 *
 * Timings are reported, never asserted: the exit status is non-zero only on a crash or a broken
 * invariant (a reader seeing other than one record per live key, a pass not letting its range
 * go, the two producers writing different keys). Kafka's logs live under $KCOMPACT_BENCH_TMPDIR
 * (default /dev/shm when it exists), the proxies' data directories under --index-dir.
 *
 *   node dist/bench/carrying.js [--keys 100000] [--rewrites 50] [--batch 500] [--small-keys 100000]
 *     [--small-rewrites 2] [--small-batch 4] [--cleans 5] [--read-rounds 5] [--first-rounds 3] [--cpu-prof DIR]
 *     [--json FILE]   (--help lists every flag)
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { scrape } from '../test/support/prometheus.js';
import { missingPeers, startKafka, type RunningKafka } from '../test/support/index.js';
import { printHelpAndExit } from './bench-help.js';
import { benchDirs } from './bench-dirs.js';
import { numberFlags } from './number-flag.js';
import { engineStatus, inspectTopic, partitionsOf } from './engine-client.js';
import { appendToEachPartition, createTopics } from './bench-topics.js';
import { kbench, kbenchMissing, type KbenchResult } from './kbench.js';
import { bytesBelowLogStart, CLEANER_LOGGER, kafkaCleans, logRange, partitionDir, setBrokerLogLevel, settledSize } from './kafka-logs.js';
import { startProxyProcess, type ProxyProcessOptions, type RunningProxyProcess } from './proxy-process.js';
import { krelayMissing, relayListeners, startRelay, type Relay } from './relays.js';
import { runWorkload, workerThread, type ShapeConfig } from './carry-workload.js';
import { carryReport, type CarryBenchResult, type ColdRead, type ShapeResult } from './carry-report.js';
import { profileReport } from './cpu-profile.js';
import { storeRecords } from './store-records.js';
import { memory, threadCpuSeconds } from './proc-stats.js';
import { sqliteBaseline } from './sqlite-baseline.js';

const MIB = 1024 * 1024;

const OPTIONS = {
  keys: { type: 'string', default: '100000' },
  rewrites: { type: 'string', default: '50' },
  batch: { type: 'string', default: '500' },
  'small-keys': { type: 'string', default: '100000' },
  'small-rewrites': { type: 'string', default: '2' },
  'small-batch': { type: 'string', default: '4' },
  'value-size': { type: 'string', default: '100' },
  cleans: { type: 'string', default: '5' },
  'read-rounds': { type: 'string', default: '5' },
  'first-rounds': { type: 'string', default: '3' },
  'segment-ms': { type: 'string', default: '1000' },
  'store-segment-bytes': { type: 'string', default: String(4 * MIB) },
  'index-dir': { type: 'string' },
  'cpu-prof': { type: 'string' },
  'node-flags': { type: 'string', default: '' },
  json: { type: 'string' },
  help: { type: 'boolean', default: false },
} as const;

const HELP: Record<keyof typeof OPTIONS, string> = {
  keys: 'keys of the main workload (large batches), drawn uniformly at random',
  rewrites: 'records per key of the main workload, on average (records = keys x rewrites)',
  batch: 'records per produced batch of the main workload',
  'small-keys':
    "keys of the second workload (small batches, for reads: its default makes a cleaned topic about the size of the first one's, so the two reads differ in batch size alone); 0 leaves it out",
  'small-rewrites': 'records per key of the second workload, on average',
  'small-batch': 'records per produced batch of the second workload',
  'value-size': 'value bytes (random: no codec squeezes them)',
  cleans: 'clean points per workload, evenly spread: kcompact cleans and carries, Kafka rolls and cleans, after each',
  'read-rounds': 'rounds of cold reads (a fresh proxy process each) and Kafka reads; medians are reported',
  'first-rounds': "rounds of a new replica's first read (an empty data directory each) and the Kafka read beside it; the median round is reported",
  'segment-ms': "segment.ms of kcompact's topics (its virtual segments)",
  'store-segment-bytes': "log.segment.bytes of the store behind kcompact (it deletes whole segments only; Kafka's default is 1 GiB)",
  'index-dir': "parent of the proxies' data directories (default: the system temp dir)",
  'cpu-prof': 'write CPU profiles of the replica and the cold-reading proxies here and report them (the warm reads are then left out)',
  'node-flags': "more node flags for every kcompact process of the run, beside src/cli/node-flags.ts's (space-separated)",
  json: 'also write every figure to this file',
  help: 'print the flags',
};

const { values: args } = parseArgs({ options: OPTIONS });
if (args.help) printHelpAndExit('node dist/bench/carrying.js [flags]', OPTIONS, HELP);
const number = numberFlags(args);

const valueSize = number('value-size');
const cleans = number('cleans');
const segmentMs = number('segment-ms');
/** A workload from its three flags (keys, rewrites per key, records per batch). */
function shape(name: string, flags: { keys: 'keys' | 'small-keys'; rewrites: 'rewrites' | 'small-rewrites'; batch: 'batch' | 'small-batch' }): ShapeConfig {
  const keys = number(flags.keys);
  const rewrites = number(flags.rewrites);
  return {
    name,
    topic: `carried-${name}`,
    keys,
    records: keys * rewrites,
    batchRecords: number(flags.batch),
    valueSize,
    cleans: Math.min(cleans, rewrites),
    segmentMs,
  };
}
const shapes = [shape('large', { keys: 'keys', rewrites: 'rewrites', batch: 'batch' })];
if (number('small-keys', { min: 0 }) > 0) shapes.push(shape('small', { keys: 'small-keys', rewrites: 'small-rewrites', batch: 'small-batch' }));
const readRounds = number('read-rounds');
const firstRounds = number('first-rounds');
const storeSegmentBytes = number('store-segment-bytes', { min: MIB });
const nodeArgs = args['node-flags'].split(/\s+/).filter((f) => f !== '');
/** Every kcompact process of the run, with --node-flags. */
const startKcompact = (upstream: string, opts: Omit<ProxyProcessOptions, 'nodeArgs'>) => startProxyProcess(upstream, 1, { nodeArgs, ...opts });

const log = (s: string) => process.stderr.write(`bench: ${s}\n`);
const violations: string[] = [];

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * What a compacted read must return: every key of the workload, the roll key and the end key;
 * and as many records as Kafka's compacted topic gives (a roll record below the last clean
 * survives beside the one past it, on both sides).
 */
interface Expected {
  keys: number;
  records: number;
}

/** A read with kbench (franz-go, offset 0 to the end), checked against what a compacted read must return. */
async function read(bootstrap: string, topic: string, want: Expected | { keys: number }, who: string): Promise<KbenchResult> {
  const r = await kbench('consume', bootstrap, topic, ['--to-end', '--count-keys'], 600_000);
  const records = 'records' in want ? want.records : r.records;
  if (r.records !== records || r.distinctKeys !== want.keys) {
    violations.push(`${who} read ${r.records} records (${r.distinctKeys} keys) of ${topic}, not ${records} (${want.keys} keys)`);
  }
  return r;
}

/** Waits until the proxy's index holds every topic up to its end; resolves with seconds since `from` per topic. */
async function indexedAt(proxy: RunningProxyProcess, ends: Map<string, number>, from: number, deadlineMs: number): Promise<Map<string, number>> {
  const at = new Map<string, number>();
  const deadline = Date.now() + deadlineMs;
  while (at.size < ends.size) {
    const why = proxy.crashed();
    if (why) throw new Error(why);
    if (Date.now() > deadline) throw new Error(`the replica did not index ${[...ends.keys()].join(', ')} within ${deadlineMs / 1000} s`);
    const status = await engineStatus(proxy.admin);
    for (const [topic, end] of ends) {
      if (!at.has(topic) && partitionsOf(status, topic).some((p) => p.partition === 0 && p.nextOffset >= end)) at.set(topic, (performance.now() - from) / 1000);
    }
    await sleep(20);
  }
  return at;
}

interface Stores {
  store: RunningKafka;
  reference: RunningKafka;
  /** A splice(2) relay in front of the reference: a hop that does nothing (absent without krelay). */
  relay?: Relay;
  indexDir: string;
  carrierArgs: string[];
  profDir: (name: string) => string | undefined;
}

/** A compacted topic of one record on each side: what a reader costs besides the records (context). */
const ONE_TOPIC = 'carry-one';

/** After the workloads: what each side holds, as the carrier and both brokers tell it (1), and the reads' expectations. */
async function measureStores(s: Stores, carrier: RunningProxyProcess, results: ShapeResult[]): Promise<void> {
  for (const r of results) {
    const topic = r.workload.config.topic;
    const keys = r.workload.distinctKeys + 2;
    // Kafka's compacted topic sets how many records every other read must return.
    const check = await read(s.reference.bootstrap, topic, { keys }, "a read of Kafka's compacted topic");
    r.expected = { keys, records: check.records };
    const [detail] = await inspectTopic(carrier.admin, topic);
    const range = await logRange(s.store.bootstrap, topic);
    log(`(${r.workload.config.name}) waiting for both sizes to settle`);
    const storeBytes = await settledSize(s.store.bootstrap, topic, 120_000);
    const kafkaBytes = await settledSize(s.reference.bootstrap, topic, 120_000);
    const lastPass = r.workload.cleanPoints.at(-1)!.passes.at(-1)!;
    r.store = {
      logStart: range.start,
      end: range.end,
      bytes: storeBytes,
      bytesBelowLogStart: bytesBelowLogStart(partitionDir(`${s.store.dir}/data`, topic), range.start),
      survivors: detail?.survivors ?? -1,
      cleanedUpTo: detail?.cleanedUpTo ?? -1,
      lastPassCopies: lastPass.copies,
    };
    r.kafka = { bytes: kafkaBytes, cleans: kafkaCleans(path.join(s.reference.dir, 'stderr.log'), topic) };
    for (const cp of r.workload.cleanPoints)
      for (const p of cp.passes) if (!p.released) violations.push(`${topic}: pass ${p.pass} was not let go by the store`);
    if (range.start < lastPass.releaseEnd) violations.push(`${topic}: the store starts at ${range.start}, before the last release end ${lastPass.releaseEnd}`);
  }
}

/** What a replica reads of the store from its log start to `to`: records, a copy counting as the originals it holds. */
async function recordsHeld(store: string, topic: string, from: number, to: number): Promise<{ recordsRead: number; carriedRead: number }> {
  const held = await storeRecords(store, topic, from, to);
  return { recordsRead: held.records, carriedRead: held.carried };
}

/** (2) A second kcompact, not carrying, with an empty data directory: how much it reads and how long it takes to index the carried topics. */
async function measureReplica(s: Stores, results: ShapeResult[]): Promise<void> {
  log('(replica) a second kcompact with an empty data directory, in front of the carried store');
  const ends = new Map(results.map((r) => [r.workload.config.topic, r.store.end]));
  const spawned = performance.now();
  const replica = await startKcompact(s.store.bootstrap, {
    parentDir: s.indexDir,
    cpuProfDir: s.profDir('replica'),
    args: ['--cleaner-backoff-ms', '3600000', '--carrier-group', 'none'],
  });
  try {
    const listening = (performance.now() - spawned) / 1000;
    const cpuAtListening = threadCpuSeconds(replica.proc.pid);
    const indexed = await indexedAt(replica, ends, spawned, 600_000);
    const worker = workerThread(replica.proc.pid);
    // What its compaction worker spent indexing, from the moment it listened (its start before that is module loading).
    const workerCpuSeconds = (threadCpuSeconds(replica.proc.pid).get(worker) ?? 0) - (cpuAtListening.get(worker) ?? 0);
    // The most it held while indexing (VmHWM), read before any client reads through it.
    const peakRss = memory(replica.proc.pid)?.peakRss ?? NaN;
    const status = await engineStatus(replica.admin);
    for (const r of results) {
      const topic = r.workload.config.topic;
      const [p] = partitionsOf(status, topic);
      r.replica = {
        listeningSeconds: listening,
        indexedSeconds: indexed.get(topic)!,
        workerCpuSeconds,
        peakRss,
        nextOffset: p!.nextOffset,
        ...(await recordsHeld(s.store.bootstrap, topic, r.store.logStart, p!.nextOffset)),
        read: await read(replica.bootstrap, topic, r.expected, 'the replica'),
      };
      log(`(replica) ${topic}: indexed ${r.replica.recordsRead} records in ${r.replica.indexedSeconds.toFixed(2)} s`);
    }
    // Its worker indexed every topic at once: its CPU goes with all their records.
    const together = results.reduce((n, r) => n + r.replica!.recordsRead, 0);
    for (const r of results) r.replica!.recordsAllTopics = together;
  } finally {
    await replica.stop();
  }
  // SQLite alone at as many keys, with no other process busy: the floor of the worker's CPU per record.
  const sqlite = sqliteBaseline(s.indexDir, results[0]!.replica!.recordsAllTopics!);
  log(`(replica) SQLite alone: rows and key entries of ${sqlite.records} keys in ${sqlite.cpuSeconds.toFixed(3)} CPU s`);
  for (const r of results) r.replica!.sqlite = sqlite;
}

/**
 * (2b) Issue 19's bounded start: a replica with an empty data directory that indexes on demand
 * (the product's default), from its spawning to the end of its first read of each topic from
 * offset 0, beside a read of Kafka's compacted topic.
 */
async function measureFirstAnswer(s: Stores, results: ShapeResult[]): Promise<void> {
  const bareNodeSeconds = bareNodeStart();
  for (const r of results) {
    const topic = r.workload.config.topic;
    const rounds: NonNullable<ShapeResult['firstAnswer']>[] = [];
    for (let round = 1; round <= firstRounds; round++) {
      log(`(first answer) round ${round}: a new replica indexing on demand reads ${topic} from offset 0`);
      const spawned = performance.now();
      const replica = await startKcompact(s.store.bootstrap, {
        parentDir: s.indexDir,
        cpuProfDir: round === 1 ? s.profDir('first') : undefined,
        args: ['--cleaner-backoff-ms', '3600000', '--carrier-group', 'none', '--index-on-demand', 'true'],
      });
      try {
        const listeningSeconds = (performance.now() - spawned) / 1000;
        const first = await read(replica.bootstrap, topic, r.expected, 'the first read through a new replica indexing on demand');
        const fromStartSeconds = (performance.now() - spawned) / 1000;
        const kafka = await read(s.reference.bootstrap, topic, r.expected, "a read of Kafka's compacted topic");
        rounds.push({ listeningSeconds, fromStartSeconds, read: first, kafka, bareNodeSeconds });
        log(`(first answer) ${topic}: ${fromStartSeconds.toFixed(2)} s from spawning to the end of the first read; Kafka read ${kafka.seconds.toFixed(3)} s`);
      } finally {
        await replica.stop();
      }
    }
    // The round whose read is the median against the Kafka read beside it: every row of the report is of one real round.
    const byRatio = [...rounds].sort((a, b) => a.read.seconds / a.kafka.seconds - b.read.seconds / b.kafka.seconds);
    r.firstAnswer = { ...byRatio[(byRatio.length - 1) >> 1]!, everyRound: rounds.map((a) => a.read.seconds / a.kafka.seconds) };
  }
}

/** Seconds a node process that does nothing takes from spawning to its exit (median of 5): what no replica can start under. */
function bareNodeStart(): number {
  const runs = Array.from({ length: 5 }, () => {
    const started = performance.now();
    execFileSync(process.execPath, ['-e', '0']);
    return (performance.now() - started) / 1000;
  }).sort((a, b) => a - b);
  return runs[2]!;
}

/** One kbench read of the one-record topic (no check but its count). */
async function readOne(bootstrap: string, who: string): Promise<KbenchResult> {
  return read(bootstrap, ONE_TOPIC, { keys: 1, records: 1 }, who);
}

/**
 * (3) Cold reads: each round, for each workload, a fresh proxy process on the carrier's data
 * directory, once it has indexed every topic and answered a read of the one-record topic (its
 * first answer, reported apart), reads the carried topic from offset 0 (then again, warm, and the
 * one-record topic), and a reader of Kafka's compacted topic does the same.
 */
async function measureReads(s: Stores, results: ShapeResult[], profiling: boolean): Promise<void> {
  for (const r of results) r.reads = [];
  for (let round = 1; round <= readRounds; round++) {
    for (const r of results) {
      const topic = r.workload.config.topic;
      const want = r.expected;
      const proxy = await startKcompact(s.store.bootstrap, {
        parentDir: s.indexDir,
        cpuProfDir: s.profDir(`cold-${r.workload.config.name}`),
        args: [...s.carrierArgs, '--carrier-group', 'none'],
      });
      let through: Pick<ColdRead, 'first' | 'cold' | 'coldCpuSeconds' | 'warm' | 'warmCpuSeconds' | 'oneProxy'>;
      try {
        // Every topic, not only this one: a process still opening the other topic's index competes for the CPU.
        await indexedAt(proxy, new Map(results.map((x) => [x.workload.config.topic, x.store.end])), performance.now(), 300_000);
        // The process's first answer (its connections upstream, its compiled code) is a cost of its
        // start, not of the read: it goes to the one-record topic, and is reported on its own.
        const first = await readOne(proxy.bootstrap, 'the one-record topic through a fresh kcompact');
        // The process's CPU (prom-client's, from process.cpuUsage: microseconds, not /proc's ticks) spent on the cold read.
        const cpu = async () => (await scrape(proxy.management)).value('process_cpu_seconds_total') ?? NaN;
        const cpuBefore = await cpu();
        const cold = await read(proxy.bootstrap, topic, want, 'a cold read through kcompact');
        const coldCpuSeconds = (await cpu()) - cpuBefore;
        const warmCpuBefore = await cpu();
        const warm = profiling ? undefined : await read(proxy.bootstrap, topic, want, 'a warm read through kcompact');
        const warmCpuSeconds = warm ? (await cpu()) - warmCpuBefore : undefined;
        through = {
          first,
          cold,
          coldCpuSeconds,
          warm,
          ...(warmCpuSeconds !== undefined && { warmCpuSeconds }),
          oneProxy: profiling ? undefined : await readOne(proxy.bootstrap, 'the one-record topic through kcompact'),
        };
        const passes = (await scrape(proxy.management)).value('kcompact_carry_passes_total') ?? 0;
        if (passes > 0) violations.push(`the restarted carrier ran ${passes} pass(es) on its own: reads were not of a settled topic`);
      } finally {
        await proxy.stop();
      }
      const kafka = await read(s.reference.bootstrap, topic, want, "a read of Kafka's compacted topic");
      const oneDirect = await readOne(s.reference.bootstrap, 'the one-record topic on Kafka');
      const hop = s.relay && {
        relay: await read(s.relay.bootstrap, topic, want, "a read of Kafka's compacted topic through the splice relay"),
        oneRelay: await readOne(s.relay.bootstrap, 'the one-record topic through the splice relay'),
      };
      r.reads.push({ round, ...through, kafka, oneDirect, ...hop });
      const { cold, warm } = through;
      log(
        `(${r.workload.config.name}) round ${round}: cold ${cold.seconds.toFixed(3)} s${warm ? `, warm ${warm.seconds.toFixed(3)} s` : ''}, Kafka ${kafka.seconds.toFixed(3)} s (${cold.records} records)`,
      );
    }
  }
}

async function main(): Promise<void> {
  const missing: string[] = missingPeers().filter((m) => m === 'Kafka jars' || m === 'java');
  if (kbenchMissing()) missing.push('kbench');
  if (missing.length) throw new Error(`test peers missing (${missing.join(', ')}): run bash test/peers/install.sh`);
  const { indexDir, tmp, cpuProf, profDir } = benchDirs(args);
  const started = performance.now();
  const carrierDir = fs.mkdtempSync(path.join(indexDir, 'kcompact-bench-carrier-'));
  // The carrier alone in its group carries every partition; the proxies reading on its data directory later do not carry.
  const carrierArgs = ['--cleaner-backoff-ms', '3600000', '--data-dir', carrierDir];

  log(`starting the store (Kafka 4.4, cleaner off, ${storeSegmentBytes} B segments) and the reference (Kafka 4.4, cleaner on)`);
  let store: RunningKafka | undefined;
  let reference: RunningKafka | undefined;
  let carrier: RunningProxyProcess | undefined;
  let relay: Relay | undefined;
  try {
    store = await startKafka({
      compaction: 'off',
      properties: {
        'log.segment.bytes': storeSegmentBytes,
        // Segments below a moved log start go at the next retention check: within a second here, not 5 minutes.
        'log.retention.check.interval.ms': 1000,
        'log.segment.delete.delay.ms': 100,
        'log.initial.task.delay.ms': 0,
      },
    });
    // Kafka's default dedupe buffer (the reference store's 16 MiB would clean a chunk in several passes, each rewriting the log).
    // The reads of Kafka's topic through a relay show what a hop that does nothing costs them.
    const relayListener = krelayMissing() ? undefined : (await relayListeners())['splice-relay'];
    if (!relayListener) log('krelay not built (make peers): reads through a splice relay are left out');
    reference = await startKafka({
      compaction: 'reference',
      heapMiB: 768,
      properties: { 'log.cleaner.dedupe.buffer.size': 128 * MIB },
      ...(relayListener && { extraListeners: [relayListener] }),
    });
    if (relayListener) relay = await startRelay('splice-relay', relayListener);
    await setBrokerLogLevel(reference.bootstrap, 1, CLEANER_LOGGER, 'INFO');
    carrier = await startKcompact(store.bootstrap, { parentDir: indexDir, args: [...carrierArgs, '--carrier-group', 'kcompact-bench-carriers'] });
    log(`store at ${store.bootstrap}, reference at ${reference.bootstrap}, carrier at ${carrier.bootstrap} (pid ${carrier.proc.pid}, admin ${carrier.admin})`);
    const stores: Stores = { store, reference, ...(relay && { relay }), indexDir, carrierArgs, profDir };
    for (const bootstrap of [carrier.bootstrap, reference.bootstrap]) {
      await createTopics(bootstrap, [{ topic: ONE_TOPIC, partitions: 1, configs: { 'cleanup.policy': 'compact' } }]);
      await appendToEachPartition(bootstrap, ONE_TOPIC, 1, 'one');
    }

    // 1 and 4: the workloads, cleaned and carried.
    const results: ShapeResult[] = [];
    for (const shape of shapes) results.push({ workload: await runWorkload(store.bootstrap, carrier, reference, shape, log) } as ShapeResult);
    const metrics = await scrape(carrier.management);
    const carrierMetrics = {
      passes: metrics.value('kcompact_carry_passes_total') ?? 0,
      records: metrics.value('kcompact_carried_records_total') ?? 0,
      bytes: metrics.value('kcompact_carried_bytes_total') ?? 0,
      failures: metrics.value('kcompact_carry_failures_total') ?? 0,
    };
    const carrierCpu = { workerSeconds: threadCpuSeconds(carrier.proc.pid).get(workerThread(carrier.proc.pid)) ?? 0 };
    await measureStores(stores, carrier, results);
    await carrier.stop();
    carrier = undefined;

    await measureReplica(stores, results);
    await measureFirstAnswer(stores, results);
    await measureReads(stores, results, cpuProf !== undefined);

    const bench: CarryBenchResult = {
      config: { shapes, readRounds, storeSegmentBytes, cpus: os.cpus().length, tmp: tmp ?? os.tmpdir(), indexDir },
      shapes: results,
      carrier: { metrics: carrierMetrics, cpu: carrierCpu },
      violations,
      seconds: (performance.now() - started) / 1000,
    };
    const out = carryReport(bench);
    if (cpuProf) {
      for (const name of ['replica', 'first', ...results.map((r) => `cold-${r.workload.config.name}`)]) {
        out.push('', profileReport(path.join(cpuProf, name), { title: `CPU profile of the ${name} proxies (all threads)` }));
      }
    }
    process.stdout.write(out.join('\n') + '\n');
    if (args.json) fs.writeFileSync(args.json, JSON.stringify(bench, null, 2) + '\n');
  } finally {
    await carrier?.stop();
    await relay?.stop();
    await reference?.stop();
    await store?.stop();
    fs.rmSync(carrierDir, { recursive: true, force: true });
  }
  if (violations.length) {
    process.stderr.write(`bench: broken invariants:\n${violations.map((v) => `  ${v}`).join('\n')}\n`);
    process.exit(1);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
