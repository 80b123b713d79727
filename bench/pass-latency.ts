/**
 * `make bench-pacing` (issue 33): the application's own produce latency through kcompact while a
 * carry pass runs, against its latency without one, measured side by side in one run on the
 * 'shared-produce-quota' store (test/support/store-profiles.ts: Kafka 4.4 whose producer_byte_rate
 * every client shares, kcompact's passes included, answered with throttle_time_ms).
 *
 * kcompact runs in this process, carrying; an application producer (bench/latency-producer.ts,
 * its own process) writes small records through it at a fixed rate to a topic of its own, one
 * at a time, acks=all, without a break through every phase of that kcompact. A compacted topic
 * is preloaded with enough live bytes that a pass writing them as fast as the store answers goes
 * well over the quota. The phases, each a window of the producer's sends:
 *
 *   A   no pass runs (the baseline): at the start, and again before and after the paced pass, so
 *       that the baseline is taken beside what it is compared with on a busy machine;
 *   B   a pass of a kcompact with carryBytesPerSecond 0 (only the store's throttle bounds it);
 *   C   a pass of a fresh kcompact with carryBytesPerSecond a fraction of the quota.
 *
 * A pass runs when the topic has a rolled dirty segment and kcompact is asked to clean now; only
 * sends scheduled between the pass's start and end count for B and C (the pass's own duration,
 * from the clean's report, ending when the report came). The quota window after each pass is
 * reported too ("after"), as context: a store still throttling for a pass's bytes once it ended
 * is felt by the application as well. Each p99 is divided by the p99 of every A sample together;
 * the verdict is whether C's is within 1.5 times it.
 *
 * A second table says what else ran (cpu-timeline.ts): the machine's CPU pressure, the CPU of
 * the proxy's threads, Kafka and the application, and how late the proxy's event loop ran. On a
 * machine others share, a window's p99 follows whoever else was busy then, so the same
 * comparison is also made over the sends during which the machine was quiet (context: the
 * verdict stays the whole window's). --trace keeps every send and sample to look into a run.
 *
 * Timings are reported, never asserted: the exit status is non-zero only on a crash or a run
 * that did not measure what it says (no pass, a pass outside B and C, failed sends).
 *
 *   node dist/bench/pass-latency.js [--keys 16000] [--value-size 230] [--rate 50] [--carry-rate 65536]
 *     [--baseline-seconds 20] [--json FILE] [--trace FILE]   (--help lists every flag)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import type { CarrierStats, CarryOutcome } from '../src/engine/api/engine-reports.js';
import { missingPeers, pollUntil } from '../test/support/index.js';
import { startCompactingProxy, type RunningCompactingProxy } from '../test/support/kcompact.js';
import { SHARED_PRODUCE_BYTE_RATE, startStoreProfile, type RunningStoreProfile } from '../test/support/store-profiles.js';
import { printHelpAndExit } from './bench-help.js';
import { createTopics } from './bench-topics.js';
import { kbench, kbenchMissing } from './kbench.js';
import { numberFlags } from './number-flag.js';
import { RewriteProducer } from './rewrite-producer.js';
import { table } from './text-table.js';
import { childNamed, CpuTimeline, type WindowLoad } from './cpu-timeline.js';

const MIB = 1024 * 1024;
/**
 * Kafka's quota window (quota.window.num × quota.window.size.seconds, the defaults): bytes
 * written stay in the rate the broker throttles on for that long, so a phase that follows a
 * burst waits it out, and "after" covers it.
 */
const QUOTA_WINDOW_MS = 11_000;
/** The verdict's bound: the paced pass's p99 over the baseline's (issue 33). */
const BOUND = 1.5;
/**
 * Java's default batch.size: kbench's own (a megabyte) makes batches a carry batch cannot hold
 * under the store's max.message.bytes, and the pass would be refused.
 */
const PRELOAD_BATCH_BYTES = 16 * 1024;
const TABLE_TOPIC = 'pacing-table';
const APP_TOPIC = 'pacing-app';

