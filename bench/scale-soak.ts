/**
 * The soak of the scale benchmark: mixed traffic through the proxy for a while, with the
 * proxy's memory sampled every few seconds.
 *
 * Traffic, all through the proxy:
 * - one producer per topic (kbench latency, at a fixed rate shared out by partitions) updating
 *   the topic's existing keys at random, every Nth record a tombstone;
 * - consumer groups, each a member reading every topic from offset 0 and then tailing it;
 * - every so often a new consumer group reading one topic from offset 0 to its end (a pod that
 *   restarts and bootstraps its table), the topics in turn;
 * - the proxy's own periodic cleaner, on the soak's topic configs (short segments, a low
 *   min.cleanable.dirty.ratio, a short delete.retention.ms, so that cleans and tombstone
 *   removals happen throughout).
 *
 * Samples: resident memory (/proc), JS heap of the main and worker threads (a diagnostic report),
 * the index files' sizes, and the engine's rows, lag and cleaner totals. soak-trend.ts says
 * whether each figure stayed flat.
 */
import { engineStatus, indexFiles, type IndexFiles } from './engine-client.js';
import { heapBreakdown } from './heap-report.js';
import { kbench, startKbench, type BackgroundKbench, type KbenchResult } from './kbench.js';
import { memory, threadCpuSeconds } from './proc-stats.js';
import type { RunningProxyProcess } from './proxy-process.js';
import type { ScaleTopic } from './scale-load.js';
import { collections, trend, type Point, type Trend } from './soak-trend.js';

export interface SoakConfig {
  /** Traffic before the judged stretch (soak-trend.ts says why); sampled and shown, not judged. */
  warmUpSeconds: number;
  /** The judged stretch, after the warm-up. */
  seconds: number;
  /** Records per second produced over all topics. */
  rate: number;
  tombstoneEvery: number;
  valueSize: number;
  groups: number;
  /** A new group reads a topic from offset 0 every this many seconds. */
  bootstrapEverySeconds: number;
  sampleSeconds: number;
}

export interface SoakSample {
  /** Seconds since the traffic began (the warm-up's start). */
  at: number;
  rss: number;
  anon: number;
  heapUsed: { main: number; worker: number };
  heapTotal: { main: number; worker: number };
  /** What each space of the JS heaps has reserved (for the report's JSON: which space grew). */
  heapSpaces: { main: Record<string, number>; worker: Record<string, number> };
  /** Buffers and ArrayBuffers of both threads. */
  external: number;
  files: IndexFiles;
  /** Over every indexed partition: index rows, records not yet indexed, tombstones waiting for their horizon. */
  indexRows: number;
  lag: number;
  tombstonesPending: number;
  cleans: number;
  reaped: number;
  /** How long the diagnostic report took (the proxy's main thread writes it, pausing traffic). */
  reportMs: number;
  /** CPU seconds used so far by the proxy's main thread, by its busiest other thread (the compaction worker), by all. */
  cpu: { main: number; worker: number; process: number };
}

