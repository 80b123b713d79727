/**
 * `make bench-replicas`: the figures of issue 19 (many sidecars, one cleaner), each against a
 * baseline measured in the same run. The same workload (keys rewritten round after round, straight
 * to the store, the virtual segments rolled after each round) is given to two stores, Apache
 * Kafka 4.4 with its cleaner off:
 *
 *   1. in front of one, a single kcompact carries every partition (alone in its carrier group,
 *      indexing everything it carries); in front of the other, three replicas share one carrier
 *      group, each carrying its share and indexing on demand, with no clients: the bytes of
 *      record batches all of them read from the store to index, find passes and carry (their
 *      metrics), over the single replica's, once every partition's last round is carried;
 *   2. failover: the replica of the three that carries the most is SIGKILLed and one more round
 *      is written meanwhile; the seconds until each of its partitions has a whole pass started
 *      after the kill by another replica (the session timeout, the others' next heartbeat and
 *      cleaner round, a new index of the partition, the pass) are reported with the session
 *      timeout beside them.
 *
 * The bounded start (a new replica's first answer against a read of Kafka's compacted topic) is
 * `make bench-carry`'s figure 2. Timings are reported, never asserted; the exit status is
 * non-zero only on a crash or a broken invariant (a partition not carried, a replica outside the
 * group).
 *
 *   node dist/bench/replicas.js [--topics 4] [--partitions 3] [--keys 2000] [--rounds 5]
 *     [--value-size 100] [--session-timeout-ms 6000] [--json FILE]   (--help lists every flag)
 */
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import kafkajs from 'kafkajs';
import type { StatusReport } from '../src/ops/admin-reports.js';
import { scrape } from '../test/support/prometheus.js';
import { missingPeers, pollUntil, startKafka, type RunningKafka } from '../test/support/index.js';
import { printHelpAndExit } from './bench-help.js';
import { benchDirs } from './bench-dirs.js';
import { numberFlags } from './number-flag.js';
import { createTopics } from './bench-topics.js';
import { startProxyProcess, type RunningProxyProcess } from './proxy-process.js';
import { table } from './text-table.js';

const OPTIONS = {
  topics: { type: 'string', default: '4' },
  partitions: { type: 'string', default: '3' },
  keys: { type: 'string', default: '2000' },
  rounds: { type: 'string', default: '5' },
  'value-size': { type: 'string', default: '100' },
  'session-timeout-ms': { type: 'string', default: '6000' },
  'cleaner-backoff-ms': { type: 'string', default: '1000' },
  'segment-ms': { type: 'string', default: '1000' },
  'index-dir': { type: 'string' },
  json: { type: 'string' },
  help: { type: 'boolean', default: false },
} as const;

const HELP: Record<keyof typeof OPTIONS, string> = {
  topics: 'compacted topics',
  partitions: 'partitions of each',
  keys: 'keys of each partition, every one rewritten once per round',
  rounds: 'rounds of rewrites before the bytes are counted (one more follows the SIGKILL)',
  'value-size': 'value bytes',
  'session-timeout-ms': "the carrier group's session timeout (Kafka's least is 6000)",
  'cleaner-backoff-ms': 'pause between cleaner rounds of every replica',
  'segment-ms': "segment.ms of the topics (kcompact's virtual segments)",
  'index-dir': "parent of the proxies' data directories (default: the system temp dir)",
  json: 'also write every figure to this file',
  help: 'print the flags',
};

const { values: args } = parseArgs({ options: OPTIONS });
if (args.help) printHelpAndExit('node dist/bench/replicas.js [flags]', OPTIONS, HELP);
const number = numberFlags(args);
const TOPICS = Array.from({ length: number('topics') }, (_, i) => `replicas-${i}`);
const PARTITIONS = number('partitions');
const KEYS = number('keys');
const ROUNDS = number('rounds');
const VALUE = Buffer.alloc(number('value-size'), 'v');
const SESSION_TIMEOUT_MS = number('session-timeout-ms', { min: 1000 });
const SEGMENT_MS = number('segment-ms');

const log = (s: string) => process.stderr.write(`bench: ${s}\n`);
const violations: string[] = [];
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Setup {
  store: RunningKafka;
  replicas: RunningProxyProcess[];
  producer: kafkajs.Producer;
  admin: kafkajs.Admin;
  group: string;
}

