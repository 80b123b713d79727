/**
 * `make bench-compaction`: the compaction budgets of issue 3, measured in one run with the proxy
 * as its own process (from the CLI) in front of Apache Kafka 4.4 with its cleaner off:
 *
 *   (a) the key index keeps up with >= 200k records/s on one core while the proxy serves traffic
 *       (compaction-ingest.ts);
 *   (b) reading a compacted topic of 1M records over 10k keys from offset 0 through kcompact is
 *       >= 10x faster than reading the raw log through the proxy, and within 2x of reading the
 *       same data from Kafka 4.4's own compacted topic (compaction-read.ts; a second Kafka with
 *       its cleaner on is the reference);
 *   (c) the proxy stays under 300 MiB resident with 10M keys indexed (compaction-memory.ts).
 *
 * It also reports the index's size on disk per record. Budgets are reported, never asserted: the
 * exit status is non-zero only when something crashed. Kafka's logs live under
 * $KCOMPACT_BENCH_TMPDIR (default /dev/shm when it exists), the proxies' data directories (the
 * SQLite index) under --index-dir (default the system temp dir), as a pod's emptyDir would be.
 *
 *   node dist/bench/compaction.js [--phases ingest,read,memory] [--ingest-records 2000000]
 *     [--read-records 1000000] [--read-keys 10000] [--read-rounds 5]
 *     [--memory-keys 1000000,3000000,10000000] [--index-dir DIR]
 *     [--cpu-prof DIR] [--json FILE]   (--help lists every flag)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { printHelpAndExit } from './bench-help.js';
import { benchDirs } from './bench-dirs.js';
import { makeTempDir, missingPeers, startKafka, type RunningKafka } from '../test/support/index.js';
import { kworkloadMissing } from '../test/support/differential.js';
import { deleteTopics } from './bench-topics.js';
import { INGEST_TOPICS, measureIngest, type IngestResult } from './compaction-ingest.js';
import { measureMemory, type MemoryResult } from './compaction-memory.js';
import { measureReads, READ_TOPICS, type ReadResult } from './compaction-read.js';
import { BUDGET, int, mib, readReport, verdict } from './compaction-report.js';
import { profileReport, profileThreadId } from './cpu-profile.js';
import { reportNodeArgs, type HeapBreakdown } from './heap-report.js';
import type { Memory } from './proc-stats.js';
import { kbenchMissing } from './kbench.js';
import { DEPLOYED_MALLOC_ARENA_MAX, startProxyProcess, type RunningProxyProcess } from './proxy-process.js';
import { table } from './text-table.js';
import { numberFlags } from './number-flag.js';

const PHASES = ['ingest', 'read', 'memory'] as const;
type Phase = (typeof PHASES)[number];

const OPTIONS = {
  phases: { type: 'string', default: PHASES.join(',') },
  'ingest-records': { type: 'string', default: '2000000' },
  'ingest-keys': { type: 'string', default: '1000000' },
  'ingest-partitions': { type: 'string', default: '1' },
  'ingest-value-size': { type: 'string', default: '100' },
  'traffic-records': { type: 'string', default: '200000' },
  'read-records': { type: 'string', default: '1000000' },
  'read-keys': { type: 'string', default: '10000' },
  'read-batch': { type: 'string', default: '500' },
  'read-value-size': { type: 'string', default: '100' },
  'read-rounds': { type: 'string', default: '5' },
  'memory-keys': { type: 'string', default: '1000000,3000000,10000000' },
  'memory-value-size': { type: 'string', default: '32' },
  'segment-ms': { type: 'string', default: '1000' },
  'index-dir': { type: 'string' },
  'cpu-prof': { type: 'string' },
  json: { type: 'string' },
  help: { type: 'boolean', default: false },
} as const;

const HELP: Record<keyof typeof OPTIONS, string> = {
  phases: 'which of ingest (a), read (b), memory (c) to run',
  'ingest-records': '(a) records produced while the index keeps up',
  'ingest-keys': '(a) key space, drawn at random',
  'ingest-partitions': '(a) partitions of the indexed topic',
  'ingest-value-size': '(a) value bytes',
  'traffic-records': '(a) 1 KiB records the background consumer reads through the proxy, over and over',
  'read-records': '(b) records in the compacted topic',
  'read-keys': '(b) keys, updated uniformly at random',
  'read-batch': '(b) records per produced batch',
  'read-value-size': '(b) value bytes',
  'read-rounds': '(b) rounds of reads; medians are reported',
  'memory-keys': '(c) distinct keys indexed after each step',
  'memory-value-size': '(c) value bytes',
  'segment-ms': 'segment.ms of the compacted topics of (b) and (c) (how soon a roll makes everything cleanable)',
  'index-dir': "parent of the proxies' data directories (default: the system temp dir)",
  'cpu-prof': 'write CPU profiles of the proxy processes (main and worker threads) here and report them',
  json: 'also write every figure to this file',
  help: 'print the flags',
};

const { values: args } = parseArgs({ options: OPTIONS });

if (args.help) printHelpAndExit('node dist/bench/compaction.js [flags]', OPTIONS, HELP);

const positive = numberFlags(args);

const phases = new Set(
  String(args.phases)
    .split(',')
    .map((p) => {
      if (!(PHASES as readonly string[]).includes(p)) throw new Error(`--phases: unknown phase ${p} (ingest, read, memory)`);
      return p as Phase;
    }),
);
const memorySteps = String(args['memory-keys']).split(',').map(Number);
if (memorySteps.some((n, i) => !Number.isInteger(n) || n <= 0 || (i > 0 && n <= memorySteps[i - 1]!)))
  throw new Error(`--memory-keys must be ascending positive integers, got ${args['memory-keys']}`);

const cfg = {
  ingest: {
    records: positive('ingest-records'),
    keys: positive('ingest-keys'),
    partitions: positive('ingest-partitions'),
    valueSize: positive('ingest-value-size'),
    trafficRecords: positive('traffic-records'),
  },
  read: {
    records: positive('read-records'),
    keys: positive('read-keys'),
    batchRecords: positive('read-batch'),
    valueSize: positive('read-value-size'),
    rounds: positive('read-rounds'),
    segmentMs: positive('segment-ms'),
  },
  memory: { steps: memorySteps, valueSize: positive('memory-value-size'), segmentMs: positive('segment-ms') },
};

const log = (s: string) => process.stderr.write(`bench: ${s}\n`);

function ingestReport(r: IngestResult): string[] {
  const c = r.config;
  const perCore = r.workerCpuSeconds ? r.indexed / r.workerCpuSeconds : null;
  const rows = [
    ['figure', 'value', 'budget', 'result'],
    [
      'indexed records/s while behind the upstream (wall clock)',
      r.behindRecordsPerSec === null ? 'never behind' : int(r.behindRecordsPerSec),
      `>= ${int(BUDGET.ingestRecordsPerSec)}`,
      r.behindRecordsPerSec === null ? '' : verdict(r.behindRecordsPerSec >= BUDGET.ingestRecordsPerSec),
    ],
    [
      'indexed records/s per CPU second of the worker thread (one core)',
      perCore === null ? 'n/a' : int(perCore),
      `>= ${int(BUDGET.ingestRecordsPerSec)}`,
      perCore === null ? '' : verdict(perCore >= BUDGET.ingestRecordsPerSec),
    ],
    ['indexed records/s overall (first to last record, wall clock)', int(r.recordsPerSec), '', ''],
  ];
  return [
    '(a) index ingest while the proxy serves traffic',
    `  produced ${int(r.produce.records + 1)} records (${c.valueSize} B values, ${int(c.keys)} random keys, ${c.partitions} partition(s)) straight to the upstream: ${int(r.produce.recordsPerSec)} records/s, ${int(r.produce.records / Math.max(1, r.produce.batches))} records per batch`,
    `  meanwhile a franz-go consumer read another topic through the proxy: ${r.traffic.mbPerSec.toFixed(1)} MB/s, ${int(r.traffic.recordsPerSec)} records/s, ${r.traffic.requests.fetch} fetches over ${r.traffic.seconds.toFixed(1)} s`,
    `  the engine indexed ${int(r.indexed)} records in ${r.seconds.toFixed(2)} s; behind the upstream for ${r.behindSeconds.toFixed(2)} s, largest backlog ${int(r.maxLag)} records`,
    `  proxy CPU meanwhile: worker thread ${r.workerCpuSeconds?.toFixed(2) ?? 'n/a'} s, main thread ${r.mainCpuSeconds?.toFixed(2) ?? 'n/a'} s, whole process ${r.processCpuSeconds?.toFixed(2) ?? 'n/a'} s`,
    `  index on disk: ${mib(r.indexBytes)}, ${(r.indexBytes / r.indexed).toFixed(1)} bytes per record (not yet cleaned)`,
    '',
    table(rows).replace(/^/gm, '  '),
  ];
}

/** Where RSS sits: JS heaps and Buffers of the main thread and the worker(s), the native rest. */
function memoryParts(m: Memory, h: HeapBreakdown): string[] {
  const workerHeap = h.workers.reduce((n, w) => n + w.heapTotal, 0);
  const external = h.main.external + h.workers.reduce((n, w) => n + w.external, 0);
  return [
    mib(m.rss),
    mib(m.anon),
    mib(m.file + m.shmem),
    mib(h.main.heapTotal),
    mib(workerHeap),
    mib(external),
    mib(m.rss - h.main.heapTotal - workerHeap - external),
  ];
}

