/**
 * The carrying benchmark's results and their printed report (carrying.ts): one table of the
 * figures of issue 18, each with its baseline from the same run, the ratio, the budget and goal
 * and a verdict, then per workload what lies behind them.
 */
import type { KafkaClean } from './kafka-logs.js';
import type { KbenchResult } from './kbench.js';
import type { SqliteBaseline } from './sqlite-baseline.js';
import type { ShapeConfig, WorkloadResult } from './carry-workload.js';
import { BUDGET, int, mib, verdict } from './compaction-report.js';
import { median, table } from './text-table.js';

export const CARRY_BUDGET = {
  /** Store bytes behind kcompact over Kafka's cleaned topic. */
  storeBytes: { budget: 2, goal: 1.2 },
  /** Offsets a new replica reads over the live keys plus the dirty tail. */
  replicaRecords: { budget: 2 },
  /** A cold read from offset 0 through kcompact over reading Kafka's compacted topic. */
  coldRead: { budget: 2, goal: 1.2 },
  /** Issue 19: from a new replica's start (indexing on demand) to the end of its first read from offset 0, over reading Kafka's compacted topic. */
  firstAnswer: { budget: 2 },
  /** Issue 37: a new replica indexed, from its listening, over one read of Kafka's compacted topic. */
  indexed: { budget: 5 },
  /** Issue 37: records a new replica's worker indexes per CPU second, at least. */
  indexRate: 300_000,
} as const;

export interface ColdRead {
  round: number;
  /** A fresh proxy process's first answer: a read of the one-record topic. */
  first: KbenchResult;
  cold: KbenchResult;
  /** The proxy process's CPU (every thread) during the cold read. */
  coldCpuSeconds: number;
  /** The same proxy reading again (its view cache warm), then the one-record topic; absent when profiling. */
  warm?: KbenchResult;
  /** The proxy process's CPU during the warm read: the cold read's less this is mostly code running for the first time. */
  warmCpuSeconds?: number;
  oneProxy?: KbenchResult;
  kafka: KbenchResult;
  /** The one-record topic on Kafka. */
  oneDirect: KbenchResult;
  /** Kafka's topic, then the one-record topic, through a splice(2) relay (absent without krelay). */
  relay?: KbenchResult;
  oneRelay?: KbenchResult;
}

export interface ShapeResult {
  workload: WorkloadResult;
  /** What a compacted read returns, as Kafka's compacted topic gave it. */
  expected: { keys: number; records: number };
  store: {
    logStart: number;
    end: number;
    /** DescribeLogDirs' size of the partition once settled. */
    bytes: number;
    /** Of which: whole batches below the log start that the store's first segment still holds. */
    bytesBelowLogStart: number;
    /** The carrier's survivors below its cleaned end (kcompact inspect). */
    survivors: number;
    cleanedUpTo: number;
    lastPassCopies: number;
  };
  kafka: { bytes: number; cleans: KafkaClean[] };
  replica: {
    /** Seconds from spawning the process until its listener opened, and until the topic was indexed. */
    listeningSeconds: number;
    indexedSeconds: number;
    /** CPU seconds of its compaction worker from listening until indexed, and the records of every topic of the run it indexed meanwhile. */
    workerCpuSeconds: number;
    recordsAllTopics?: number;
    /** SQLite's own rows and key entries per CPU second at as many keys, measured after it (sqlite-baseline.ts). */
    sqlite?: SqliteBaseline;
    /** Its peak resident set size (VmHWM) once indexed, bytes. */
    peakRss: number;
    nextOffset: number;
    /** Records it read from the store's log start to be indexed, each copy counting as the originals it holds, and of which carried. */
    recordsRead: number;
    carriedRead: number;
    read: KbenchResult;
  };
  /** A new replica indexing on demand: seconds from spawning it until it listened, and until the end of its first read from offset 0; the Kafka read beside it. */
  firstAnswer: {
    listeningSeconds: number;
    fromStartSeconds: number;
    read: KbenchResult;
    kafka: KbenchResult;
    /** A node process that does nothing, from spawning to its exit: the floor under any replica's start. */
    bareNodeSeconds: number;
    /** The read over the Kafka read beside it, every round (the figures above are the median round's). */
    everyRound?: number[];
  };
  reads: ColdRead[];
}

export interface CarryBenchResult {
  config: { shapes: ShapeConfig[]; readRounds: number; storeSegmentBytes: number; cpus: number; tmp: string; indexDir: string };
  shapes: ShapeResult[];
  /** The carrier's counters after the workloads, and its compaction worker thread's CPU over its life. */
  carrier: { metrics: { passes: number; records: number; bytes: number; failures: number }; cpu: { workerSeconds: number } };
  violations: string[];
  seconds: number;
}