async function statusOf(r: RunningProxyProcess): Promise<StatusReport> {
  const res = await fetch(`http://${r.admin}/status`);
  if (!res.ok) throw new Error(`GET /status: ${res.status}`);
  return (await res.json()) as StatusReport;
}

const keyOf = (topic: string, partition: number) => `${topic}-${partition}`;
const everyPartition = TOPICS.flatMap((topic) => Array.from({ length: PARTITIONS }, (_, p) => keyOf(topic, p)));

async function start(name: string, count: number, indexDir: string): Promise<Setup> {
  log(`(${name}) starting a store (Kafka 4.4, cleaner off) and ${count} kcompact replica(s) in one carrier group`);
  const store = await startKafka({ compaction: 'off' });
  const group = `kcompact-bench-${randomUUID()}`;
  const replicas: RunningProxyProcess[] = [];
  for (let i = 0; i < count; i++) {
    replicas.push(
      await startProxyProcess(store.bootstrap, 1, {
        parentDir: indexDir,
        args: [
          '--carrier-group',
          group,
          '--carrier-session-timeout-ms',
          String(SESSION_TIMEOUT_MS),
          '--cleaner-backoff-ms',
          String(number('cleaner-backoff-ms')),
          '--index-on-demand',
          'true',
        ],
      }),
    );
  }
  await createTopics(
    replicas[0]!.bootstrap,
    TOPICS.map((topic) => ({
      topic,
      partitions: PARTITIONS,
      configs: { 'cleanup.policy': 'compact', 'segment.ms': String(SEGMENT_MS), 'min.cleanable.dirty.ratio': '0' },
    })),
  );
  const kafka = new kafkajs.Kafka({ clientId: 'kcompact-bench-replicas', brokers: [store.bootstrap], logLevel: kafkajs.logLevel.NOTHING });
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  const admin = kafka.admin();
  await Promise.all([producer.connect(), admin.connect()]);
  const setup = { store, replicas, producer, admin, group };
  await settled(setup, name);
  return setup;
}

/** Waits until every replica holds an assignment of one generation and every partition has one carrier. */
async function settled(s: Setup, what: string): Promise<Map<RunningProxyProcess, string[]>> {
  return pollUntil(`${what}: one carrier per partition`, 120_000, async () => {
    const statuses = await Promise.all(s.replicas.map(statusOf));
    if (statuses.some((x) => x.carrierGroup?.state !== 'stable')) return undefined;
    if (new Set(statuses.map((x) => x.carrierGroup!.generation)).size !== 1) return undefined;
    const carried = new Map(
      s.replicas.map((r, i) => [r, statuses[i]!.carrierGroup!.carried.filter((p) => p.topic.startsWith('replicas-')).map((p) => keyOf(p.topic, p.partition))]),
    );
    const all = [...carried.values()].flat().sort();
    return all.join() === [...everyPartition].sort().join() ? carried : undefined;
  });
}

/** One round: every key of every partition rewritten, then, past segment.ms, one record more in each partition to roll its virtual segment; the roll offsets. */
async function writeRound(s: Setup, round: number): Promise<Map<string, number>> {
  for (const topic of TOPICS) {
    for (let from = 0; from < KEYS; from += 500) {
      await s.producer.send({
        topic,
        acks: -1,
        messages: Array.from({ length: PARTITIONS }, (_, p) =>
          Array.from({ length: Math.min(500, KEYS - from) }, (_, k) => ({
            partition: p,
            key: `k${from + k}`,
            value: VALUE,
            headers: { round: String(round) },
          })),
        ).flat(),
      });
    }
  }
  await sleep(SEGMENT_MS + 200);
  const rolls = new Map<string, number>();
  for (const topic of TOPICS) {
    const meta = await s.producer.send({
      topic,
      acks: -1,
      messages: Array.from({ length: PARTITIONS }, (_, p) => ({ partition: p, key: 'roll', value: VALUE })),
    });
    for (const m of meta) rolls.set(keyOf(topic, m.partition), Number(m.baseOffset));
  }
  return rolls;
}