function memoryReport(r: MemoryResult): string[] {
  const rows = [['keys', 'records', 'produce+index s', 'clean s', 'RSS indexed', 'RSS cleaned', 'peak (VmHWM)', 'index on disk', 'bytes/record']];
  for (const s of r.steps) {
    rows.push([
      int(s.keys),
      int(s.records),
      s.indexSeconds.toFixed(1),
      s.cleanSeconds.toFixed(1),
      mib(s.indexed.rss),
      mib(s.cleaned.rss),
      mib(Math.max(s.cleaned.peakRss, s.sampledPeakRss)),
      mib(s.indexBytes),
      (s.indexBytes / s.records).toFixed(1),
    ]);
  }
  const parts = [['keys', 'state', 'RSS', 'anonymous', 'file+shared', 'main JS heap', 'worker JS heap', 'Buffers', 'native rest']];
  for (const s of r.steps) {
    parts.push([int(s.keys), 'indexed', ...memoryParts(s.indexed, s.heapIndexed)], [int(s.keys), 'cleaned', ...memoryParts(s.cleaned, s.heapCleaned)]);
  }
  const last = r.steps.at(-1)!;
  const peak = Math.max(last.cleaned.peakRss, last.sampledPeakRss, r.read.sampledPeakRss, r.read.during.peakRss);
  const atBudget = last.keys >= BUDGET.rssKeys;
  const judge = (bytes: number) => (atBudget ? verdict(bytes < BUDGET.rssBytes) : `n/a (run --memory-keys up to ${int(BUDGET.rssKeys)})`);
  const lines = [
    `(c) resident memory of the proxy process (its own process, from an empty data directory, MALLOC_ARENA_MAX=${DEPLOYED_MALLOC_ARENA_MAX} as deploy/Dockerfile sets it)`,
    `  distinct keys written straight to the upstream in steps, ${r.config.valueSize} B values; after each step a roll and a clean (the survivor set of every key then lives in memory)`,
    `  idle proxy before the first record: RSS ${mib(r.baseline.rss)}`,
    '',
    table(rows).replace(/^/gm, '  '),
    '',
    '  where it sits (JS heaps as reserved, Buffers of both threads, from a diagnostic report; the native rest is SQLite, node and V8):',
    table(parts).replace(/^/gm, '  '),
  ];
  const x = r.read.result;
  lines.push(
    `  then a franz-go reader went through the compacted view: ${int(x.records)} records in ${x.seconds.toFixed(1)} s (${x.requests.fetch} fetches); RSS peak while reading ${mib(r.read.sampledPeakRss)}`,
  );
  lines.push(
    '',
    table([
      ['budget', 'value', 'budget', 'result'],
      [`RSS with ${int(last.keys)} keys indexed`, mib(last.indexed.rss), `< ${mib(BUDGET.rssBytes)} at ${int(BUDGET.rssKeys)} keys`, judge(last.indexed.rss)],
      [
        `RSS with ${int(last.keys)} keys indexed and cleaned`,
        mib(last.cleaned.rss),
        `< ${mib(BUDGET.rssBytes)} at ${int(BUDGET.rssKeys)} keys`,
        judge(last.cleaned.rss),
      ],
      [
        `peak RSS (VmHWM) up to ${int(last.keys)} keys, a full read included`,
        mib(peak),
        `< ${mib(BUDGET.rssBytes)} at ${int(BUDGET.rssKeys)} keys`,
        judge(peak),
      ],
    ]).replace(/^/gm, '  '),
  );
  return lines;
}

