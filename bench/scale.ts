/**
 * `make bench-scale`: the compaction budgets at scale (issue 5). With 1,000 compacted
 * partitions and 10M keys behind one proxy (its own process, from the CLI, in front of Apache
 * Kafka 4.4 with its cleaner off):
 *
 *   (a) index ingest keeps up with >= 200k records/s per CPU second of the worker thread while
 *       the proxy serves traffic (scale-load.ts);
 *   (b) reading a sample of the compacted partitions from offset 0 through kcompact is >= 10x
 *       faster than reading their raw log through the proxy and within 2x of Kafka 4.4's own
 *       compacted topic (compaction-read.ts with several partitions; a second Kafka with its
 *       cleaner on is the reference);
 *   (c) the proxy stays under 300 MiB resident with every key indexed, once cleaned, and once
 *       idle after the reads (right after them is shown too: their dead Buffers are still there
 *       until V8 or the idle collection, src/common/idle-collection.ts, takes them);
 *
 * and a soak under mixed traffic keeps memory flat after a warm-up of the same traffic
 * (scale-soak.ts, soak-trend.ts's rule).
 * It also checks invariants, which unlike budgets fail the run: every partition indexed, one
 * index row and one record read per live key (scale-check.ts).
 *
 * The partitions are --topics bulk topics plus the read sample's topic; the keys are shared
 * out the same way. Budgets are reported, never asserted. Kafka's logs live under
 * $KCOMPACT_BENCH_TMPDIR (default /dev/shm when it exists), the proxy's data directory under
 * --index-dir (default the system temp dir).
 *
 *   node dist/bench/scale.js [--partitions 1000] [--keys 10000000] [--soak-minutes 30]
 *     [--soak-warm-up-minutes 25] [--json FILE]
 *   (--help lists every flag; a small run: --partitions 50 --keys 200000 --soak-minutes 1 --soak-warm-up-minutes 0)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { printHelpAndExit } from './bench-help.js';
import { makeTempDir, missingPeers, startKafka, tail, type RunningKafka } from '../test/support/index.js';
import { measureReads, type ReadResult } from './compaction-read.js';
import { BUDGET, int, mib, readReport, verdict } from './compaction-report.js';
import { reportNodeArgs, type HeapBreakdown } from './heap-report.js';
import { kbenchMissing } from './kbench.js';
import { DEPLOYED_MALLOC_ARENA_MAX, startProxyProcess, type RunningProxyProcess } from './proxy-process.js';
import { checkInvariants, type Invariants } from './scale-check.js';
import { load, memoryAt, type LoadResult, type MemoryAt, type ScaleTopic } from './scale-load.js';
import { soak, type SoakResult, type SoakSample } from './scale-soak.js';
import { FLAT_RULE, type Trend } from './soak-trend.js';
import { median, table } from './text-table.js';
import { numberFlags } from './number-flag.js';
import { QUIET_LOOKS, QUIET_MS } from '../src/common/idle-collection.js';

const OPTIONS = {
  partitions: { type: 'string', default: '1000' },
  topics: { type: 'string', default: '10' },
  keys: { type: 'string', default: '10000000' },
  'writes-per-key': { type: 'string', default: '2' },
  'value-size': { type: 'string', default: '32' },
  'traffic-records': { type: 'string', default: '200000' },
  'sample-partitions': { type: 'string' },
  'sample-keys': { type: 'string' },
  'sample-records': { type: 'string' },
  'read-rounds': { type: 'string', default: '3' },
  'soak-minutes': { type: 'string', default: '30' },
  'soak-warm-up-minutes': { type: 'string', default: '25' },
  'soak-rate': { type: 'string' },
  'tombstone-every': { type: 'string', default: '20' },
  'soak-groups': { type: 'string', default: '2' },
  'bootstrap-every': { type: 'string', default: '60' },
  'sample-seconds': { type: 'string', default: '5' },
  'segment-ms': { type: 'string' },
  'dirty-ratio': { type: 'string', default: '0.05' },
  'delete-retention-ms': { type: 'string', default: '60000' },
  'cleaner-backoff-ms': { type: 'string', default: '15000' },
  'index-dir': { type: 'string' },
  json: { type: 'string' },
  help: { type: 'boolean', default: false },
} as const;

const HELP: Record<keyof typeof OPTIONS, string> = {
  partitions: 'compacted partitions in all (the bulk topics and the read sample)',
  topics: 'bulk topics the partitions are shared out over',
  keys: 'distinct keys in all (the bulk topics and the read sample)',
  'writes-per-key': 'times each bulk key is written (cycling through the key range)',
  'value-size': 'value bytes of the bulk and soak records',
  'traffic-records': 'records of 1 KiB the background consumer reads through the proxy, over and over, while the bulk is indexed',
  'sample-partitions': '(b) partitions of the read sample (default partitions / 100, at least 1)',
  'sample-keys': '(b) keys of the read sample (default 1,000 per sample partition)',
  'sample-records': '(b) records of the read sample, uniformly random updates (default 100 per sample key)',
  'read-rounds': '(b) rounds of reads; medians are reported',
  'soak-minutes': 'length of the judged soak, after its warm-up (fractions allowed; 0 skips the soak)',
  'soak-warm-up-minutes': 'minutes of the same traffic before the judged soak (sampled and shown, not judged; fractions allowed)',
  'soak-rate': 'records/s produced through the proxy during the soak (default 2 per partition)',
  'tombstone-every': 'every Nth soak record is a tombstone',
  'soak-groups': 'consumer groups tailing every bulk topic during the soak',
  'bootstrap-every': 'seconds between new consumer groups reading a bulk topic from offset 0 during the soak',
  'sample-seconds': 'seconds between soak samples',
  'segment-ms': 'segment.ms of the bulk topics during the soak (default a tenth of the soak, within 5 s..60 s)',
  'dirty-ratio': 'min.cleanable.dirty.ratio of the bulk topics during the soak',
  'delete-retention-ms': 'delete.retention.ms of the bulk topics during the soak',
  'cleaner-backoff-ms': "the proxy's pause between cleaner rounds",
  'index-dir': "parent of the proxy's data directory (default: the system temp dir)",
  json: 'also write every figure to this file',
  help: 'print the flags',
};

const { values: args } = parseArgs({ options: OPTIONS });

if (args.help) printHelpAndExit('node dist/bench/scale.js [flags]', OPTIONS, HELP);

const number = numberFlags(args);

const partitions = number('partitions');
const samplePartitions = number('sample-partitions', { fallback: Math.max(1, Math.round(partitions / 100)) });
const sampleKeys = number('sample-keys', { fallback: 1000 * samplePartitions });
const keys = number('keys');
const topicCount = number('topics');
const bulkPartitions = partitions - samplePartitions;
const bulkKeys = keys - sampleKeys;
if (bulkPartitions < topicCount)
  throw new Error(
    `--partitions ${partitions} leaves ${bulkPartitions} partitions for ${topicCount} bulk topics besides the ${samplePartitions} of the read sample`,
  );
if (bulkKeys < bulkPartitions)
  throw new Error(`--keys ${keys} leaves ${bulkKeys} keys for ${bulkPartitions} bulk partitions besides the ${sampleKeys} of the read sample`);
const soakSeconds = Math.round(60 * number('soak-minutes', { integer: false, min: 0 }));

/** n shared out over `parts` as evenly as whole numbers allow. */
function share(n: number, parts: number, i: number): number {
  return Math.floor(n / parts) + (i < n % parts ? 1 : 0);
}

