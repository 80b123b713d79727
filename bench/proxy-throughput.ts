/*
 * `make bench`: produce and consume throughput, and publish and end-to-end latency at a fixed
 * rate, directly to an upstream and through the proxy, in the same run, with the budget
 * per line:
 *   proxy/direct throughput >= 0.85, and at most 0.5 ms added to p99 publish latency at 10k records/s.
 *
 * The latency mode is the one Kroxylicious publishes (50k records/s of 1 KiB there: --rate 50000
 * --latency-value-size 1024): publish latency is a record's produce acknowledgement, end-to-end
 * its arrival at a consumer in kbench's own process reading through the same path (so through
 * the proxy when the producer is), both from the record's scheduled send time; records the
 * consumer never received are counted and printed, not left out silently. --e2e off drops the
 * consumer, so the proxy's CPU figure is the produce path's alone.
 *
 * One Apache Kafka 4.4 broker (compaction off) serves both paths; the proxy runs as its own
 * process from the CLI so it does not share an event loop with this orchestrator, and kbench
 * (franz-go, test/peers/go/cmd/kbench) generates the load. Machines are noisy, so every
 * measurement runs as a direct/proxied pair back to back (ABAB...), over several rounds, and the
 * table shows medians and the ratio of medians. Budgets are reported, never asserted: the exit
 * status is non-zero only when something crashed.
 *
 * Reference relays (bench/relays.ts) run every mode too: a Go relay that splices bytes
 * without ever copying them to user space, and a plain Node socket pipe. What they reach on the
 * same machine in the same run is what any proxy could reach, before any Kafka work; in the
 * latency mode, what any hop adds on this machine, and the proxy's latency beside theirs.
 *
 * --cpu-layout sidecar splits the CPUs as a sidecar deployment does (taskset): Kafka and kbench
 * on the first half, the proxy and the relays on the rest, so the relay's own work no longer
 * takes CPU from the broker and the client it is measured against; shared (the default) lets
 * every process run anywhere.
 *
 *   node dist/bench/proxy-throughput.js [--rounds 7] [--produce-records 600000]
 *     [--consume-records 1500000] [--value-size 1024] [--partitions 4] [--latency-seconds 5] [--latency-value-size 100]
 *     [--rate 10000] [--e2e on|off] [--modes produce,consume,latency]
 *     [--relays splice-relay,node-pipe|none] [--cpu-layout shared|sidecar] [--cpu-prof DIR] [--json FILE]
 *
 * Kafka's log lives under $KCOMPACT_BENCH_TMPDIR (default /dev/shm when it exists) so disk
 * writeback, which is not the proxy's cost, stays out of the figures.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import kafkajs from 'kafkajs';
import { missingPeers, startKafka } from '../test/support/index.js';
import { printHelpAndExit } from './bench-help.js';
import { profileReport } from './cpu-profile.js';
import { kbench, kbenchMissing, type KbenchResult } from './kbench.js';
import { cpuSeconds } from './proc-stats.js';
import { startProxyProcess, type RunningProxyProcess } from './proxy-process.js';
import { median, table } from './text-table.js';
import { krelayMissing, relayListeners, RELAYS, startRelay, type Relay, type RelayKind } from './relays.js';
import { numberFlags } from './number-flag.js';

const THROUGHPUT_BUDGET = 0.85;
const ADDED_P99_BUDGET_MS = 0.5;

const OPTIONS = {
  rounds: { type: 'string', default: '7' },
  'produce-records': { type: 'string', default: '600000' },
  'consume-records': { type: 'string', default: '1500000' },
  'value-size': { type: 'string', default: '1024' },
  'latency-value-size': { type: 'string', default: '100' },
  partitions: { type: 'string', default: '4' },
  'latency-seconds': { type: 'string', default: '5' },
  rate: { type: 'string', default: '10000' },
  e2e: { type: 'string', default: 'on' },
  modes: { type: 'string', default: 'produce,consume,latency' },
  relays: { type: 'string', default: RELAYS.join(',') },
  'cpu-layout': { type: 'string', default: 'shared' },
  'cpu-prof': { type: 'string' },
  json: { type: 'string' },
  help: { type: 'boolean', default: false },
} as const;

const HELP: Record<keyof typeof OPTIONS, string> = {
  rounds: 'direct/proxied pairs per mode; medians are reported',
  'produce-records': 'records kbench produces per produce measurement',
  'consume-records': 'records kbench consumes per consume measurement',
  'value-size': 'value bytes per record',
  'latency-value-size': 'value bytes per record of the fixed-rate latency runs (1024 to size CPU per MB/s as Kroxylicious does)',
  partitions: 'partitions of the bench topic',
  'latency-seconds': 'seconds of each fixed-rate latency measurement',
  rate: 'records/s of the fixed-rate latency measurements',
  e2e: 'on: the latency runs also read their records back through the same path and report end-to-end latency; off: publish latency only',
  modes: 'which of produce, consume, latency to run',
  relays: 'reference relays to run beside the proxy (none for none)',
  'cpu-layout': 'shared: every process anywhere; sidecar: Kafka and kbench on the first half of the CPUs, the proxy and relays on the rest',
  'cpu-prof': 'write CPU profiles of the proxy here and report them',
  json: 'also write every figure to this file',
  help: 'print the flags',
};

const { values: args } = parseArgs({ options: OPTIONS });
if (args.help) printHelpAndExit('node dist/bench/proxy-throughput.js [flags]', OPTIONS, HELP);

const positive = numberFlags(args);
if (args.e2e !== 'on' && args.e2e !== 'off') throw new Error(`--e2e takes on or off, got ${args.e2e}`);
const e2e = args.e2e === 'on';

const cfg = {
  rounds: positive('rounds'),
  produceRecords: positive('produce-records'),
  consumeRecords: positive('consume-records'),
  valueSize: positive('value-size'),
  latencyValueSize: positive('latency-value-size'),
  partitions: positive('partitions'),
  latencySeconds: positive('latency-seconds'),
  rate: positive('rate'),
};

type Path = 'direct' | 'proxy' | RelayKind;

const LAYOUTS = ['shared', 'sidecar'] as const;
type Layout = (typeof LAYOUTS)[number];
if (!(LAYOUTS as readonly string[]).includes(args['cpu-layout'])) throw new Error(`--cpu-layout takes ${LAYOUTS.join(' or ')}, got ${args['cpu-layout']}`);
const layout = args['cpu-layout'] as Layout;

/** The CPUs of each side in the sidecar layout (taskset lists): the client's side and the proxy's. */
function sidecarCpus(): { client: string; proxy: string } {
  const n = os.cpus().length;
  if (n < 2) throw new Error(`--cpu-layout sidecar needs two CPUs or more; this machine has ${n}`);
  const half = Math.floor(n / 2);
  const list = (from: number, to: number) => (from === to ? String(from) : `${from}-${to}`);
  return { client: list(0, half - 1), proxy: list(half, n - 1) };
}
const cpus = layout === 'sidecar' ? sidecarCpus() : undefined;