const sum = <T>(xs: readonly T[], f: (x: T) => number) => xs.reduce((n, x) => n + f(x), 0);
/** Seconds from the new replica's listening until it had indexed the topic. */
const indexedAfterListening = (r: ShapeResult) => r.replica.indexedSeconds - r.replica.listeningSeconds;
const ratio = (x: number) => `${x.toFixed(2)}x`;
const secs = (x: number) => `${x.toFixed(3)} s`;

function judged(value: number, limits: { budget: number; goal?: number }): string[] {
  const v = verdict(value <= limits.budget);
  const goal = limits.goal === undefined ? '' : value <= limits.goal ? ' (goal met)' : ' (over goal)';
  return [`<= ${limits.budget}x`, limits.goal === undefined ? '' : `<= ${limits.goal}x`, v + goal];
}

/** The derived figures of one workload. */
export function shapeFigures(r: ShapeResult) {
  const w = r.workload;
  const passes = w.cleanPoints.flatMap((c) => c.passes);
  const produced = { kcompact: sum(w.produced.kcompact, (p) => p.bytes), kafka: sum(w.produced.kafka, (p) => p.bytes) };
  const carried = {
    records: sum(passes, (p) => p.copies),
    bytes: sum(passes, (p) => p.bytesWritten),
    bytesRead: sum(passes, (p) => p.bytesRead),
    workerCpu: sum(passes, (p) => p.workerCpuSeconds),
    processCpu: sum(passes, (p) => p.processCpuSeconds),
    wall: sum(passes, (p) => p.durationMs) / 1000,
    copyWall: sum(passes, (p) => p.copyMs) / 1000,
    readBackWall: sum(passes, (p) => p.readBackMs) / 1000,
  };
  const kafkaCleaner = {
    cleans: r.kafka.cleans.length,
    written: sum(r.kafka.cleans, (c) => c.bytesWritten),
    read: sum(r.kafka.cleans, (c) => c.bytesRead),
    recordsWritten: sum(r.kafka.cleans, (c) => c.recordsWritten),
    seconds: sum(r.kafka.cleans, (c) => c.seconds),
  };
  const live = w.distinctKeys + 2; // the roll and end keys too
  // Originals at or past the store's log start: what it holds besides the last pass (its copies and two markers).
  const tail = r.replica.recordsRead - r.replica.carriedRead - 2;
  const med = (pick: (x: ColdRead) => number | undefined) => {
    const xs = r.reads.map(pick).filter((x): x is number => x !== undefined);
    return xs.length ? median(xs) : NaN;
  };
  const reads = {
    cold: med((x) => x.cold.seconds),
    coldCpu: med((x) => x.coldCpuSeconds),
    warmCpu: med((x) => x.warmCpuSeconds),
    warm: med((x) => x.warm?.seconds),
    kafka: med((x) => x.kafka.seconds),
    oneProxy: med((x) => x.oneProxy?.seconds),
    first: med((x) => x.first.seconds),
    oneDirect: med((x) => x.oneDirect.seconds),
    relay: med((x) => x.relay?.seconds),
    oneRelay: med((x) => x.oneRelay?.seconds),
  };
  return {
    passes,
    produced,
    carried,
    kafkaCleaner,
    live,
    tail,
    reads,
    ampKcompact: carried.bytes / produced.kcompact,
    ampKafka: kafkaCleaner.written / produced.kafka,
  };
}