const topics: ScaleTopic[] = Array.from({ length: topicCount }, (_, i) => ({
  name: `scale-${String(i).padStart(String(topicCount - 1).length, '0')}`,
  partitions: share(bulkPartitions, topicCount, i),
  keys: share(bulkKeys, topicCount, i),
  // Bulk keys come after the sample's (key-0 ..), so every key is distinct.
  keyBase: sampleKeys + Array.from({ length: i }, (_, j) => share(bulkKeys, topicCount, j)).reduce((a, b) => a + b, 0),
}));

const cfg = {
  partitions,
  keys,
  load: {
    topics,
    writesPerKey: number('writes-per-key'),
    valueSize: number('value-size'),
    trafficRecords: number('traffic-records'),
    soakConfigs: {
      'segment.ms': String(number('segment-ms', { fallback: Math.min(60_000, Math.max(5_000, Math.round((soakSeconds * 1000) / 10))) })),
      'min.cleanable.dirty.ratio': String(number('dirty-ratio', { integer: false, min: 0 })),
      'delete.retention.ms': String(number('delete-retention-ms', { min: 0 })),
    },
  },
  read: {
    partitions: samplePartitions,
    keys: sampleKeys,
    records: number('sample-records', { fallback: 100 * sampleKeys }),
    valueSize: 100,
    batchRecords: 500,
    rounds: number('read-rounds'),
    segmentMs: 1000,
  },
  soak: {
    warmUpSeconds: Math.round(60 * number('soak-warm-up-minutes', { integer: false, min: 0 })),
    seconds: soakSeconds,
    rate: number('soak-rate', { fallback: 2 * partitions }),
    tombstoneEvery: number('tombstone-every'),
    valueSize: number('value-size'),
    groups: number('soak-groups', { min: 0 }),
    bootstrapEverySeconds: number('bootstrap-every'),
    sampleSeconds: number('sample-seconds'),
  },
  cleanerBackoffMs: number('cleaner-backoff-ms'),
};