const OPTIONS = {
  keys: { type: 'string', default: '16000' },
  'value-size': { type: 'string', default: '230' },
  'carry-rate': { type: 'string', default: String(SHARED_PRODUCE_BYTE_RATE / 4) },
  rate: { type: 'string', default: '50' },
  'app-value-size': { type: 'string', default: '200' },
  'baseline-seconds': { type: 'string', default: '20' },
  'dirty-records': { type: 'string', default: '200' },
  'segment-ms': { type: 'string', default: '1000' },
  json: { type: 'string' },
  trace: { type: 'string' },
  help: { type: 'boolean', default: false },
} as const;

const HELP: Record<keyof typeof OPTIONS, string> = {
  keys: 'distinct keys preloaded into the compacted topic (each written once): every one is live, so a pass writes them all',
  'value-size': 'value bytes of the preloaded records',
  'carry-rate': `carryBytesPerSecond of the paced pass (C); the store's shared quota is ${SHARED_PRODUCE_BYTE_RATE} B/s`,
  rate: "the application's records per second",
  'app-value-size': "value bytes of the application's records",
  'baseline-seconds': 'length of each baseline phase (A)',
  'dirty-records': 'records rewriting preloaded keys before the paced pass, so that its clean has a dirty segment past the first pass',
  'segment-ms': "segment.ms of the compacted topic (kcompact's virtual segments: a record after it rolls one)",
  json: "also write every figure to this file ('-': stdout, after the table)",
  trace: "write the phases, every one of the application's sends and the CPU timeline to this file (JSON), to look into a run",
  help: 'print the flags',
};

const { values: args } = parseArgs({ options: OPTIONS });
if (args.help) printHelpAndExit('node dist/bench/pass-latency.js [flags]', OPTIONS, HELP);
const number = numberFlags(args);
const keys = number('keys');
const valueSize = number('value-size');
const carryRate = number('carry-rate');
const appRate = number('rate');
const appValueSize = number('app-value-size', { min: 0 });
const baselineMs = number('baseline-seconds') * 1000;
const dirtyRecords = number('dirty-records');
const segmentMs = number('segment-ms');

const log = (s: string) => process.stderr.write(`bench: ${s}\n`);
const violations: string[] = [];
const now = () => performance.timeOrigin + performance.now();
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, Math.max(0, ms)));

interface Send {
  at: number;
  sent: number;
  acked: number;
  throttleMs: number;
  error: number;
}

/** The application: bench/latency-producer.js in its own process, its sends collected as they are answered. */
class Application {
  readonly sends: Send[] = [];
  private failed: string | undefined;
  private constructor(
    private readonly child: ChildProcess,
    private readonly exited: Promise<void>,
  ) {}

  static async start(bootstrap: string): Promise<Application> {
    const script = path.join(path.dirname(fileURLToPath(import.meta.url)), 'latency-producer.js');
    const argv = [script, '--bootstrap', bootstrap, '--topic', APP_TOPIC, '--rate', String(appRate), '--value-size', String(appValueSize)];
    // A session of its own, as an application is: Linux's autogroup scheduling would otherwise
    // share one CPU budget between it and the proxy's threads in this process.
    const child = spawn(process.execPath, argv, { stdio: ['ignore', 'pipe', 'inherit'], detached: true });
    const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
    // Detached, it would outlive a bench that dies.
    process.once('exit', () => child.kill('SIGKILL'));
    const app = new Application(child, exited);
    let ready: () => void;
    const isReady = new Promise<void>((resolve) => (ready = resolve));
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      const o = JSON.parse(line) as Send & { ready?: boolean; failed?: string };
      if (o.ready) ready();
      else if (o.failed) app.failed = o.failed;
      else app.sends.push(o);
    });
    await Promise.race([isReady, exited.then(() => Promise.reject(new Error(`the application producer exited: ${app.failed ?? 'before it was ready'}`)))]);
    return app;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  check(): void {
    if (this.failed) throw new Error(`the application producer failed: ${this.failed}`);
  }

  async stop(): Promise<void> {
    this.child.kill('SIGTERM');
    await this.exited;
  }
}