function profileSection(dir: string, name: string): string[] {
  if (!fs.existsSync(dir)) return [];
  const files = fs.readdirSync(dir);
  const workers = [...new Set(files.map(profileThreadId).filter((t): t is number => t !== undefined && t > 0))];
  return [
    '',
    profileReport(dir, { title: `${name}: main thread (${dir})`, files: (f) => profileThreadId(f) === 0 }),
    ...workers.flatMap((t) => ['', profileReport(dir, { title: `${name}: worker thread ${t} (${dir})`, files: (f) => profileThreadId(f) === t })]),
  ];
}

async function main(): Promise<void> {
  const missing: string[] = missingPeers().filter((m) => m === 'Kafka jars' || m === 'java');
  if (kbenchMissing()) missing.push('kbench');
  if (kworkloadMissing()) missing.push('kworkload');
  if (missing.length) throw new Error(`test peers missing (${missing.join(', ')}): run bash test/peers/install.sh`);
  const { indexDir, tmp, cpuProf, profDir } = benchDirs(args);
  const proxyArgs = ['--cleaner-backoff-ms', '3600000'];

  const started = performance.now();
  log(`starting Kafka 4.4 (compaction off, log under ${tmp ?? 'the default temp dir'}); proxy data under ${indexDir}`);
  const kafka = await startKafka({ compaction: 'off' });
  let reference: RunningKafka | undefined;
  let proxy: RunningProxyProcess | undefined;
  const results: { ingest?: IngestResult; read?: ReadResult; memory?: MemoryResult } = {};
  try {
    if (phases.has('ingest') || phases.has('read')) {
      proxy = await startProxyProcess(kafka.bootstrap, 1, { cpuProfDir: profDir('ingest-read'), parentDir: indexDir, args: proxyArgs });
      log(`Kafka at ${kafka.bootstrap}, proxy at ${proxy.bootstrap} (pid ${proxy.proc.pid}, metrics ${proxy.management}, admin ${proxy.admin})`);
      if (phases.has('ingest')) results.ingest = await measureIngest(kafka.bootstrap, proxy, cfg.ingest, log);
      if (phases.has('read')) {
        log('starting the reference: Kafka 4.4 with its cleaner on (fast settings)');
        reference = await startKafka({ compaction: 'reference' });
        results.read = await measureReads(kafka.bootstrap, proxy, reference, cfg.read, log);
        await reference.stop();
        reference = undefined;
      }
      // Through the proxy, so that their compaction configs go too: a later proxy must not index them.
      await deleteTopics(proxy.bootstrap, [...(phases.has('ingest') ? INGEST_TOPICS : []), ...(phases.has('read') ? READ_TOPICS : [])]);
      await proxy.stop();
      proxy = undefined;
    }
    if (phases.has('memory')) {
      const reports = makeTempDir('kcompact-bench-reports-');
      proxy = await startProxyProcess(kafka.bootstrap, 1, {
        cpuProfDir: profDir('memory'),
        nodeArgs: reportNodeArgs(reports.path),
        parentDir: indexDir,
        args: proxyArgs,
      });
      log(`memory phase: a fresh proxy at ${proxy.bootstrap} (pid ${proxy.proc.pid})`);
      results.memory = await measureMemory(kafka.bootstrap, proxy, reports.path, cfg.memory, log);
      await proxy.stop();
      proxy = undefined;
      reports.remove();
    }
  } finally {
    // SIGTERM lets a proxy exit on its own, which is when node writes its CPU profiles.
    await proxy?.stop();
    await reference?.stop();
    await kafka.stop();
  }

  const out = [
    '',
    'kcompact compaction benchmark: the proxy as its own node process (from the CLI) in front of Apache Kafka 4.4 (cleaner off, one broker);',
    `Kafka logs on ${tmp ?? 'the default temp dir'}, the proxy's SQLite index under ${indexDir}; cleaning on demand (POST /compact), the periodic cleaner idle.`,
    `Figures come from a shared ${os.cpus().length}-core machine: Kafka (JVM), the proxy (node, main thread + compaction worker thread) and the franz-go clients compete for CPU.`,
  ];
  if (results.ingest) out.push('', ...ingestReport(results.ingest));
  if (results.read) out.push('', ...readReport(results.read));
  if (results.memory) out.push('', ...memoryReport(results.memory));
  out.push('', `total ${((performance.now() - started) / 1000).toFixed(0)} s`);
  if (cpuProf)
    out.push(...profileSection(path.join(cpuProf, 'ingest-read'), 'proxy of (a) and (b)'), ...profileSection(path.join(cpuProf, 'memory'), 'proxy of (c)'));
  process.stdout.write(out.join('\n') + '\n');
  if (args.json) fs.writeFileSync(args.json, JSON.stringify({ config: cfg, budgets: BUDGET, ...results }, null, 2) + '\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