const log = (s: string) => process.stderr.write(`bench: ${s}\n`);
const seconds = (s: number) => `${s.toFixed(1)} s`;
const pct = (share: number) => `${(100 * share).toFixed(0)}%`;

/** RSS and where it sits, as one row. */
function memoryRow(label: string, m: MemoryAt): string[] {
  const h: HeapBreakdown = m.heap;
  const workerHeap = h.workers.reduce((n, w) => n + w.heapTotal, 0);
  const external = h.main.external + h.workers.reduce((n, w) => n + w.external, 0);
  return [
    label,
    mib(m.memory.rss),
    mib(m.memory.anon),
    mib(m.memory.file + m.memory.shmem),
    mib(h.main.heapTotal),
    mib(workerHeap),
    mib(external),
    mib(m.memory.rss - h.main.heapTotal - workerHeap - external),
    mib(m.files.db + m.files.wal),
  ];
}

function loadReport(r: LoadResult, inv: Invariants, afterReads: MemoryAt | undefined, settled: MemoryAt | undefined): string[] {
  const i = r.ingest;
  const perCore = i.workerCpuSeconds ? i.indexed / i.workerCpuSeconds : null;
  const produced = r.produce.reduce((n, p) => n + p.records, 0);
  const produceRate = produced / r.produce.reduce((n, p) => n + p.seconds, 0);
  const allKeys = cfg.keys >= BUDGET.rssKeys;
  // With fewer keys than the budget's, a figure already over it can only fail.
  const judge = (bytes: number) =>
    allKeys ? verdict(bytes < BUDGET.rssBytes) : bytes >= BUDGET.rssBytes ? 'FAIL (with fewer keys)' : `n/a (run --keys ${int(BUDGET.rssKeys)})`;
  // What stays once the reads are over: right after them, their dead Buffers are still there
  // until V8 or the idle collection (ops/idle-collection.ts) takes them.
  const finalMemory = settled ?? afterReads ?? r.cleaned;
  const readRows = [['compacted read through the proxy, offset 0 to the end', 'records', 'distinct keys', 'live keys', 's', 'records/s', 'fetches']];
  for (const x of inv.reads) {
    readRows.push([
      x.topic,
      int(x.result.records),
      x.result.distinctKeys === undefined ? 'n/a' : int(x.result.distinctKeys),
      int(x.expected),
      x.result.seconds.toFixed(2),
      int(x.result.recordsPerSec),
      int(x.result.requests.fetch),
    ]);
  }
  const readRecords = inv.reads.reduce((n, x) => n + x.result.records, 0);
  const readSeconds = inv.reads.reduce((n, x) => n + x.result.seconds, 0);
  return [
    `load: ${int(r.records)} records (${int(cfg.keys - cfg.read.keys)} keys written ${r.config.writesPerKey}x each, ${r.config.valueSize} B values) into ${r.config.topics.length} topics of ${int(r.config.topics.reduce((n, t) => n + t.partitions, 0))} partitions, straight to the upstream`,
    `  produced in ${seconds(r.produceSeconds)} (${int(produceRate)} records/s); meanwhile a franz-go consumer read ${r.traffic.mbPerSec.toFixed(1)} MB/s through the proxy (${r.traffic.requests.fetch} fetches)`,
    `  every partition indexed ${seconds(r.indexSeconds)} after the first record; behind the upstream for ${seconds(i.behindSeconds)}, largest backlog ${int(i.maxLag)} records`,
    `  proxy CPU while indexing: worker thread ${i.workerCpuSeconds?.toFixed(1) ?? 'n/a'} s, main thread ${i.mainCpuSeconds?.toFixed(1) ?? 'n/a'} s; GET /status with every partition: ${r.statusMs.toFixed(0)} ms`,
    `  rolled every partition (${r.rollAttempts} roll record(s) each), then cleaned them all on demand in ${seconds(r.cleanSeconds)} (the engine's clean time summed over partitions: ${seconds(r.cleanEngineSeconds)})`,
    '',
    table([
      ['figure', 'value', 'budget', 'result'],
      [
        '(a) indexed records/s per CPU second of the worker thread, while traffic flows',
        perCore === null ? 'n/a' : int(perCore),
        `>= ${int(BUDGET.ingestRecordsPerSec)}`,
        perCore === null ? '' : verdict(perCore >= BUDGET.ingestRecordsPerSec),
      ],
      ['indexed records/s while behind the upstream (wall clock)', i.behindRecordsPerSec === null ? 'never behind' : int(i.behindRecordsPerSec), '', ''],
      ['time to index everything (first record produced to last indexed)', seconds(r.indexSeconds), '', ''],
      ['time to clean everything (on demand, after the roll)', seconds(r.cleanSeconds), '', ''],
      ['(c) RSS with every bulk key indexed', mib(r.indexed.memory.rss), `< ${mib(BUDGET.rssBytes)}`, judge(r.indexed.memory.rss)],
      ['(c) RSS with every bulk key indexed and cleaned', mib(r.cleaned.memory.rss), `< ${mib(BUDGET.rssBytes)}`, judge(r.cleaned.memory.rss)],
      [
        `(c) RSS with all ${int(cfg.keys)} keys (the read sample too) indexed and cleaned, after (b)${settled ? `, once idle (${SETTLE_MS / 1000} s)` : ''}`,
        mib(finalMemory.memory.rss),
        `< ${mib(BUDGET.rssBytes)}`,
        judge(finalMemory.memory.rss),
      ],
      ...(settled && afterReads ? [["    the same right after (b), with the reads' dead Buffers (context)", mib(afterReads.memory.rss), '', '']] : []),
      ['peak RSS (sampled) while indexing, while cleaning', `${mib(r.indexedPeakRss)}, ${mib(r.cleanedPeakRss)}`, '', ''],
    ]).replace(/^/gm, '  '),
    '',
    '  where RSS sits (JS heaps as reserved, Buffers of both threads, from a diagnostic report; the native rest is SQLite, node and V8):',
    table([
      ['state', 'RSS', 'anonymous', 'file+shared', 'main JS heap', 'worker JS heap', 'Buffers', 'native rest', 'index files'],
      memoryRow('indexed', r.indexed),
      memoryRow('cleaned', r.cleaned),
      ...(afterReads ? [memoryRow('+ read sample, after (b)', afterReads)] : []),
      ...(settled ? [memoryRow(`${SETTLE_MS / 1000} s later, idle`, settled)] : []),
    ]).replace(/^/gm, '  '),
    `  index: ${int(r.cleaned.files.files)} files, ${mib(r.indexed.files.db + r.indexed.files.wal)} indexed, ${mib(r.cleaned.files.db + r.cleaned.files.wal)} cleaned (${((r.cleaned.files.db + r.cleaned.files.wal) / inv.expectedRows).toFixed(1)} bytes per live key), -shm maps ${mib(r.cleaned.files.shm)}`,
    '',
    table(readRows).replace(/^/gm, '  '),
    `  in all ${int(readRecords)} records in ${seconds(readSeconds)} (${int(readRecords / Math.max(readSeconds, 1e-9))} records/s)`,
    '',
    `invariants: ${inv.problems.length === 0 ? `OK: ${int(inv.indexedPartitions)} of ${int(inv.partitions)} partitions indexed, ${int(inv.indexRows)} index rows for ${int(inv.expectedRows)} live keys, every read one record per live key` : `FAILED: ${inv.problems.join('; ')}`}`,
  ];
}

