/**
 * The workload of the carrying benchmark (issue 18): the same rewrites written to two stores, in
 * chunks, each chunk followed by a clean on both:
 *
 *   kcompact  a topic made compacted through a carrying proxy in front of Kafka 4.4 with its
 *             cleaner off; the records go through the proxy; after each chunk a roll record, a
 *             clean on demand (POST /compact) and the carry pass that follows it, which appends
 *             copies of the survivors and lets the old range go (DeleteRecords);
 *   Kafka     the same records straight to Kafka 4.4 with its cleaner on (a compacted topic);
 *             after each chunk its active segment is rolled (segment.ms set to 1 ms for the roll
 *             record, a day otherwise, so that it cleans exactly when kcompact does) and its
 *             cleaner is waited for.
 *
 * Both then hold what a clean leaves, cleaned as often: what each wrote to get there is the
 * write amplification, and kcompact's carry passes are timed on the proxy's threads (CPU time of
 * the compaction worker while each pass ran, from /proc, sampled every 10 ms).
 */
import type { CarryOutcome } from '../src/engine/api/engine-reports.js';
import { type RunningKafka, pollUntil } from '../test/support/index.js';
import { createTopics, waitKafkaCleaned } from './bench-topics.js';
import { compactNow, engineStatus, partitionsOf, waitIndexedAll } from './engine-client.js';
import { logRange, partitionDir, segmentBases, setTopicConfigs } from './kafka-logs.js';
import { threadCpuSeconds } from './proc-stats.js';
import type { RunningProxyProcess } from './proxy-process.js';
import { RewriteProducer, type Produced, type RewriteSpec } from './rewrite-producer.js';

export interface ShapeConfig {
  name: string;
  topic: string;
  keys: number;
  /** Records written: keys x rewrites (each key rewritten that often on average). */
  records: number;
  batchRecords: number;
  valueSize: number;
  /** Clean points, evenly spread over the records. */
  cleans: number;
  segmentMs: number;
}

/** A carry pass with the CPU its clean-now call spent while it ran. */
export interface TimedPass extends CarryOutcome {
  /** CPU seconds of the compaction worker thread, and of the whole proxy process, over the pass. */
  workerCpuSeconds: number;
  processCpuSeconds: number;
}

export interface CleanPoint {
  /** The roll record of each side (its offset is where the clean ended). */
  kcompactRoll: number;
  kafkaRoll: number;
  /** Roll records Kafka needed until one rolled its segment (the config change takes a moment). */
  kafkaRollAttempts: number;
  /** Seconds from the roll until kcompact had cleaned and carried, and until Kafka had cleaned. */
  kcompactSeconds: number;
  kafkaSeconds: number;
  passes: TimedPass[];
}

export interface WorkloadResult {
  config: ShapeConfig;
  produced: { kcompact: Produced[]; kafka: Produced[] };
  /** Distinct keys of the workload written (the roll key aside). */
  distinctKeys: number;
  cleanPoints: CleanPoint[];
}

interface CpuSample {
  at: number;
  threads: Map<number, number>;
}

const DAY_MS = '86400000';
const SAMPLE_MS = 10;

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}

/** Samples the process's per-thread CPU every 10 ms until stopped. */
function sampleCpu(pid: number): { samples: CpuSample[]; stop(): Promise<void> } {
  const samples: CpuSample[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      samples.push({ at: performance.now(), threads: threadCpuSeconds(pid) });
      await sleep(SAMPLE_MS);
    }
    samples.push({ at: performance.now(), threads: threadCpuSeconds(pid) });
  })();
  return {
    samples,
    async stop() {
      running = false;
      await loop;
    },
  };
}

/** CPU seconds of the threads `pick` selects, at time `at`, linearly between the samples around it. */
function cpuAt(samples: readonly CpuSample[], at: number, pick: (tid: number) => boolean): number {
  const sum = (s: CpuSample) => [...s.threads].reduce((n, [tid, cpu]) => (pick(tid) ? n + cpu : n), 0);
  const after = samples.findIndex((s) => s.at >= at);
  if (after < 0) return sum(samples.at(-1)!);
  if (after === 0) return sum(samples[0]!);
  const a = samples[after - 1]!;
  const b = samples[after]!;
  return sum(a) + ((sum(b) - sum(a)) * (at - a.at)) / Math.max(1e-9, b.at - a.at);
}

/**
 * The compaction worker: the busiest thread of the proxy besides the main one (the pid) over its
 * life so far. Indexing the workload made it so.
 */
export function workerThread(pid: number): number {
  let best = -1;
  let most = -1;
  for (const [tid, cpu] of threadCpuSeconds(pid)) {
    if (tid !== pid && cpu > most) {
      best = tid;
      most = cpu;
    }
  }
  return best;
}