/** Keeps a running process, every thread it has and will start, on these CPUs. */
function pin(pid: number, list: string): void {
  execFileSync('taskset', ['-a', '-p', '-c', list, String(pid)], { stdio: 'ignore' });
}
const MODES = ['produce', 'consume', 'latency'] as const;
type Mode = (typeof MODES)[number];

const modes: Mode[] = args.modes.split(',').map((m) => {
  if (!(MODES as readonly string[]).includes(m)) throw new Error(`--modes takes a comma-separated list of ${MODES.join(', ')}, got ${m}`);
  return m as Mode;
});

const relays: RelayKind[] =
  args.relays === 'none' || args.relays === ''
    ? []
    : args.relays.split(',').map((r) => {
        if (!(RELAYS as readonly string[]).includes(r)) throw new Error(`--relays takes a comma-separated list of ${RELAYS.join(', ')} or none, got ${r}`);
        return r as RelayKind;
      });

/** The paths each mode is measured on: every one, so that what any hop adds to latency is seen beside the proxy's. */
function pathsFor(): Path[] {
  return ['direct', 'proxy', ...relays];
}

interface Run extends KbenchResult {
  round: number;
  path: Path;
  /** CPU seconds the proxy or relay process in the path spent during the run (user + system). */
  pathCpuSeconds: number | null;
}