function trendRow(label: string, t: Trend): string[] {
  const signed = (bytes: number) => `${bytes >= 0 ? '+' : '-'}${mib(Math.abs(bytes))}`;
  return [
    label,
    mib(t.min),
    mib(t.max),
    mib(t.max - t.min),
    mib(t.mean),
    String(t.floorSamples),
    signed(t.floorSlopePer10Min),
    signed(t.slopePer10Min),
    t.flat === undefined ? 'n/a (cannot tell)' : t.flat ? 'flat' : 'GROWING',
  ];
}

/** The soak's memory by stretches of `seconds`: where a rise levels off shows better than in one slope. */
function segmentRows(samples: SoakSample[], seconds: number, warmUpSeconds: number): string[][] {
  const rows = [['from', 'RSS min', 'RSS max', 'JS heap used min (main, worker)', 'JS heap reserved min (main, worker)', 'Buffers min']];
  const low = (xs: SoakSample[], pick: (s: SoakSample) => number) => mib(Math.min(...xs.map(pick)));
  for (let from = 0; ; from += seconds) {
    const xs = samples.filter((s) => s.at >= from && s.at < from + seconds);
    if (xs.length === 0) break;
    rows.push([
      `${(from / 60).toFixed(0)} min${from < warmUpSeconds ? ' (warm-up)' : ''}`,
      low(xs, (s) => s.rss),
      mib(Math.max(...xs.map((s) => s.rss))),
      `${low(xs, (s) => s.heapUsed.main)}, ${low(xs, (s) => s.heapUsed.worker)}`,
      `${low(xs, (s) => s.heapTotal.main)}, ${low(xs, (s) => s.heapTotal.worker)}`,
      low(xs, (s) => s.external),
    ]);
  }
  return rows;
}