/**
 * Waits until each partition of `rolls` has, on the replica carrying it, a pass started past its
 * roll record; the seconds it took. A pass runs only once a clean reaches past the last pass's end
 * marker (docs/carrying.md, "A pass"): where the last pass of a round was still writing when its
 * roll went in, the clean up to the roll ends inside that pass and none follows until more is
 * written, as on a live topic. So a partition still waiting gets one more roll record every
 * other segment.ms, as a topic that goes on being written would (min.cleanable.dirty.ratio 0:
 * one record is enough to clean).
 */
async function carriedPast(s: Setup, rolls: Map<string, number>, what: string): Promise<number> {
  const started = performance.now();
  let nudged = started;
  await pollUntil(what, 300_000, async () => {
    const statuses = await Promise.all(s.replicas.map(statusOf));
    const waiting = [...rolls].filter(
      ([key, roll]) =>
        !statuses.some(
          (x) =>
            x.carrierGroup?.carried.some((c) => keyOf(c.topic, c.partition) === key) &&
            x.partitions.some((p) => keyOf(p.topic, p.partition) === key && p.lastPass > roll),
        ),
    );
    if (!waiting.length) return true;
    if (performance.now() - nudged > 2 * SEGMENT_MS) {
      nudged = performance.now();
      for (const topic of TOPICS) {
        const messages = Array.from({ length: PARTITIONS }, (_, p) => p)
          .filter((p) => waiting.some(([key]) => key === keyOf(topic, p)))
          .map((partition) => ({ partition, key: 'roll', value: VALUE }));
        if (messages.length) await s.producer.send({ topic, acks: -1, messages });
      }
    }
    return undefined;
  });
  return (performance.now() - started) / 1000;
}

/**
 * Waits until each of `partitions` has, on a replica now carrying it, a whole pass started at
 * `since` (epoch ms) or later; the seconds from `since` to the last of those passes' starts and
 * to the moment all had ended.
 */
async function passedSince(s: Setup, partitions: string[], since: number): Promise<{ started: number; ended: number }> {
  const starts = await pollUntil('(failover) a pass of each of the killed replica’s partitions by another', 300_000, async () => {
    const statuses = await Promise.all(s.replicas.map(statusOf));
    const found = partitions.map((key) => {
      const carrier = statuses.find((x) => x.carrierGroup?.carried.some((c) => keyOf(c.topic, c.partition) === key));
      return carrier?.partitions.find((p) => keyOf(p.topic, p.partition) === key && p.lastPassMs >= since)?.lastPassMs;
    });
    return found.every((t) => t !== undefined) ? (found as number[]) : undefined;
  });
  return { started: (Math.max(...starts) - since) / 1000, ended: (Date.now() - since) / 1000 };
}

interface Bytes {
  index: number;
  locate: number;
  carry: number;
  total: number;
}

async function bytesRead(replicas: RunningProxyProcess[]): Promise<Bytes> {
  const b = { index: 0, locate: 0, carry: 0, total: 0 };
  for (const r of replicas) {
    const m = await scrape(r.management);
    b.index += m.value('kcompact_index_read_bytes_total') ?? 0;
    b.locate += m.value('kcompact_locate_read_bytes_total') ?? 0;
    b.carry += m.value('kcompact_carry_read_bytes_total') ?? 0;
  }
  b.total = b.index + b.locate + b.carry;
  return b;
}

async function stop(s: Setup | undefined): Promise<void> {
  if (!s) return;
  await Promise.all([s.producer.disconnect(), s.admin.disconnect()]).catch(() => undefined);
  await Promise.all(s.replicas.map((r) => r.stop().catch(() => undefined)));
  await s.store.stop();
}

/** Writes the rounds and waits for each to be carried; the bytes read then. */
async function workload(s: Setup, name: string): Promise<Bytes> {
  for (let round = 1; round <= ROUNDS; round++) {
    const rolls = await writeRound(s, round);
    const seconds = await carriedPast(s, rolls, `(${name}) round ${round} carried`);
    log(`(${name}) round ${round}/${ROUNDS} written and carried (${seconds.toFixed(1)} s after its roll)`);
  }
  return bytesRead(s.replicas);
}

const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;