const TOPICS = { produce: 'bench-produce', consume: 'bench-consume', latency: 'bench-latency' } as const;

function flagsFor(mode: Mode): string[] {
  switch (mode) {
    case 'produce':
      return ['--count', String(cfg.produceRecords), '--value-size', String(cfg.valueSize)];
    case 'consume':
      return ['--count', String(cfg.consumeRecords)];
    case 'latency':
      return ['--rate', String(cfg.rate), '--duration', `${cfg.latencySeconds}s`, '--value-size', String(cfg.latencyValueSize), `--e2e=${e2e}`];
  }
}

async function createTopics(bootstrap: string): Promise<void> {
  const admin = new kafkajs.Kafka({ clientId: 'kcompact-bench', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    await admin.createTopics({
      waitForLeaders: true,
      topics: [
        {
          topic: TOPICS.produce,
          numPartitions: cfg.partitions,
          // Every round appends produce-records to this topic; keep only the last few hundred MB.
          configEntries: [
            { name: 'segment.bytes', value: String(64 << 20) },
            { name: 'retention.bytes', value: String(256 << 20) },
          ],
        },
        { topic: TOPICS.consume, numPartitions: cfg.partitions },
        { topic: TOPICS.latency, numPartitions: 1 },
      ],
    });
  } finally {
    await admin.disconnect();
  }
}

interface Line {
  label: string;
  mode: Mode;
  direct: number;
  proxy: number;
  /** Median over rounds of the round's own proxy/direct ratio or difference: less swayed by drift. */
  paired: number;
  /** 'ratio': proxy/direct against a floor; 'added': proxy - direct against a ceiling. */
  kind: 'ratio' | 'added';
  budget: number | null;
  digits: number;
}

function summarize(runs: Run[]): Line[] {
  const med = (mode: Mode, p: Path, pick: (r: Run) => number) => median(runs.filter((r) => r.mode === mode && r.path === p).map(pick));
  const pairs = (mode: Mode, pick: (r: Run) => number, kind: Line['kind']) =>
    runs
      .filter((r) => r.mode === mode && r.path === 'proxy')
      .flatMap((p) => {
        const d = runs.find((r) => r.mode === mode && r.path === 'direct' && r.round === p.round);
        return d ? [kind === 'ratio' ? pick(p) / pick(d) : pick(p) - pick(d)] : [];
      });
  const line = (label: string, mode: Mode, pick: (r: Run) => number, kind: Line['kind'], budget: number | null, digits: number): Line => ({
    label,
    mode,
    direct: med(mode, 'direct', pick),
    proxy: med(mode, 'proxy', pick),
    paired: median(pairs(mode, pick, kind)),
    kind,
    budget,
    digits,
  });
  const at = `@${cfg.rate / 1000}k rec/s`;
  const lines = [
    line('produce MB/s', 'produce', (r) => r.mbPerSec, 'ratio', THROUGHPUT_BUDGET, 1),
    line('produce records/s', 'produce', (r) => r.recordsPerSec, 'ratio', THROUGHPUT_BUDGET, 0),
    line('consume MB/s', 'consume', (r) => r.mbPerSec, 'ratio', THROUGHPUT_BUDGET, 1),
    line('consume records/s', 'consume', (r) => r.recordsPerSec, 'ratio', THROUGHPUT_BUDGET, 0),
    line(`publish avg ms ${at}`, 'latency', (r) => r.latencyMs!.avg, 'added', null, 3),
    line(`publish p50 ms ${at}`, 'latency', (r) => r.latencyMs!.p50, 'added', null, 3),
    line(`publish p90 ms ${at}`, 'latency', (r) => r.latencyMs!.p90, 'added', null, 3),
    line(`publish p99 ms ${at}`, 'latency', (r) => r.latencyMs!.p99, 'added', ADDED_P99_BUDGET_MS, 3),
    line(`publish p99.9 ms ${at}`, 'latency', (r) => r.latencyMs!.p999, 'added', null, 3),
    ...(e2e
      ? [
          line(`end-to-end avg ms ${at}`, 'latency', (r) => r.e2eMs?.avg ?? NaN, 'added', null, 3),
          line(`end-to-end p50 ms ${at}`, 'latency', (r) => r.e2eMs?.p50 ?? NaN, 'added', null, 3),
          line(`end-to-end p99 ms ${at}`, 'latency', (r) => r.e2eMs?.p99 ?? NaN, 'added', null, 3),
          line(`end-to-end p99.9 ms ${at}`, 'latency', (r) => r.e2eMs?.p999 ?? NaN, 'added', null, 3),
        ]
      : []),
  ];
  return lines.filter((l) => modes.includes(l.mode));
}

function formatLine(l: Line): string[] {
  const n = (x: number) => x.toLocaleString('en-US', { minimumFractionDigits: l.digits, maximumFractionDigits: l.digits });
  if (l.kind === 'ratio') {
    const ratio = l.proxy / l.direct;
    const verdict = l.budget === null ? '' : ratio >= l.budget ? 'PASS' : 'FAIL';
    return [l.label, n(l.direct), n(l.proxy), ratio.toFixed(3), l.paired.toFixed(3), l.budget === null ? '' : `>= ${l.budget}`, verdict];
  }
  const added = l.proxy - l.direct;
  const verdict = l.budget === null ? '' : added <= l.budget ? 'PASS' : 'FAIL';
  const ms = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(3)} ms`;
  return [l.label, n(l.direct), n(l.proxy), ms(added), ms(l.paired), l.budget === null ? '' : `<= +${l.budget} ms`, verdict];
}

function perRoundTable(runs: Run[]): string {
  const rows = [
    [
      'round',
      'path',
      'produce MB/s',
      'produce rec/s',
      'consume MB/s',
      'consume rec/s',
      'pub avg ms',
      'pub p50 ms',
      'pub p99 ms',
      'pub p99.9 ms',
      'e2e avg ms',
      'e2e p99 ms',
      'e2e received',
      'proxy CPU s',
    ],
  ];
  for (let round = 1; round <= cfg.rounds; round++) {
    for (const p of ['direct', 'proxy', ...relays] as const) {
      const get = (mode: Mode) => runs.find((r) => r.round === round && r.path === p && r.mode === mode);
      const prod = get('produce');
      const cons = get('consume');
      const lat = get('latency');
      const present = [prod, cons, lat].filter((r) => r !== undefined);
      if (present.length === 0) continue;
      const cpu = p === 'proxy' ? present.reduce((s, r) => s + (r.pathCpuSeconds ?? NaN), 0) : NaN;
      const fixed = (x: number | undefined, digits: number) => (x === undefined ? '' : x.toFixed(digits));
      rows.push([
        String(round),
        p,
        fixed(prod?.mbPerSec, 1),
        fixed(prod?.recordsPerSec, 0),
        fixed(cons?.mbPerSec, 1),
        fixed(cons?.recordsPerSec, 0),
        fixed(lat?.latencyMs!.avg, 3),
        fixed(lat?.latencyMs!.p50, 3),
        fixed(lat?.latencyMs!.p99, 3),
        fixed(lat?.latencyMs!.p999, 3),
        fixed(lat?.e2eMs?.avg, 3),
        fixed(lat?.e2eMs?.p99, 3),
        lat?.received === undefined ? '' : `${lat.received}/${lat.records}`,
        Number.isNaN(cpu) ? '' : cpu.toFixed(2),
      ]);
    }
  }
  return table(rows);
}

/** Whether the end-to-end reader got every record: its percentiles leave out the ones it did not. */
function receipts(runs: Run[]): string[] {
  const lat = runs.filter((r) => r.mode === 'latency' && r.received !== undefined);
  if (lat.length === 0) return [];
  const short = lat.filter((r) => r.missing !== 0);
  if (short.length === 0) return [`end-to-end: the reader received every record produced, in every run (${lat.length} runs).`];
  return [
    `end-to-end: records produced but not received within the drain wait, left out of the end-to-end figures:`,
    ...short.map((r) => `  round ${r.round} ${r.path}: ${r.missing} of ${r.records}`),
  ];
}

/** The reference relays against direct and the proxy against them, with the CPU each spends. */
function relayTable(runs: Run[]): string {
  const rows = [['median', 'relay', 'MB/s', 'relay vs direct', 'paired', 'proxy vs relay', 'relay CPU s/GB', 'proxy CPU s/GB']];
  const of = (mode: Mode, p: Path) => runs.filter((r) => r.mode === mode && r.path === p);
  const perGb = (rs: Run[]) => rs.reduce((s, r) => s + (r.pathCpuSeconds ?? NaN), 0) / (rs.reduce((s, r) => s + r.bytes, 0) / 1e9);
  for (const mode of modes.filter((m) => m !== 'latency')) {
    const direct = median(of(mode, 'direct').map((r) => r.mbPerSec));
    const proxy = median(of(mode, 'proxy').map((r) => r.mbPerSec));
    for (const relay of relays) {
      const rs = of(mode, relay);
      const mb = median(rs.map((r) => r.mbPerSec));
      const paired = median(
        rs.flatMap((r) => {
          const d = of(mode, 'direct').find((x) => x.round === r.round);
          return d ? [r.mbPerSec / d.mbPerSec] : [];
        }),
      );
      rows.push([
        `${mode} MB/s`,
        relay,
        mb.toFixed(1),
        (mb / direct).toFixed(3),
        paired.toFixed(3),
        (proxy / mb).toFixed(3),
        perGb(rs).toFixed(2),
        perGb(of(mode, 'proxy')).toFixed(2),
      ]);
    }
  }
  const lines = ['reference relays, same Kafka, same run (splice-relay: Go, splice(2), bytes never in user space; node-pipe: Node sockets piped):'];
  if (rows.length > 1) lines.push(table(rows));
  if (modes.includes('latency')) lines.push(relayLatency(runs));
  return lines.join('\n');
}

/** Latency through each relay against direct, and the proxy's against each relay: what any hop adds here, and what the proxy adds to that. */
function relayLatency(runs: Run[]): string {
  const rows = [['median, ms', 'relay', 'through it', 'relay vs direct', 'proxy vs relay']];
  const of = (p: Path) => runs.filter((r) => r.mode === 'latency' && r.path === p);
  const figures: [string, (r: Run) => number][] = [
    ['publish avg', (r) => r.latencyMs!.avg],
    ['publish p50', (r) => r.latencyMs!.p50],
    ['publish p99', (r) => r.latencyMs!.p99],
    ...(e2e
      ? ([
          ['end-to-end avg', (r: Run) => r.e2eMs?.avg ?? NaN],
          ['end-to-end p99', (r: Run) => r.e2eMs?.p99 ?? NaN],
        ] as [string, (r: Run) => number][])
      : []),
  ];
  const signed = (n: number) => `${n >= 0 ? '+' : ''}${n.toFixed(3)}`;
  for (const relay of relays) {
    for (const [label, pick] of figures) {
      const r = median(of(relay).map(pick));
      rows.push([label, relay, r.toFixed(3), signed(r - median(of('direct').map(pick))), signed(median(of('proxy').map(pick)) - r)]);
    }
  }
  return table(rows);
}

/** The proxy's CPU per record and per GB, by mode: what the proxy itself costs, whatever the noise. */
function proxyCost(runs: Run[]): string {
  const parts: string[] = [];
  for (const mode of ['produce', 'consume', 'latency'] as const) {
    const rs = runs.filter((r) => r.path === 'proxy' && r.mode === mode && r.pathCpuSeconds !== null);
    if (rs.length === 0) continue;
    const cpu = rs.reduce((s, r) => s + r.pathCpuSeconds!, 0);
    const wall = rs.reduce((s, r) => s + r.seconds, 0);
    const records = rs.reduce((s, r) => s + r.records, 0);
    const requests = rs.reduce((s, r) => s + (mode === 'consume' ? r.requests.fetch : r.requests.produce), 0);
    const gb = rs.reduce((s, r) => s + r.bytes, 0) / 1e9;
    // CPU seconds per GB is millicores per MB/s sustained (a GB at 1 MB/s takes 1,000 s): the figure proxies size by.
    // The latency runs are the fixed-rate ones, as Kroxylicious measures its figure; the others run flat out.
    // With --e2e on the proxy also carried the records back out to kbench's reader, at the same bytes again.
    const fixedRate = mode !== 'latency' ? '' : e2e ? ' at the fixed rate, produce plus the end-to-end reader' : ' at the fixed rate';
    const perGb = `${(cpu / gb).toFixed(2)} CPU s/GB = ${(cpu / gb).toFixed(1)} millicores per MB/s${fixedRate}, `;
    parts.push(
      `${mode}: ${perGb}${((1e6 * cpu) / requests).toFixed(1)} CPU µs per ${mode === 'consume' ? 'Fetch' : 'Produce'} request ` +
        `(${(records / requests).toFixed(1)} records each), ${((100 * cpu) / wall).toFixed(0)}% of a core`,
    );
  }
  return parts.map((p) => `  ${p}`).join('\n');
}

async function main(): Promise<void> {
  const missing: string[] = missingPeers().filter((m) => m === 'Kafka jars' || m === 'java');
  if (kbenchMissing()) missing.push('kbench');
  if (relays.includes('splice-relay') && krelayMissing()) missing.push('krelay');
  if (missing.length) throw new Error(`test peers missing (${missing.join(', ')}): run bash test/peers/install.sh`);
  const tmp = process.env.KCOMPACT_BENCH_TMPDIR ?? (fs.existsSync('/dev/shm') ? '/dev/shm' : undefined);
  // startKafka and makeTempDir place their dirs under os.tmpdir(), which follows TMPDIR.
  if (tmp) process.env.TMPDIR = tmp;
  const cpuProfDir = args['cpu-prof'] ? path.resolve(args['cpu-prof']) : undefined;
  if (cpuProfDir) fs.mkdirSync(cpuProfDir, { recursive: true });

  const log = (s: string) => process.stderr.write(`bench: ${s}\n`);
  log(`starting Kafka 4.4 (compaction off, log under ${tmp ?? 'the default temp dir'})`);
  const listeners = await relayListeners();
  const kafka = await startKafka({
    compaction: 'off',
    properties: { 'log.retention.check.interval.ms': 5000 },
    extraListeners: relays.map((r) => listeners[r]),
  });
  if (cpus) pin(kafka.pid(), cpus.client);
  let proxy: RunningProxyProcess | undefined;
  const started: Relay[] = [];
  const runs: Run[] = [];
  try {
    proxy = await startProxyProcess(kafka.bootstrap, 1, { cpuProfDir });
    if (cpus) pin(proxy.proc.pid, cpus.proxy);
    log(`Kafka at ${kafka.bootstrap}, proxy at ${proxy.bootstrap} (pid ${proxy.proc.pid})`);
    for (const r of relays) started.push(await startRelay(r, listeners[r]));
    if (cpus) for (const r of started) pin(r.pid, cpus.proxy);
    await createTopics(kafka.bootstrap);
    // Only the consume runs read this topic; filling it for nothing would still load the machine.
    if (modes.includes('consume')) {
      log(`filling ${TOPICS.consume} with ${cfg.consumeRecords} records of ${cfg.valueSize} bytes`);
      await kbench(
        'produce',
        kafka.bootstrap,
        TOPICS.consume,
        ['--count', String(cfg.consumeRecords), '--value-size', String(cfg.valueSize)],
        undefined,
        cpus?.client,
      );
    }

    const targets = new Map<Path, { bootstrap: string; pid: number | null }>([
      ['direct', { bootstrap: kafka.bootstrap, pid: null }],
      ['proxy', { bootstrap: proxy.bootstrap, pid: proxy.proc.pid }],
      ...started.map((r): [Path, { bootstrap: string; pid: number }] => [r.kind, { bootstrap: r.bootstrap, pid: r.pid }]),
    ]);
    for (let round = 1; round <= cfg.rounds; round++) {
      for (const mode of modes) {
        for (const p of pathsFor()) {
          const target = targets.get(p)!;
          const cpu0 = target.pid === null ? null : cpuSeconds(target.pid);
          const r = await kbench(mode, target.bootstrap, TOPICS[mode], flagsFor(mode), undefined, cpus?.client);
          const cpu1 = target.pid === null ? null : cpuSeconds(target.pid);
          const why = proxy.crashed();
          if (why) throw new Error(why);
          runs.push({ ...r, round, path: p, pathCpuSeconds: cpu0 !== null && cpu1 !== null ? cpu1 - cpu0 : null });
          const pub = r.latencyMs ? ` publish avg ${r.latencyMs.avg} ms p99 ${r.latencyMs.p99} ms` : '';
          const e2eMs = r.e2eMs ? ` end-to-end avg ${r.e2eMs.avg} ms p99 ${r.e2eMs.p99} ms` : '';
          const missing = r.missing ? `, ${r.missing} records never received` : '';
          const lat = `${pub}${e2eMs}${missing}`;
          log(`round ${round} ${mode} ${p}: ${r.mbPerSec.toFixed(1)} MB/s ${r.recordsPerSec.toFixed(0)} rec/s${lat}`);
        }
      }
    }
  } finally {
    // SIGTERM lets the proxy exit on its own, which is when node writes the CPU profile.
    await proxy?.stop();
    for (const r of started) await r.stop();
    await kafka.stop();
  }

  const lines = summarize(runs);
  const workloads: Record<Mode, string> = {
    produce: `produce: ${cfg.produceRecords} records of ${cfg.valueSize} B, ${cfg.partitions} partitions, franz-go acks=all idempotent linger 5 ms batch 1 MiB`,
    consume: `consume: ${cfg.consumeRecords} records from offset 0, no group, fetch max 50 MiB / 1 MiB per partition`,
    latency:
      `latency: ${cfg.rate} records/s of ${cfg.latencyValueSize} B for ${cfg.latencySeconds} s (first second left out), linger 0, one partition; publish = produce ack, ` +
      (e2e
        ? `end-to-end = arrival at a franz-go consumer in the producer's process reading through the same path from the log end, both from the scheduled send time`
        : `no end-to-end reader (--e2e off)`),
  };
  const out = [
    '',
    `kcompact proxy benchmark: Apache Kafka 4.4 (compaction off, one broker) direct vs through the proxy (separate node process)`,
    `${cfg.rounds} rounds, each measurement run as a direct/proxied pair back to back; medians over rounds, ratio of medians`,
    ...modes.map((m) => workloads[m]),
    `MB = 10^6 bytes of key+value. Kafka keeps its log on ${tmp ?? 'the default temp dir'} and runs with the test bed's JVM flags (512 MiB, SerialGC, C1 only).`,
    cpus
      ? `CPUs split as a sidecar has them (--cpu-layout sidecar): Kafka (JVM) and kbench on CPU ${cpus.client}, the proxy (node) and the relays on CPU ${cpus.proxy}.`
      : `Figures come from a shared ${os.cpus().length}-core machine: Kafka (JVM), the proxy (node) and kbench compete for CPU.`,
    '',
    table([['median', 'direct', 'proxy', 'proxy vs direct', 'paired', 'budget', 'result'], ...lines.map(formatLine)]),
    `proxy vs direct: ratio (throughput) or difference (latency) of the medians, which the budget judges;`,
    `paired: median over rounds of each round's own ratio or difference, for a second opinion under drifting load.`,
    ...receipts(runs),
    '',
    'per round:',
    perRoundTable(runs),
    '',
    'proxy process CPU while proxying (user + system, from /proc):',
    proxyCost(runs),
  ];
  if (relays.length > 0) out.push('', relayTable(runs));
  if (cpuProfDir) out.push('', profileReport(cpuProfDir));
  process.stdout.write(out.join('\n') + '\n');
  if (args.json) fs.writeFileSync(args.json, JSON.stringify({ config: { ...cfg, layout, e2e }, runs, summary: lines }, null, 2) + '\n');
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