/** Stretches of the soak's segment table. */
const SEGMENT_SECONDS = 300;

function soakReport(r: SoakResult): string[] {
  const c = r.config;
  const produced = r.producers.reduce((n, p) => n + p.records, 0);
  const p99 = Math.max(...r.producers.map((p) => p.latencyMs?.p99 ?? 0));
  const max = Math.max(...r.producers.map((p) => p.latencyMs?.max ?? 0));
  const tailed = r.groups.reduce((n, g) => n + g.records, 0);
  const boot = r.bootstraps.map((b) => b.result);
  const last = r.samples.at(-1)!;
  const first = r.samples[0]!;
  return [
    `soak: ${seconds(c.seconds)} of mixed traffic through the proxy after ${seconds(c.warmUpSeconds)} of warm-up, sampled every ${c.sampleSeconds} s (${r.samples.length} samples; each sample's diagnostic report pauses the proxy's main thread, median ${median(r.samples.map((x) => x.reportMs)).toFixed(0)} ms including the wait for the file)`,
    `  warm-up and soak together: produced ${int(produced)} records (${int(produced / (c.warmUpSeconds + c.seconds))}/s, every ${c.tombstoneEvery}th a tombstone), produce latency p99 ${p99.toFixed(1)} ms (worst topic), max ${max.toFixed(1)} ms`,
    `  ${c.groups} consumer group(s) tailing every bulk topic read ${int(tailed)} records; ${boot.length} new group(s) read a topic from offset 0: ${boot.map((b) => `${int(b.records)} in ${b.seconds.toFixed(1)} s`).join(', ') || 'none'}`,
    `  the cleaner ran ${int(last.cleans - first.cleans)} partition cleans and reaped ${int(last.reaped - first.reaped)} records meanwhile; at the end ${int(last.tombstonesPending)} tombstones wait for their horizon, index lag ${int(last.lag)} records`,
    `  proxy CPU: main thread ${pct((last.cpu.main - first.cpu.main) / (last.at - first.at))}, compaction worker ${pct((last.cpu.worker - first.cpu.worker) / (last.at - first.at))}, whole process ${pct((last.cpu.process - first.cpu.process) / (last.at - first.at))} of a core`,
    '',
    table([
      ['figure', 'min', 'max', 'max-min', 'mean after warm-up', 'floor samples', 'floor slope per 10 min', 'slope per 10 min', 'verdict'],
      trendRow('RSS (floors: after a full collection)', r.trends.rss),
      trendRow('JS heap used, main + worker (floors: after a full collection)', r.trends.heapUsed),
      trendRow('index files, databases + WALs (floors: every sample; informative)', r.trends.indexFiles),
    ]).replace(/^/gm, '  '),
    `  rule: ${FLAT_RULE}; memory is flat when RSS and the JS heaps are: ${r.flat === undefined ? 'n/a (cannot tell)' : r.flat ? 'FLAT' : 'NOT FLAT'}`,
    '',
    `  by ${SEGMENT_SECONDS / 60}-minute stretches of the traffic:`,
    table(segmentRows(r.samples, SEGMENT_SECONDS, c.warmUpSeconds)).replace(/^/gm, '  '),
  ];
}

/**
 * How long the idle proxy is left before the last memory figure: long enough for both threads'
 * idle collections (a look that still saw the reads, the quiet ones, the freeing after it), so what
 * stays shows apart from what a burst of reads holds for a moment.
 */
const SETTLE_MS = (QUIET_LOOKS + 1) * QUIET_MS + 3_000;