/**
 * Each send's latency: from its scheduled time where the send before it was answered only after
 * that (the application's send() would have waited), else from when it went out (the producer's
 * own timer lateness is not the proxy's).
 */
function latencies(sends: readonly Send[]): (Send & { ms: number })[] {
  return sends.map((s, i) => {
    const held = i > 0 && sends[i - 1]!.acked > s.at;
    return { ...s, ms: s.acked - (held ? s.at : s.sent) };
  });
}

/** Nearest rank. */
function quantile(sorted: readonly number[], q: number): number {
  return sorted.length ? sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)]! : NaN;
}

interface PassFigures {
  seconds: number;
  copies: number;
  bytesWritten: number;
  bytesRead: number;
  released: boolean;
  /** From the carrier's stats across the clean-now call. */
  pacedSeconds: number;
  throttledSeconds: number;
  throttles: number;
}

interface Phase {
  name: string;
  kind: 'baseline' | 'unpaced' | 'paced' | 'after';
  /** The kcompact it ran through: 1 unpaced, 2 paced. */
  proxy: 1 | 2;
  carryBytesPerSecond: number;
  from: number;
  to: number;
  pass?: PassFigures;
}

interface PhaseResult extends Phase {
  samples: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  p99Ratio: number;
  /** throttle_time_ms the store put in the application's own answers, summed, and how many answers had one. */
  appThrottledSeconds: number;
  appThrottledAnswers: number;
  errors: number;
  /** Passes that ran within the phase (every phase but B and C must see none). */
  passes: number;
  load: WindowLoad;
  /** Sends slower than the baseline's p99, and of them those during which this process's event loop (the proxy's) ran a timer late. */
  slowSends: number;
  slowSendsLoopStalled: number;
  /** The sends during which the machine's CPU pressure stayed below QUIET_PRESSURE, and their p99 (over the quiet A sends' p99). */
  quietSamples: number;
  quietP99Ms: number;
  quietP99Ratio: number;
}

async function carryStats(proxy: RunningCompactingProxy): Promise<CarrierStats> {
  const stats = (await proxy.compaction.engine.status()).cleaner.carry;
  if (!stats) throw new Error('the proxy does not carry');
  return stats;
}

async function tablePartition(proxy: RunningCompactingProxy) {
  return (await proxy.compaction.engine.status()).partitions.find((p) => p.topic === TABLE_TOPIC && p.partition === 0);
}

/** Until this kcompact carries the table topic and its index has read the store to its end. */
async function waitCarriedAndIndexed(proxy: RunningCompactingProxy, end: number): Promise<void> {
  await pollUntil(`kcompact to carry ${TABLE_TOPIC}-0 and index it up to ${end}`, 120_000, async () => {
    const p = await tablePartition(proxy);
    return p && p.carried && p.nextOffset >= end ? true : undefined;
  });
}

/** The offset after the store's last record of the table topic (one record appended: its offset + 1). */
async function rollSegment(writer: RewriteProducer): Promise<number> {
  // A record written segment.ms after the virtual segment's first one rolls it, so everything before it is cleanable.
  await sleep(segmentMs + 500);
  return (await writer.append('roll')) + 1;
}

/** Asks kcompact to clean the table topic now and times the pass that follows. */
async function runPass(proxy: RunningCompactingProxy, name: string): Promise<{ from: number; to: number; pass: PassFigures }> {
  const before = await carryStats(proxy);
  const clean = await proxy.compaction.engine.compactNow(TABLE_TOPIC);
  const to = now();
  const after = await carryStats(proxy);
  const passes: CarryOutcome[] = clean.carried.filter((c) => c.topic === TABLE_TOPIC);
  if (clean.failed.length) throw new Error(`the clean before ${name} failed: ${JSON.stringify(clean.failed)}`);
  if (passes.length !== 1) throw new Error(`${name}: the clean was followed by ${passes.length} passes of ${TABLE_TOPIC}, not one`);
  if (after.passesTotal - before.passesTotal !== 1)
    violations.push(`${name}: ${after.passesTotal - before.passesTotal} passes counted during the clean, not one`);
  const p = passes[0]!;
  const delta = (k: 'pacedMsTotal' | 'throttledMsTotal' | 'throttlesTotal') => (after.pacing?.[k] ?? 0) - (before.pacing?.[k] ?? 0);
  return {
    from: to - p.durationMs,
    to,
    pass: {
      seconds: p.durationMs / 1000,
      copies: p.copies,
      bytesWritten: p.bytesWritten,
      bytesRead: p.bytesRead,
      released: p.released,
      pacedSeconds: delta('pacedMsTotal') / 1000,
      throttledSeconds: delta('throttledMsTotal') / 1000,
      throttles: delta('throttlesTotal'),
    },
  };
}