export function carryReport(b: CarryBenchResult): string[] {
  const rows: string[][] = [['figure', 'kcompact', 'baseline', 'ratio', 'budget', 'goal', 'verdict']];
  const details: string[] = [];
  // One replica indexes every topic of the run: against reading each of Kafka's topics once.
  const everyTopic =
    b.shapes.length > 1
      ? {
          seconds: Math.max(...b.shapes.map(indexedAfterListening)),
          kafka: sum(b.shapes, (r) => shapeFigures(r).reads.kafka),
        }
      : undefined;
  for (const r of b.shapes) {
    const c = r.workload.config;
    const f = shapeFigures(r);
    const tag = `${c.batchRecords}-record batches`;
    const indexRate = (r.replica.recordsAllTopics ?? r.replica.recordsRead) / r.replica.workerCpuSeconds;
    rows.push(
      [
        `1. store bytes after the workload (${tag})`,
        mib(r.store.bytes),
        `${mib(r.kafka.bytes)} Kafka cleaned`,
        ratio(r.store.bytes / r.kafka.bytes),
        ...judged(r.store.bytes / r.kafka.bytes, CARRY_BUDGET.storeBytes),
      ],
      [
        `2. records a new replica reads to be indexed (${tag})`,
        int(r.replica.recordsRead),
        `${int(f.live + f.tail)} live + tail`,
        ratio(r.replica.recordsRead / (f.live + f.tail)),
        ...judged(r.replica.recordsRead / (f.live + f.tail), CARRY_BUDGET.replicaRecords),
      ],
      [
        `2. time until a new replica is indexed, once listening (${tag})`,
        secs(indexedAfterListening(r)),
        `${secs(f.reads.kafka)} Kafka read`,
        ratio(indexedAfterListening(r) / f.reads.kafka),
        // With several topics the replica indexes them all at once: each one's time counts the others' work too.
        ...(everyTopic ? ['', '', 'reported'] : judged(indexedAfterListening(r) / f.reads.kafka, CARRY_BUDGET.indexed)),
      ],
      ...(everyTopic
        ? [
            [
              `2. time until a new replica has indexed every topic, once listening`,
              secs(everyTopic.seconds),
              `${secs(everyTopic.kafka)} Kafka reads of each`,
              ratio(everyTopic.seconds / everyTopic.kafka),
              ...judged(everyTopic.seconds / everyTopic.kafka, CARRY_BUDGET.indexed),
            ],
          ]
        : []),
      [
        `2. records it indexes per worker CPU second (every topic)`,
        int(indexRate),
        `${secs(r.replica.workerCpuSeconds)} of CPU`,
        '',
        `>= ${int(CARRY_BUDGET.indexRate)}`,
        '',
        verdict(indexRate >= CARRY_BUDGET.indexRate),
      ],
      ...(r.replica.sqlite
        ? [
            [
              `2.   against SQLite alone, rows and key entries of as many keys (same run)`,
              int(indexRate),
              `${int(r.replica.sqlite.perCpuSecond)} SQLite alone`,
              ratio(indexRate / r.replica.sqlite.perCpuSecond),
              'reported',
              '',
              '',
            ],
          ]
        : []),
      [
        `2. a new replica's peak RSS until indexed (every topic)`,
        mib(r.replica.peakRss),
        '',
        '',
        `< ${mib(BUDGET.rssBytes)}`,
        '',
        verdict(r.replica.peakRss < BUDGET.rssBytes),
      ],
      [
        `2. new replica's start to its first read's end (${tag})`,
        secs(r.firstAnswer.fromStartSeconds),
        `${secs(r.firstAnswer.kafka.seconds)} Kafka read`,
        ratio(r.firstAnswer.fromStartSeconds / r.firstAnswer.kafka.seconds),
        ...judged(r.firstAnswer.fromStartSeconds / r.firstAnswer.kafka.seconds, CARRY_BUDGET.firstAnswer),
      ],
      [
        `2.   of it, the first read once listening (${tag})`,
        secs(r.firstAnswer.read.seconds),
        `${secs(r.firstAnswer.kafka.seconds)} Kafka read`,
        ratio(r.firstAnswer.read.seconds / r.firstAnswer.kafka.seconds),
        'reported',
        '',
        '',
      ],
      [
        `2.   a bare node process start and exit (context)`,
        secs(r.firstAnswer.bareNodeSeconds),
        `${secs(r.firstAnswer.kafka.seconds)} Kafka read`,
        ratio(r.firstAnswer.bareNodeSeconds / r.firstAnswer.kafka.seconds),
        'reported',
        '',
        '',
      ],
      [
        `3. cold read from offset 0 (${tag})`,
        secs(f.reads.cold),
        `${secs(f.reads.kafka)} Kafka read`,
        ratio(f.reads.cold / f.reads.kafka),
        ...judged(f.reads.cold / f.reads.kafka, CARRY_BUDGET.coldRead),
      ],
      ...(Number.isNaN(f.reads.relay)
        ? []
        : [
            [
              `3.   Kafka's read through a splice relay, a hop that does nothing (context)`,
              secs(f.reads.relay),
              `${secs(f.reads.kafka)} Kafka read`,
              ratio(f.reads.relay / f.reads.kafka),
              'reported',
              '',
              '',
            ],
          ]),
      [`4. records carried per worker CPU second (${tag})`, int(f.carried.records / f.carried.workerCpu), '', '', 'reported', '', ''],
      [`4. bytes carried per worker CPU second (${tag})`, `${mib(f.carried.bytes / f.carried.workerCpu)}/s`, '', '', 'reported', '', ''],
      [
        `4. write amplification: bytes written per byte produced (${tag})`,
        f.ampKcompact.toFixed(3),
        `${f.ampKafka.toFixed(3)} Kafka's cleaner`,
        ratio(f.ampKcompact / f.ampKafka),
        'reported',
        '',
        '',
      ],
    );

    const first = r.workload.produced.kcompact[0]!;
    const producedRecords = sum(r.workload.produced.kcompact, (p) => p.records);
    details.push(
      '',
      `${c.name} workload: ${int(producedRecords)} records over ${int(c.keys)} keys (${int(r.workload.distinctKeys)} written; ${(producedRecords / c.keys).toFixed(0)} per key on average), ${c.valueSize} B random values, ${c.batchRecords} records per batch, idempotent, uncompressed; ${c.cleans} clean points`,
      `  produced: ${mib(f.produced.kcompact)} of batches through kcompact (${(producedRecords / sum(r.workload.produced.kcompact, (p) => p.seconds)).toFixed(0)} records/s, the first chunk ${first.seconds.toFixed(1)} s), ${mib(f.produced.kafka)} to Kafka`,
      `  clean points (roll to cleaned and carried / cleaned): ${r.workload.cleanPoints.map((p) => `${p.kcompactSeconds.toFixed(1)}/${p.kafkaSeconds.toFixed(1)} s`).join(', ')}`,
      `  store behind kcompact: ${mib(r.store.bytes)} (DescribeLogDirs), log start ${int(r.store.logStart)}, end ${int(r.store.end)}; of which ${mib(r.store.bytesBelowLogStart)} below the log start, kept by the store in its first segment (it deletes whole ${mib(b.config.storeSegmentBytes)} segments only), and ${mib(r.store.bytes - r.store.bytesBelowLogStart)} from it: the last pass's ${int(r.store.lastPassCopies)} copies and the tail`,
      `    from the log start alone: ${ratio((r.store.bytes - r.store.bytesBelowLogStart) / r.kafka.bytes)} Kafka's cleaned topic`,
      `  Kafka's cleaned topic: ${mib(r.kafka.bytes)}; its cleaner logged ${f.kafkaCleaner.cleans} clean(s) of it: read ${mib(f.kafkaCleaner.read)}, wrote ${mib(f.kafkaCleaner.written)} (${int(f.kafkaCleaner.recordsWritten)} records) in ${f.kafkaCleaner.seconds.toFixed(1)} s`,
      `  carry passes: ${f.passes.length}, ${int(f.carried.records)} copies, ${mib(f.carried.bytes)} written, ${mib(f.carried.bytesRead)} read from the store; ${f.carried.wall.toFixed(2)} s of passes (copying ${f.carried.copyWall.toFixed(2)} s, waiting for the index to read them back ${f.carried.readBackWall.toFixed(2)} s)`,
      `    CPU while they ran: worker thread ${f.carried.workerCpu.toFixed(2)} s, whole proxy ${f.carried.processCpu.toFixed(2)} s (${int(f.carried.records / f.carried.processCpu)} records per process CPU second; /proc ticks of 10 ms, sampled every 10 ms)`,
      `    write amplification counts copy batches only (not the two markers a pass writes), Kafka's the bytes its cleaner wrote (MB to one decimal, per clean)`,
      `  replica with an empty data directory: listening ${r.replica.listeningSeconds.toFixed(2)} s after spawning, ${c.topic} indexed after ${r.replica.indexedSeconds.toFixed(2)} s, ${indexedAfterListening(r).toFixed(2)} s after it listened (${int(r.replica.recordsRead)} records from the store's log start, ${int(r.replica.carriedRead)} of them in copies; live keys ${int(f.live)}, dirty tail ${int(f.tail)}); it then served ${int(r.replica.read.records)} records in ${secs(r.replica.read.seconds)}`,
      `  a replica indexing on demand, empty data directory: listening ${r.firstAnswer.listeningSeconds.toFixed(2)} s after spawning; its first read from offset 0 ended ${r.firstAnswer.fromStartSeconds.toFixed(2)} s after spawning (the read itself ${secs(r.firstAnswer.read.seconds)}, ${int(r.firstAnswer.read.records)} records, ${int(r.firstAnswer.read.requests.fetch)} fetches${firstFetch(r.firstAnswer.read)}); Kafka's compacted topic read in ${secs(r.firstAnswer.kafka.seconds)} beside it${firstFetch(r.firstAnswer.kafka)}${everyRound(r.firstAnswer.everyRound)}`,
      `  reads from offset 0 (franz-go, --to-end; median of ${r.reads.length}): cold ${secs(f.reads.cold)}, warm ${Number.isNaN(f.reads.warm) ? 'n/a' : secs(f.reads.warm)} (the same proxy again), Kafka ${secs(f.reads.kafka)}; ${int(r.reads[0]?.cold.records ?? 0)} records, ${int(r.reads[0]?.cold.requests.fetch ?? 0)} fetches and ${int(r.reads[0]?.cold.batches ?? 0)} batches through kcompact, ${int(r.reads[0]?.kafka.requests.fetch ?? 0)} fetches and ${int(r.reads[0]?.kafka.batches ?? 0)} batches from Kafka`,
      `    every round: cold ${r.reads.map((x) => x.cold.seconds.toFixed(3)).join(' ')}; Kafka ${r.reads.map((x) => x.kafka.seconds.toFixed(3)).join(' ')}`,
      `    the proxy's CPU during a cold read (median; every round: ${r.reads.map((x) => (x.coldCpuSeconds * 1000).toFixed(1)).join(' ')} ms): ${(f.reads.coldCpu * 1000).toFixed(1)} ms, ${((f.reads.coldCpu * 1e6) / Math.max(1, r.reads[0]?.cold.requests.fetch ?? 1)).toFixed(0)} µs per fetch${Number.isNaN(f.reads.warmCpu) ? '' : `; during the warm read ${(f.reads.warmCpu * 1000).toFixed(1)} ms`}`,
      `    a reader's fixed cost (the one-record topic; context): ${Number.isNaN(f.reads.oneProxy) ? 'n/a' : secs(f.reads.oneProxy)} through kcompact (after the reads; ${secs(f.reads.first)} as a fresh process's first answer), ${secs(f.reads.oneDirect)} from Kafka;` +
        ` net of it, cold / Kafka ${ratio((f.reads.cold - f.reads.oneProxy) / (f.reads.kafka - f.reads.oneDirect))}, warm / Kafka ${ratio((f.reads.warm - f.reads.oneProxy) / (f.reads.kafka - f.reads.oneDirect))}`,
      ...(Number.isNaN(f.reads.relay)
        ? []
        : [
            `    through a splice relay (Go, splice(2), nothing parsed) in front of Kafka: ${secs(f.reads.relay)}, the one-record topic ${secs(f.reads.oneRelay)}; net of it, relay / Kafka ${ratio((f.reads.relay - f.reads.oneRelay) / (f.reads.kafka - f.reads.oneDirect))}, kcompact's cold read / the relay's ${ratio((f.reads.cold - f.reads.oneProxy) / (f.reads.relay - f.reads.oneRelay))}`,
          ]),
    );
  }
  const m = b.carrier.metrics;
  return [
    '',
    'kcompact carrying benchmark (issue 18): a carrying kcompact (its own node process, alone in its carrier group) in front of Apache Kafka 4.4 with its cleaner off,',
    "against Apache Kafka 4.4 with its cleaner on (the test bed's reference settings, Kafka's default 128 MiB dedupe buffer), given the same records.",
    `Logs on ${b.config.tmp}, the proxies' indexes under ${b.config.indexDir}; a shared ${b.config.cpus}-core machine: both brokers, the proxy and the clients compete for CPU.`,
    '',
    table(rows),
    ...details,
    '',
    `the carrier's counters: ${int(m.passes)} passes, ${int(m.records)} records and ${mib(m.bytes)} carried, ${int(m.failures)} failures; its worker thread used ${b.carrier.cpu.workerSeconds.toFixed(1)} CPU s in all (indexing, cleaning, carrying)`,
    b.violations.length
      ? `BROKEN INVARIANTS:\n${b.violations.map((v) => `  ${v}`).join('\n')}`
      : 'invariants held: every read saw one record per live key, every pass was let go',
    `total ${b.seconds.toFixed(0)} s`,
  ];
}

/** When a read's first Fetch went out: before it, its metadata and ListOffsets (through a new replica, EARLIEST waits for the store's last pass to be located). */
function firstFetch(read: KbenchResult): string {
  return read.firstFetchMs === undefined ? '' : `, the first after ${read.firstFetchMs.toFixed(1)} ms`;
}

function everyRound(ratios: number[] | undefined): string {
  return ratios && ratios.length > 1 ? `; the median of ${ratios.length} rounds, every round ${ratios.map(ratio).join(' ')}` : '';
}