async function main(): Promise<void> {
  const missing: string[] = missingPeers().filter((m) => m === 'Kafka jars' || m === 'java');
  if (kbenchMissing()) missing.push('kbench');
  if (missing.length) throw new Error(`test peers missing (${missing.join(', ')}): run bash test/peers/install.sh`);
  const indexDir = path.resolve(args['index-dir'] ?? os.tmpdir());
  const tmp = process.env.KCOMPACT_BENCH_TMPDIR ?? (fs.existsSync('/dev/shm') ? '/dev/shm' : undefined);
  // startKafka places its dirs under os.tmpdir(), which follows TMPDIR.
  if (tmp) process.env.TMPDIR = tmp;

  const started = performance.now();
  log(`starting Kafka 4.4 (compaction off, log under ${tmp ?? 'the default temp dir'}); proxy data under ${indexDir}`);
  // A thousand partitions, tens of consumer groups and 30 minutes of traffic: more than the test
  // bed's 512 MiB broker heap holds.
  const kafka = await startKafka({ compaction: 'off', heapMiB: 2048 });
  const reports = makeTempDir('kcompact-bench-reports-');
  let reference: RunningKafka | undefined;
  let proxy: RunningProxyProcess | undefined;
  const results: { load?: LoadResult; invariants?: Invariants; reads?: ReadResult; afterReads?: MemoryAt; settled?: MemoryAt; soak?: SoakResult } = {};
  try {
    proxy = await startProxyProcess(kafka.bootstrap, 1, {
      nodeArgs: reportNodeArgs(reports.path),
      parentDir: indexDir,
      args: ['--cleaner-backoff-ms', String(cfg.cleanerBackoffMs)],
    });
    log(`Kafka at ${kafka.bootstrap}, proxy at ${proxy.bootstrap} (pid ${proxy.proc.pid}, metrics ${proxy.management}, admin ${proxy.admin})`);
    results.load = await load(kafka.bootstrap, proxy, reports.path, cfg.load, log);
    results.invariants = await checkInvariants(proxy, topics, results.load.rollOffsets, log);
    log('starting the reference: Kafka 4.4 with its cleaner on (fast settings)');
    reference = await startKafka({ compaction: 'reference' });
    results.reads = await measureReads(kafka.bootstrap, proxy, reference, cfg.read, log);
    await reference.stop();
    reference = undefined;
    results.afterReads = await memoryAt(proxy, reports.path);
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    results.settled = await memoryAt(proxy, reports.path);
    if (cfg.soak.seconds > 0) results.soak = await soak(proxy, reports.path, topics, cfg.soak, log);
  } catch (err) {
    // A client error may only be the upstream gone: what the broker last said tells.
    const brokerLog = path.join(kafka.dir, 'stdout.log');
    const said = `${fs.existsSync(brokerLog) ? tail(fs.readFileSync(brokerLog, 'utf8'), 30) : ''}\n${kafka.stderrTail(20)}`;
    throw new Error(`${err instanceof Error ? err.message : String(err)}\nthe upstream Kafka's last log lines:\n${said}`, { cause: err });
  } finally {
    await proxy?.stop();
    await reference?.stop();
    await kafka.stop();
    reports.remove();
  }

  const out = [
    '',
    `kcompact scale benchmark: ${int(cfg.partitions)} compacted partitions, ${int(cfg.keys)} keys, behind one proxy (its own node process, MALLOC_ARENA_MAX=${DEPLOYED_MALLOC_ARENA_MAX}) in front of Apache Kafka 4.4 (cleaner off, one broker);`,
    `Kafka logs on ${tmp ?? 'the default temp dir'}, the proxy's SQLite index under ${indexDir}; figures from a shared ${os.cpus().length}-core machine where Kafka, the proxy and the franz-go clients compete for CPU.`,
    '',
    ...loadReport(results.load, results.invariants, results.afterReads, results.settled),
    '',
    `(b) on a sample of ${cfg.read.partitions} of the ${int(cfg.partitions)} partitions:`,
    ...readReport(results.reads),
  ];
  if (results.soak) out.push('', ...soakReport(results.soak));
  out.push('', `total ${((performance.now() - started) / 1000).toFixed(0)} s`);
  process.stdout.write(out.join('\n') + '\n');
  if (args.json) fs.writeFileSync(args.json, JSON.stringify({ config: cfg, budgets: BUDGET, ...results }, null, 2) + '\n');
  if (results.invariants.problems.length > 0) throw new Error(`invariants failed: ${results.invariants.problems.join('; ')}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