/** A phase with no pass: its window, and a check that none ran in it. */
async function baseline(proxy: RunningCompactingProxy, app: Application, phase: Omit<Phase, 'from' | 'to'>, passWindows: Map<string, number>): Promise<Phase> {
  const before = (await carryStats(proxy)).passesTotal;
  const from = now();
  await sleep(baselineMs);
  const to = now();
  app.check();
  passWindows.set(phase.name, (await carryStats(proxy)).passesTotal - before);
  return { ...phase, from, to };
}

/** A stall of the proxy's event loop long enough to show in a send's latency. */
const LOOP_STALL_MS = 10;
/**
 * CPU pressure below which the machine counts as quiet around a send. On a machine others share,
 * a window's p99 is set by whatever else ran then; the same comparison over the quiet moments
 * only says what the pass itself costs.
 */
const QUIET_PRESSURE = 0.3;

function summarize(
  phases: readonly Phase[],
  app: readonly Send[],
  passesIn: ReadonlyMap<string, number>,
  timeline: CpuTimeline,
): { results: PhaseResult[]; baselineP99: number; quietBaselineP99: number } {
  const lat = latencies(app);
  const inPhase = (p: Phase) => lat.filter((s) => s.at >= p.from && s.at <= p.to);
  const pooled = phases
    .filter((p) => p.kind === 'baseline')
    .flatMap(inPhase)
    .map((s) => s.ms)
    .sort((a, b) => a - b);
  const baselineP99 = quantile(pooled, 0.99);
  const quietOf = (p: Phase) =>
    inPhase(p)
      .filter((x) => timeline.pressureDuring(x.acked - x.ms, x.acked) < QUIET_PRESSURE)
      .map((x) => x.ms)
      .sort((a, b) => a - b);
  const quietBaselineP99 = quantile(
    phases
      .filter((p) => p.kind === 'baseline')
      .flatMap(quietOf)
      .sort((a, b) => a - b),
    0.99,
  );
  const results = phases.map((p): PhaseResult => {
    const s = inPhase(p);
    const quiet = quietOf(p);
    const ms = s.map((x) => x.ms).sort((a, b) => a - b);
    const p99 = quantile(ms, 0.99);
    const slow = s.filter((x) => x.ms > baselineP99);
    return {
      ...p,
      samples: ms.length,
      p50Ms: quantile(ms, 0.5),
      p99Ms: p99,
      maxMs: ms.at(-1) ?? NaN,
      p99Ratio: p99 / baselineP99,
      appThrottledSeconds: s.reduce((n, x) => n + x.throttleMs, 0) / 1000,
      appThrottledAnswers: s.filter((x) => x.throttleMs > 0).length,
      errors: s.filter((x) => x.error !== 0).length,
      passes: passesIn.get(p.name) ?? (p.pass ? 1 : 0),
      load: timeline.window(p.from, p.to),
      slowSends: slow.length,
      slowSendsLoopStalled: slow.filter((x) => timeline.loopStalled(x.acked - x.ms, x.acked, LOOP_STALL_MS)).length,
      quietSamples: quiet.length,
      quietP99Ms: quantile(quiet, 0.99),
      quietP99Ratio: quantile(quiet, 0.99) / quietBaselineP99,
    };
  });
  return { results, baselineP99, quietBaselineP99 };
}