export interface SoakResult {
  config: SoakConfig;
  samples: SoakSample[];
  producers: KbenchResult[];
  groups: KbenchResult[];
  bootstraps: { topic: string; result: KbenchResult }[];
  /** RSS and the JS heaps are judged by their samples right after a full collection of the main thread's heap. */
  trends: { rss: Trend; heapUsed: Trend; indexFiles: Trend };
  /** Whether RSS and the JS heaps stayed flat (soak-trend.ts's rule); undefined: too short to tell. */
  flat: boolean | undefined;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function cpuNow(pid: number): SoakSample['cpu'] {
  const cpu = { main: 0, worker: 0, process: 0 };
  for (const [tid, s] of threadCpuSeconds(pid)) {
    cpu.process += s;
    if (tid === pid) cpu.main = s;
    else cpu.worker = Math.max(cpu.worker, s);
  }
  return cpu;
}

function sumSpaces(threads: Record<string, number>[]): Record<string, number> {
  const total: Record<string, number> = {};
  for (const spaces of threads) for (const [name, bytes] of Object.entries(spaces)) total[name] = (total[name] ?? 0) + bytes;
  return total;
}

async function sample(proxy: RunningProxyProcess, reportDir: string, at: number): Promise<SoakSample> {
  const m = memory(proxy.proc.pid);
  if (!m) throw new Error(proxy.crashed() ?? `cannot read /proc/${proxy.proc.pid}/status`);
  const t0 = performance.now();
  const heap = await heapBreakdown(proxy.proc.pid, reportDir);
  const reportMs = performance.now() - t0;
  const status = await engineStatus(proxy.admin);
  const sum = (pick: (w: (typeof heap.workers)[number]) => number) => heap.workers.reduce((n, w) => n + pick(w), 0);
  return {
    at,
    rss: m.rss,
    anon: m.anon,
    heapUsed: { main: heap.main.heapUsed, worker: sum((w) => w.heapUsed) },
    heapTotal: { main: heap.main.heapTotal, worker: sum((w) => w.heapTotal) },
    heapSpaces: { main: heap.main.spaces, worker: sumSpaces(heap.workers.map((w) => w.spaces)) },
    external: heap.main.external + sum((w) => w.external),
    files: indexFiles(proxy.dataDir),
    indexRows: status.partitions.reduce((n, p) => n + p.indexedRecords, 0),
    lag: status.partitions.reduce((n, p) => n + Math.max(0, p.highWatermark - p.nextOffset), 0),
    tombstonesPending: status.partitions.reduce((n, p) => n + p.tombstonesPending, 0),
    cleans: status.cleaner.cleansTotal,
    reaped: status.cleaner.reapedTotal,
    reportMs,
    cpu: cpuNow(proxy.proc.pid),
  };
}

/** The proxy must write diagnostic reports into reportDir (heap-report.ts's reportNodeArgs). */
export async function soak(
  proxy: RunningProxyProcess,
  reportDir: string,
  topics: ScaleTopic[],
  cfg: SoakConfig,
  log: (s: string) => void,
): Promise<SoakResult> {
  const partitions = topics.reduce((n, t) => n + t.partitions, 0);
  const total = cfg.warmUpSeconds + cfg.seconds;
  const run = `${total}s`;
  const timeout = `${total + 600}s`;
  log(
    `soak: ${cfg.warmUpSeconds} s of warm-up, then ${cfg.seconds} s judged, of ${cfg.rate} records/s (every ${cfg.tombstoneEvery}th a tombstone) over ${topics.length} topics, ${cfg.groups} consumer group(s) tailing them, a new group bootstrapping a topic every ${cfg.bootstrapEverySeconds} s`,
  );
  const producers: BackgroundKbench[] = topics.map((t, i) =>
    startKbench('latency', proxy.bootstrap, t.name, [
      '--rate',
      String(Math.max(1, Math.round((cfg.rate * t.partitions) / partitions))),
      '--duration',
      run,
      '--warmup',
      '0s',
      '--keys',
      String(t.keys),
      '--key-base',
      String(t.keyBase),
      '--key-order',
      'random',
      '--seed',
      String(i + 1),
      '--value-size',
      String(cfg.valueSize),
      '--tombstone-every',
      String(cfg.tombstoneEvery),
      '--timeout',
      timeout,
      // The soak's traffic is its own groups' reads; a reader per producer would add to it.
      '--e2e=false',
    ]),
  );
  const groups: BackgroundKbench[] = Array.from({ length: cfg.groups }, (_, i) =>
    startKbench('consume', proxy.bootstrap, topics.map((t) => t.name).join(','), ['--group', `soak-tail-${i}`, '--duration', run, '--timeout', timeout]),
  );
  const started = performance.now();
  const elapsed = () => (performance.now() - started) / 1000;

  const bootstraps: SoakResult['bootstraps'] = [];
  // A failed bootstrap read ends the soak with its error (held here, so it is never unhandled).
  let failure: { err: unknown } | undefined;
  const bootstrapping = (async () => {
    for (let n = 0; elapsed() < total; n++) {
      const topic = topics[n % topics.length]!.name;
      const result = await kbench('consume', proxy.bootstrap, topic, ['--group', `soak-bootstrap-${n}`, '--to-end', '--timeout', '30m'], 1_900_000);
      bootstraps.push({ topic, result });
      await sleep(Math.max(0, Math.min((n + 1) * cfg.bootstrapEverySeconds, total) - elapsed()) * 1000);
    }
  })().catch((err: unknown) => {
    failure = { err };
  });

  const samples: SoakSample[] = [];
  try {
    while (elapsed() < total && !failure) {
      const s = await sample(proxy, reportDir, elapsed());
      samples.push(s);
      if (samples.length % Math.max(1, Math.round(60 / cfg.sampleSeconds)) === 1) {
        log(
          `soak: ${s.at.toFixed(0)} s: RSS ${(s.rss / 2 ** 20).toFixed(0)} MiB, heaps ${((s.heapUsed.main + s.heapUsed.worker) / 2 ** 20).toFixed(0)} MiB, index ${((s.files.db + s.files.wal) / 2 ** 20).toFixed(0)} MiB, lag ${s.lag}, cleans ${s.cleans}`,
        );
      }
      await sleep(Math.max(0, Math.min(samples.length * cfg.sampleSeconds, total) - elapsed()) * 1000);
    }
    samples.push(await sample(proxy, reportDir, elapsed()));
  } finally {
    await bootstrapping;
  }
  if (failure) throw failure.err;
  const producerResults = await Promise.all(producers.map((p) => p.done()));
  const groupResults = await Promise.all(groups.map((g) => g.done()));

  const points = (pick: (s: SoakSample) => number): Point[] => samples.map((s) => ({ at: s.at, value: pick(s) }));
  const afterCollections = collections(points((s) => s.heapUsed.main));
  const judged = { from: cfg.warmUpSeconds, to: total };
  const trends = {
    rss: trend(
      points((s) => s.rss),
      judged,
      afterCollections,
    ),
    heapUsed: trend(
      points((s) => s.heapUsed.main + s.heapUsed.worker),
      judged,
      afterCollections,
    ),
    indexFiles: trend(
      points((s) => s.files.db + s.files.wal),
      judged,
    ),
  };
  const verdicts = [trends.rss.flat, trends.heapUsed.flat];
  return {
    config: cfg,
    samples,
    producers: producerResults,
    groups: groupResults,
    bootstraps,
    trends,
    flat: verdicts.includes(undefined) ? undefined : verdicts.every(Boolean),
  };
}