/** Rolls kcompact's virtual segment, cleans on demand until a pass has carried past the roll. */
async function kcompactCleanPoint(proxy: RunningProxyProcess, producer: RewriteProducer, topic: string, segmentMs: number, chunkEnd: number) {
  // Past segment.ms since the virtual active segment began, one more record rolls it.
  await sleep(segmentMs + 500 - (performance.now() - chunkEnd));
  const roll = await producer.append('roll');
  const rolled = performance.now();
  await waitIndexedAll(proxy.admin, topic, [roll + 1], 300_000, proxy.crashed);
  const cpu = sampleCpu(proxy.proc.pid);
  const calls: { end: number; passes: CarryOutcome[] }[] = [];
  try {
    await pollUntil(
      `${topic}-0 cleaned up to ${roll} and carried`,
      300_000,
      async () => {
        const report = await compactNow(proxy.admin, topic);
        calls.push({ end: performance.now(), passes: report.carried });
        if (report.failed.length) throw new Error(`clean of ${topic}: ${JSON.stringify(report.failed)}`);
        const [p] = partitionsOf(await engineStatus(proxy.admin), topic);
        return p && p.cleanedUpTo >= roll && calls.some((c) => c.passes.length > 0) ? true : undefined;
      },
      proxy.crashed,
    );
  } finally {
    await cpu.stop();
  }
  const seconds = (performance.now() - rolled) / 1000;
  const worker = workerThread(proxy.proc.pid);
  const passes: TimedPass[] = [];
  for (const call of calls) {
    // A pass is the last thing a clean-now call does for its topic (retention aside).
    let end = call.end;
    for (const pass of [...call.passes].reverse()) {
      const begin = end - pass.durationMs;
      const during = (pick: (tid: number) => boolean) => cpuAt(cpu.samples, end, pick) - cpuAt(cpu.samples, begin, pick);
      passes.unshift({ ...pass, workerCpuSeconds: during((t) => t === worker), processCpuSeconds: during(() => true) });
      end = begin;
    }
  }
  return { roll, seconds, passes };
}

/** Rolls Kafka's active segment with a record written while segment.ms is 1 ms, and waits for its cleaner. */
async function kafkaCleanPoint(kafka: RunningKafka, producer: RewriteProducer, topic: string) {
  const dir = partitionDir(`${kafka.dir}/data`, topic);
  await setTopicConfigs(kafka.bootstrap, topic, { 'segment.ms': '1' });
  let attempts = 0;
  let roll = -1;
  const started = performance.now();
  await pollUntil(`Kafka to roll ${topic}-0`, 60_000, async () => {
    attempts++;
    roll = await producer.append('roll');
    return segmentBases(dir).includes(roll) ? true : undefined;
  });
  await setTopicConfigs(kafka.bootstrap, topic, { 'segment.ms': DAY_MS });
  await waitKafkaCleaned(`${kafka.dir}/data`, topic, roll, 300_000);
  return { roll, attempts, seconds: (performance.now() - started) / 1000 };
}

export async function runWorkload(
  store: string,
  carrier: RunningProxyProcess,
  kafka: RunningKafka,
  cfg: ShapeConfig,
  log: (s: string) => void,
): Promise<WorkloadResult> {
  const configs = { 'cleanup.policy': 'compact', 'min.cleanable.dirty.ratio': '0.01' };
  await createTopics(carrier.bootstrap, [{ topic: cfg.topic, partitions: 1, configs: { ...configs, 'segment.ms': String(cfg.segmentMs) } }]);
  await createTopics(kafka.bootstrap, [{ topic: cfg.topic, partitions: 1, configs: { ...configs, 'segment.ms': DAY_MS } }]);
  const spec: RewriteSpec = { keys: cfg.keys, valueSize: cfg.valueSize, batchRecords: cfg.batchRecords, seed: 18 };
  const toKcompact = await RewriteProducer.open(carrier.bootstrap, cfg.topic, spec);
  const toKafka = await RewriteProducer.open(kafka.bootstrap, cfg.topic, spec);
  const result: WorkloadResult = { config: cfg, produced: { kcompact: [], kafka: [] }, distinctKeys: 0, cleanPoints: [] };
  try {
    for (let i = 0; i < cfg.cleans; i++) {
      const n = Math.round((cfg.records * (i + 1)) / cfg.cleans) - Math.round((cfg.records * i) / cfg.cleans);
      const k = await toKcompact.produce(n);
      const chunkEnd = performance.now();
      result.produced.kcompact.push(k);
      log(`(${cfg.name}) chunk ${i + 1}/${cfg.cleans}: ${n} records through kcompact in ${k.seconds.toFixed(1)} s (offsets ${k.firstOffset}-${k.lastOffset})`);
      const kc = await kcompactCleanPoint(carrier, toKcompact, cfg.topic, cfg.segmentMs, chunkEnd);
      const copies = kc.passes.reduce((s, p) => s + p.copies, 0);
      log(`(${cfg.name}) kcompact cleaned up to ${kc.roll} and carried ${copies} copies in ${kc.seconds.toFixed(1)} s`);
      const f = await toKafka.produce(n);
      result.produced.kafka.push(f);
      log(`(${cfg.name}) chunk ${i + 1}/${cfg.cleans}: ${n} records to Kafka in ${f.seconds.toFixed(1)} s`);
      const kf = await kafkaCleanPoint(kafka, toKafka, cfg.topic);
      log(`(${cfg.name}) Kafka cleaned up to ${kf.roll} in ${kf.seconds.toFixed(1)} s (${kf.attempts} roll record(s))`);
      result.cleanPoints.push({
        kcompactRoll: kc.roll,
        kafkaRoll: kf.roll,
        kafkaRollAttempts: kf.attempts,
        kcompactSeconds: kc.seconds,
        kafkaSeconds: kf.seconds,
        passes: kc.passes,
      });
    }
    // One more record on each side after the last clean: a carried partition otherwise ends with
    // kcompact's end marker, which no client sees, and kbench --to-end waits for the record just
    // below the end offset. A live topic gets written after a pass anyway.
    await toKcompact.append('end');
    await toKafka.append('end');
    // The store let every pass's range go: its log start is the last pass's release end.
    const last = result.cleanPoints.at(-1)!.passes.at(-1)!;
    await pollUntil(`the store to start ${cfg.topic}-0 at ${last.releaseEnd}`, 60_000, async () =>
      (await logRange(store, cfg.topic)).start >= last.releaseEnd ? true : undefined,
    );
    if (toKcompact.distinctKeys() !== toKafka.distinctKeys()) throw new Error('the two producers wrote different keys');
    result.distinctKeys = toKcompact.distinctKeys();
  } finally {
    toKcompact.close();
    toKafka.close();
  }
  return result;
}