function report(results: readonly PhaseResult[], baselineP99: number, quietBaselineP99: number): string[] {
  const f = (n: number, d = 1) => (Number.isFinite(n) ? n.toFixed(d) : '-');
  const rows = [
    ['phase', 'kcompact', 'samples', 'p50 ms', 'p99 ms', 'max ms', 'p99 / A', 'pass s', 'written MiB', 'read MiB', 'paced s', 'throttled s', 'app throttled s'],
    ...results.map((r) => [
      r.name,
      r.carryBytesPerSecond > 0 ? `#${r.proxy} ${r.carryBytesPerSecond} B/s` : `#${r.proxy} unpaced`,
      String(r.samples),
      f(r.p50Ms),
      f(r.p99Ms),
      f(r.maxMs),
      `${f(r.p99Ratio, 2)}x`,
      r.pass ? f(r.pass.seconds) : '',
      r.pass ? f(r.pass.bytesWritten / MIB, 2) : '',
      r.pass ? f(r.pass.bytesRead / MIB, 2) : '',
      r.pass ? f(r.pass.pacedSeconds) : '',
      r.pass ? f(r.pass.throttledSeconds) : '',
      f(r.appThrottledSeconds),
    ]),
  ];
  const cores = (n: number | undefined) => f(n ?? NaN, 2);
  const load = [
    [
      'phase',
      'CPU pressure',
      'machine cores',
      'kcompact main',
      'kcompact threads',
      'Kafka',
      'app',
      'everything else',
      'loop lag p99 ms',
      'loop lag max ms',
      'sends > A p99',
      'loop stalled',
      'quiet sends',
      'quiet p99 ms',
      'quiet p99 / A',
    ],
    ...results.map((r) => [
      r.name,
      `${f(r.load.cpuPressure * 100, 0)}%`,
      `${cores(r.load.machineCores)} / ${os.cpus().length}`,
      cores(r.load.mainCores),
      cores(r.load.threadCores),
      cores(r.load.procCores.kafka),
      cores(r.load.procCores[`app#${r.proxy}`]),
      cores(r.load.machineCores - r.load.mainCores - r.load.threadCores - (r.load.procCores.kafka ?? 0) - (r.load.procCores[`app#${r.proxy}`] ?? 0)),
      f(r.load.loopLagP99Ms),
      f(r.load.loopLagMaxMs),
      String(r.slowSends),
      String(r.slowSendsLoopStalled),
      String(r.quietSamples),
      f(r.quietP99Ms),
      `${f(r.quietP99Ratio, 2)}x`,
    ]),
  ];
  const c = results.find((r) => r.kind === 'paced')!;
  const within = c.p99Ratio <= BOUND;
  const aP99 = results.filter((r) => r.kind === 'baseline').map((r) => r.p99Ms);
  return [
    table(rows),
    '',
    'where the CPU went (cores busy on average; "CPU pressure": the share of the time some runnable task on the machine waited for a CPU;',
    '"loop": the event loop of this process, which is the proxy\'s; "loop stalled": of the sends slower than the baseline p99, those during which it ran a timer 10 ms late or more;',
    `"quiet": the sends during which the machine's CPU pressure stayed below ${QUIET_PRESSURE * 100}%, against the quiet sends of every A together)`,
    table(load),
    '',
    `baseline (every A sample together): p99 ${f(baselineP99)} ms; each A alone ${f(Math.min(...aP99))}-${f(Math.max(...aP99))} ms, ${f(Math.min(...aP99) / baselineP99, 2)}-${f(Math.max(...aP99) / baselineP99, 2)}x: how far the machine's noise alone moves a p99`,
    `"after" rows: the store's quota window once the pass ended (context, not in the verdict)`,
    `verdict: the paced pass (C, carryBytesPerSecond ${carryRate}, ${f((carryRate / SHARED_PRODUCE_BYTE_RATE) * 100, 0)}% of the store's quota) left the application's p99 at ${f(c.p99Ratio, 2)}x the baseline: ${within ? 'within' : 'over'} ${BOUND}x`,
    `in quiet moments only (context): C's p99 ${f(c.quietP99Ms)} ms over ${c.quietSamples} sends, ${f(c.quietP99Ratio, 2)}x the quiet A sends' ${f(quietBaselineP99)} ms`,
  ];
}