async function main(): Promise<void> {
  const missing = missingPeers().filter((m) => m === 'Kafka jars' || m === 'java');
  if (missing.length) throw new Error(`test peers missing (${missing.join(', ')}): run bash test/peers/install.sh`);
  const { indexDir } = benchDirs(args);
  const started = performance.now();
  let one: Setup | undefined;
  let three: Setup | undefined;
  try {
    one = await start('one replica', 1, indexDir);
    const oneBytes = await workload(one, 'one replica');
    await stop(one);
    one = undefined;

    three = await start('three replicas', 3, indexDir);
    const threeBytes = await workload(three, 'three replicas');
    const carried = await settled(three, 'before the SIGKILL');
    const [killed, killedPartitions] = [...carried].sort((a, b) => b[1].length - a[1].length)[0]!;
    log(`(failover) SIGKILL of the replica carrying ${killedPartitions.join(', ')}`);
    process.kill(-killed.proc.pid, 'SIGKILL');
    const killedAt = Date.now();
    three.replicas = three.replicas.filter((r) => r !== killed);
    const survivorsBefore = await bytesRead(three.replicas);
    const writing = writeRound(three, ROUNDS + 1);
    const failover = await passedSince(three, killedPartitions, killedAt);
    const rolls = await writing;
    const ofKilled = new Map([...rolls].filter(([key]) => killedPartitions.includes(key)));
    await carriedPast(three, ofKilled, '(failover) the killed replica’s partitions carried by the others past the round');
    // Every key was written in each round: an index holding fewer rows lost survivors.
    for (const x of await Promise.all(three.replicas.map(statusOf))) {
      for (const p of x.partitions) {
        if (killedPartitions.includes(keyOf(p.topic, p.partition)) && p.indexedRecords < KEYS) {
          violations.push(`${keyOf(p.topic, p.partition)} after the failover: ${p.indexedRecords} rows indexed, fewer than its ${KEYS} keys`);
        }
      }
    }
    await settled(three, 'after the SIGKILL').catch((err: unknown) => violations.push(`the two left did not settle: ${String(err)}`));

    const ratio = threeBytes.total / oneBytes.total;
    const rows = [
      ['figure', 'kcompact', 'baseline', 'ratio', 'budget', 'goal', 'verdict'],
      [
        '1. store bytes read by 3 replicas (index + passes)',
        mib(threeBytes.total),
        `${mib(oneBytes.total)} one replica`,
        `${ratio.toFixed(2)}x`,
        '1.5x',
        '1.2x',
        ratio <= 1.2 ? 'goal met' : ratio <= 1.5 ? 'budget met' : 'over budget',
      ],
      [
        '2. SIGKILL to the next pass of each of its partitions',
        `${failover.ended.toFixed(1)} s (started ${failover.started.toFixed(1)} s)`,
        `${(SESSION_TIMEOUT_MS / 1000).toFixed(1)} s session timeout`,
        '',
        '',
        '',
        'reported',
      ],
    ];
    const lines = [
      `kcompact replicas benchmark (issue 19): ${TOPICS.length} topics x ${PARTITIONS} partitions, ${KEYS} keys each rewritten ${ROUNDS} times (${VALUE.length} B values), in front of Apache Kafka 4.4 with its cleaner off; ${((performance.now() - started) / 1000).toFixed(0)} s`,
      '',
      table(rows).trimEnd(),
      '',
      `  one replica: ${mib(oneBytes.index)} indexed, ${mib(oneBytes.locate)} to find passes, ${mib(oneBytes.carry)} read by its passes`,
      `  three replicas: ${mib(threeBytes.index)} indexed, ${mib(threeBytes.locate)} to find passes, ${mib(threeBytes.carry)} read by their passes`,
      `  failover: ${killedPartitions.length} partitions moved (the configs topic counts among what the three divide); the two left read ${mib((await bytesRead(three.replicas)).total - survivorsBefore.total)} more for the round after the kill, their new indexes of the moved partitions included`,
    ];
    if (violations.length) lines.push('', 'VIOLATIONS:', ...violations.map((v) => `  ${v}`));
    process.stdout.write(lines.join('\n') + '\n');
    if (args.json)
      fs.writeFileSync(
        args.json,
        JSON.stringify({ oneBytes, threeBytes, ratio, failoverSeconds: failover.ended, failoverStartSeconds: failover.started, violations }, null, 2),
      );
  } finally {
    await stop(one);
    await stop(three);
  }
  if (violations.length) process.exitCode = 1;
}

await main();