async function main(): Promise<void> {
  const missing: string[] = missingPeers().filter((m) => m === 'Kafka jars' || m === 'java');
  if (kbenchMissing()) missing.push('kbench');
  if (missing.length) throw new Error(`test peers missing (${missing.join(', ')}): run bash test/peers/install.sh`);
  const started = performance.now();
  const phases: Phase[] = [];
  const passesIn = new Map<string, number>();
  const sends: Send[] = [];
  let store: RunningStoreProfile | undefined;
  let proxy: RunningCompactingProxy | undefined;
  let app: Application | undefined;
  let writer: RewriteProducer | undefined;
  let preload: { records: number; bytes: number; seconds: number } | undefined;
  const timeline = new CpuTimeline();
  try {
    log(`starting the store (shared-produce-quota: Kafka 4.4, producer_byte_rate ${SHARED_PRODUCE_BYTE_RATE} B/s for every client)`);
    store = await startStoreProfile('shared-produce-quota');
    timeline.track('kafka', childNamed('java'));
    proxy = await startCompactingProxy(store.bootstrap, { carry: true, carryBytesPerSecond: 0 });
    const topicConfigs = { 'cleanup.policy': 'compact', 'min.cleanable.dirty.ratio': '0.01', 'segment.ms': String(segmentMs) };
    await createTopics(proxy.bootstrap, [
      { topic: TABLE_TOPIC, partitions: 1, configs: topicConfigs },
      { topic: APP_TOPIC, partitions: 1 },
    ]);
    // Carried before it holds anything: the round an assignment starts finds nothing to clean then.
    await waitCarriedAndIndexed(proxy, 0);

    // Straight to the store: the preload is the workload's history, not what is measured.
    log(`preloading ${keys} distinct keys of ${valueSize} B values (the store throttles it to its quota)`);
    const pre = await kbench('produce', store.bootstrap, TABLE_TOPIC, [
      '--count',
      String(keys),
      '--keys',
      String(keys),
      '--key-order',
      'cycle',
      '--value-size',
      String(valueSize),
      '--batch-bytes',
      String(PRELOAD_BATCH_BYTES),
    ]);
    preload = { records: pre.records, bytes: pre.bytes, seconds: pre.seconds };
    log(`preloaded ${pre.records} records, ${(pre.bytes / MIB).toFixed(2)} MiB of keys and values, in ${pre.seconds.toFixed(1)} s`);
    writer = await RewriteProducer.open(store.bootstrap, TABLE_TOPIC, { keys, valueSize, batchRecords: 100, seed: 33 });
    let end = await rollSegment(writer);
    const preloadDone = now();
    await waitCarriedAndIndexed(proxy, end);

    app = await Application.start(proxy.bootstrap);
    timeline.track('app#1', app.pid);
    // The preload's bytes are still in the store's rate: the baseline starts once they are out of it.
    await sleep(preloadDone + QUOTA_WINDOW_MS + 1000 - now());
    log('A1: no pass');
    phases.push(await baseline(proxy, app, { name: 'A1', kind: 'baseline', proxy: 1, carryBytesPerSecond: 0 }, passesIn));

    log('B: an unpaced pass');
    const b = await runPass(proxy, 'B');
    phases.push({ name: 'B', kind: 'unpaced', proxy: 1, carryBytesPerSecond: 0, ...b });
    log(`B: ${b.pass.copies} copies, ${(b.pass.bytesWritten / MIB).toFixed(2)} MiB in ${b.pass.seconds.toFixed(1)} s; the store's quota window`);
    await sleep(QUOTA_WINDOW_MS);
    phases.push({ name: 'B after', kind: 'after', proxy: 1, carryBytesPerSecond: 0, from: b.to, to: now() });
    app.check();
    await app.stop();
    sends.push(...app.sends);
    app = undefined;
    await proxy.stop();
    proxy = undefined;

    // A fresh kcompact (its own data directory and carrier group): its index of the topic starts from the store as B left it.
    log(`a fresh kcompact with carryBytesPerSecond ${carryRate}`);
    proxy = await startCompactingProxy(store.bootstrap, { carry: true, carryBytesPerSecond: carryRate });
    // Rewrites of preloaded keys and a roll past the first pass's end marker: what makes the next clean carry again.
    await writer.produce(dirtyRecords);
    end = await rollSegment(writer);
    await waitCarriedAndIndexed(proxy, end);
    app = await Application.start(proxy.bootstrap);
    timeline.track('app#2', app.pid);
    log('A2: no pass');
    phases.push(await baseline(proxy, app, { name: 'A2', kind: 'baseline', proxy: 2, carryBytesPerSecond: carryRate }, passesIn));

    log('C: a paced pass');
    const c = await runPass(proxy, 'C');
    phases.push({ name: 'C', kind: 'paced', proxy: 2, carryBytesPerSecond: carryRate, ...c });
    log(`C: ${c.pass.copies} copies, ${(c.pass.bytesWritten / MIB).toFixed(2)} MiB in ${c.pass.seconds.toFixed(1)} s; the store's quota window`);
    await sleep(QUOTA_WINDOW_MS);
    phases.push({ name: 'C after', kind: 'after', proxy: 2, carryBytesPerSecond: carryRate, from: c.to, to: now() });
    log('A3: no pass');
    phases.push(await baseline(proxy, app, { name: 'A3', kind: 'baseline', proxy: 2, carryBytesPerSecond: carryRate }, passesIn));
    app.check();
    await app.stop();
    sends.push(...app.sends);
    app = undefined;
  } finally {
    timeline.stop();
    await app?.stop();
    writer?.close();
    await proxy?.stop();
    await store?.stop();
  }

  const { results, baselineP99, quietBaselineP99 } = summarize(phases, sends, passesIn, timeline);
  if (args.trace) fs.writeFileSync(args.trace, JSON.stringify({ phases, sends: latencies(sends), cpu: { cores: os.cpus().length, ...timeline.raw() } }) + '\n');
  for (const r of results) {
    if (r.kind === 'baseline' && r.passes) violations.push(`${r.name}: ${r.passes} pass(es) ran during a phase without one`);
    if (r.errors) violations.push(`${r.name}: ${r.errors} of the application's sends were refused`);
    if (r.samples === 0) violations.push(`${r.name}: no sends`);
  }
  process.stdout.write(report(results, baselineP99, quietBaselineP99).join('\n') + '\n');
  if (args.json) {
    const out = {
      config: {
        store: 'shared-produce-quota',
        quotaBytesPerSecond: SHARED_PRODUCE_BYTE_RATE,
        keys,
        valueSize,
        carryBytesPerSecond: carryRate,
        app: { recordsPerSecond: appRate, valueSize: appValueSize, acks: 'all', inFlight: 1 },
        baselineSeconds: baselineMs / 1000,
        cpus: os.cpus().length,
      },
      preload,
      baselineP99Ms: baselineP99,
      quietPressure: QUIET_PRESSURE,
      quietBaselineP99Ms: quietBaselineP99,
      phases: results,
      verdict: {
        bound: BOUND,
        pacedP99Ratio: results.find((r) => r.kind === 'paced')!.p99Ratio,
        within: results.find((r) => r.kind === 'paced')!.p99Ratio <= BOUND,
      },
      violations,
      seconds: (performance.now() - started) / 1000,
    };
    const text = JSON.stringify(out, null, 2) + '\n';
    if (args.json === '-') process.stdout.write(text);
    else fs.writeFileSync(args.json, text);
  }
  if (violations.length) {
    process.stderr.write(`bench: the run did not measure what it says:\n${violations.map((v) => `  ${v}`).join('\n')}\n`);
    process.exit(1);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
