/**
 * Carriers elected among replicas, as processes (docs/carrying.md, "Who carries"): three
 * `kcompact proxy` processes share one carrier group in front of Kafka 4.4 (cleaner off) and
 * kfake, while keyed updates are written to the store the whole time and each replica cleans
 * every half second.
 *
 * - They settle on one carrier per partition, each partition carried.
 * - SIGKILL of the replica carrying the most: the others take its partitions and carry each of
 *   them again (a pass started after the kill); the time it took is reported.
 * - SIGTERM of another: it has left the group by the time it exits (the coordinator no longer
 *   lists it), not a session timeout later.
 * - Two replicas with empty data directories join under the updates.
 * - SIGSTOP of a carrier past its session timeout: the others take over and carry its
 *   partitions; SIGCONT: it finds out, stops whatever pass it was in, and joins again.
 *
 * Then the updates stop, every replica cleans, and reads from offset 0 through each replica
 * (the bare protocol, CRCs checked) show the same records: only records that were written, at
 * their offsets, each once, and the latest record of every key.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test, type TestContext } from 'node:test';
import kafkajs from 'kafkajs';
import type { StatusReport } from '../../src/ops/admin-reports.js';
import { carrierArgs, startCliProxy, type CliProxy } from '../support/kcompact-cli.js';
import { readPartitionRaw, type RawRecord } from '../support/raw-reader.js';
import { pollUntil, requirePeers, startKafka, startKfake } from '../support/index.js';
import { scrape } from '../support/prometheus.js';

const TOPIC = 'failover';
const PARTITIONS = 6;
const KEYS_PER_PARTITION = 40;
const SESSION_TIMEOUT_MS = 6_000;
/** Generous: the session timeout and a cleaner round, on a machine running two stores, three proxies and clients. */
const FAILOVER_DEADLINE_MS = 120_000;

interface Written {
  key: string;
  value: string;
}

/** Keyed updates straight to the store, every partition in turn; what was written where. */
class Writer {
  readonly written = Array.from({ length: PARTITIONS }, () => new Map<number, Written>());
  private seq = 0;
  private stopped = false;
  private running: Promise<void> | undefined;

  constructor(private readonly producer: kafkajs.Producer) {}

  start(onError: (err: unknown) => void): void {
    this.running = (async () => {
      for (let round = 0; !this.stopped; round++) {
        const partition = round % PARTITIONS;
        const messages = Array.from({ length: 20 }, (_, i) => {
          const key = `p${partition}-k${(round * 7 + i * 3) % KEYS_PER_PARTITION}`;
          return { key, value: `${key}=${this.seq++}`, partition };
        });
        const [meta] = await this.producer.send({ topic: TOPIC, acks: -1, messages });
        const base = Number(meta!.baseOffset);
        messages.forEach((m, i) => this.written[partition]!.set(base + i, { key: m.key, value: m.value }));
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })().catch(onError);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }
}

interface Replica {
  name: string;
  cli: CliProxy;
}

async function statusOf(r: Replica): Promise<StatusReport | undefined> {
  const res = await r.cli.http('/status').catch(() => undefined);
  return res?.status === 200 ? (JSON.parse(res.body) as StatusReport) : undefined;
}

/** The topic's partitions each replica carries, once all are stable in one generation and every partition has one carrier. */
async function settled(replicas: Replica[], what: string): Promise<Map<Replica, number[]>> {
  return pollUntil(`${what}: one carrier per partition among ${replicas.map((r) => r.name).join(', ')}`, 90_000, async () => {
    const statuses = await Promise.all(replicas.map(statusOf));
    if (statuses.some((s) => s?.carrierGroup?.state !== 'stable')) return undefined;
    if (new Set(statuses.map((s) => s!.carrierGroup!.generation)).size !== 1) return undefined;
    const carried = new Map(replicas.map((r, i) => [r, statuses[i]!.carrierGroup!.carried.filter((p) => p.topic === TOPIC).map((p) => p.partition)]));
    const all = [...carried.values()].flat().sort((a, b) => a - b);
    return all.join() === Array.from({ length: PARTITIONS }, (_, p) => p).join() ? carried : undefined;
  });
}

/** The store's log end of every partition now: a pass started later has a larger id. */
async function storeEnds(admin: kafkajs.Admin): Promise<number[]> {
  const offsets = await admin.fetchTopicOffsets(TOPIC);
  return Array.from({ length: PARTITIONS }, (_, p) => Number(offsets.find((o) => o.partition === p)!.high));
}

/** Waits until each partition in `partitions` is carried by one of `replicas` and that replica read a pass of it that began at or past `since[p]`. */
async function carriedAgain(replicas: Replica[], partitions: number[], since: number[], what: string): Promise<number> {
  const started = performance.now();
  await pollUntil(what, FAILOVER_DEADLINE_MS, async () => {
    const statuses = await Promise.all(replicas.map(statusOf));
    const done = partitions.every((p) =>
      statuses.some(
        (s) =>
          s?.carrierGroup?.carried.some((c) => c.topic === TOPIC && c.partition === p) &&
          s.partitions.some((x) => x.topic === TOPIC && x.partition === p && x.lastPass >= since[p]!),
      ),
    );
    return done ? true : undefined;
  });
  return (performance.now() - started) / 1000;
}

function mostCarrying(carried: Map<Replica, number[]>): [Replica, number[]] {
  return [...carried].sort((a, b) => b[1].length - a[1].length)[0]!;
}

function judge(writer: Writer, replica: string, partition: number, records: readonly RawRecord[]): void {
  const written = writer.written[partition]!;
  let previous = -1;
  for (const r of records) {
    assert.ok(r.offset > previous, `${replica} ${TOPIC}-${partition}: offset ${r.offset} after ${previous} (a record twice)`);
    previous = r.offset;
    const w = written.get(r.offset);
    assert.ok(w, `${replica} ${TOPIC}-${partition}: a record at ${r.offset} that was not written there (a copy showing?)`);
    assert.deepEqual({ key: r.key, value: r.value }, w, `${replica} ${TOPIC}-${partition}: the record at ${r.offset} as written`);
  }
  const latest = new Map<string, number>();
  for (const [offset, w] of written) latest.set(w.key, Math.max(offset, latest.get(w.key) ?? -1));
  const seen = new Set(records.map((r) => r.offset));
  const lost = [...latest].filter(([, offset]) => !seen.has(offset));
  assert.deepEqual(lost.slice(0, 5), [], `${replica} ${TOPIC}-${partition}: every key's latest record is there (${lost.length} lost)`);
}

async function scenario(t: TestContext, store: string): Promise<void> {
  const group = `kcompact-failover-${randomUUID()}`;
  const start = (name: string): Promise<Replica> =>
    startCliProxy({ upstream: store, args: [...carrierArgs(group, SESSION_TIMEOUT_MS), '--cleaner-backoff-ms', '500', '--index-on-demand', 'true'] }).then(
      (cli) => ({ name, cli }),
    );
  const replicas: Replica[] = [];
  const gone: Replica[] = [];
  const kafka = new kafkajs.Kafka({ clientId: 'carrier-failover', brokers: [store], logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafka.admin();
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  const writer = new Writer(producer);
  const errors: unknown[] = [];
  try {
    replicas.push(...(await Promise.all(['a', 'b', 'c'].map(start))));
    const through = new kafkajs.Kafka({ clientId: 'carrier-failover', brokers: [replicas[0]!.cli.bootstrap], logLevel: kafkajs.logLevel.NOTHING }).admin();
    await through.connect();
    await through.createTopics({
      waitForLeaders: true,
      topics: [
        {
          topic: TOPIC,
          numPartitions: PARTITIONS,
          configEntries: [
            { name: 'cleanup.policy', value: 'compact' },
            { name: 'segment.ms', value: '300' },
            { name: 'min.cleanable.dirty.ratio', value: '0.01' },
          ],
        },
      ],
    });
    await through.disconnect();
    await Promise.all([admin.connect(), producer.connect()]);
    writer.start((err) => errors.push(err));

    let carried = await settled(replicas, 'three replicas');
    t.diagnostic(`carriers: ${[...carried].map(([r, ps]) => `${r.name}=${ps.join('/')}`).join(' ')}`);
    const none = Array<number>(PARTITIONS).fill(0);
    await carriedAgain(
      replicas,
      Array.from({ length: PARTITIONS }, (_, p) => p),
      none,
      'a first pass of every partition',
    );

    // SIGKILL: the others take its partitions after the session timeout and carry them.
    const [killed, killedPartitions] = mostCarrying(carried);
    process.kill(-killed.cli.pid, 'SIGKILL');
    assert.equal((await killed.cli.waitExit(10_000)).signal, 'SIGKILL');
    const atKill = await storeEnds(admin);
    replicas.splice(replicas.indexOf(killed), 1);
    gone.push(killed);
    const failover = await carriedAgain(replicas, killedPartitions, atKill, `the partitions of ${killed.name} (SIGKILLed) carried by the others`);
    t.diagnostic(
      `failover after SIGKILL of ${killed.name} (${killedPartitions.length} partitions): ${failover.toFixed(1)} s to the next pass of each (session timeout ${SESSION_TIMEOUT_MS / 1000} s, cleaner every 0.5 s)`,
    );
    carried = await settled(replicas, 'after the SIGKILL');

    // SIGTERM: gone from the group by the time the process has exited.
    const [stopped] = mostCarrying(carried);
    const member = (await statusOf(stopped))!.carrierGroup!.memberId;
    await stopped.cli.stop();
    replicas.splice(replicas.indexOf(stopped), 1);
    const described = await admin.describeGroups([group]);
    const members = described.groups[0]!.members.map((m) => m.memberId);
    assert.ok(!members.includes(member), `${stopped.name} left the group as it stopped (members now: ${members.join(', ')})`);
    carried = await settled(replicas, 'after the SIGTERM');

    // Two replicas with empty data directories join while the updates go on.
    replicas.push(...(await Promise.all(['d', 'e'].map(start))));
    carried = await settled(replicas, 'after two joined');
    t.diagnostic(`carriers: ${[...carried].map(([r, ps]) => `${r.name}=${ps.join('/')}`).join(' ')}`);

    // SIGSTOP past the session timeout, then SIGCONT.
    const [paused, pausedPartitions] = mostCarrying(carried);
    process.kill(-paused.cli.pid, 'SIGSTOP');
    const atPause = await storeEnds(admin);
    const others = replicas.filter((r) => r !== paused);
    try {
      const takeover = await carriedAgain(others, pausedPartitions, atPause, `the partitions of ${paused.name} (SIGSTOPped) carried by the others`);
      t.diagnostic(`takeover from the paused ${paused.name}: ${takeover.toFixed(1)} s`);
    } finally {
      process.kill(-paused.cli.pid, 'SIGCONT');
    }
    carried = await settled(replicas, 'after the paused one resumed');
    const fenced = (await scrape(paused.cli.management)).value('kcompact_carry_fenced_total') ?? 0;
    t.diagnostic(
      `${paused.name} resumed: ${fenced} passes stopped for lack of the carrier's mandate; carriers now ${[...carried].map(([r, ps]) => `${r.name}=${ps.join('/')}`).join(' ')}`,
    );

    await writer.stop();
    assert.deepEqual(errors, [], 'the writer never failed');
    const ends = await storeEnds(admin);
    // Every replica reads to the end and cleans (a clean asked for indexes what a replica carries
    // not and its clients did not use); the carriers carry what their clean covered.
    for (const r of replicas) {
      assert.equal((await r.cli.http(`/compact?topic=${TOPIC}`, 'POST')).status, 200);
      await pollUntil(`${r.name} indexed to the end`, 60_000, async () => {
        const s = await statusOf(r);
        const ps = s?.partitions.filter((p) => p.topic === TOPIC) ?? [];
        return ps.length === PARTITIONS && ps.every((p) => p.nextOffset >= ends[p.partition]!) ? true : undefined;
      });
    }
    for (const r of replicas) assert.equal((await r.cli.http(`/compact?topic=${TOPIC}`, 'POST')).status, 200);

    // Each partition is read from the proxy's listener for its leader (upstream broker N at the bootstrap port + 1 + N).
    const [metadata] = (await admin.fetchTopicMetadata({ topics: [TOPIC] })).topics;
    const leaders = new Map(metadata!.partitions.map((p) => [p.partitionId, p.leader]));
    const leaderOf = (r: Replica, p: number) => `127.0.0.1:${Number(r.cli.bootstrap.split(':')[1]) + 1 + leaders.get(p)!}`;
    let reference: RawRecord[][] | undefined;
    for (const r of replicas) {
      const views: RawRecord[][] = [];
      for (let p = 0; p < PARTITIONS; p++) {
        const read = await readPartitionRaw(leaderOf(r, p), TOPIC, p, { timeoutMs: 60_000 });
        judge(writer, r.name, p, read.records);
        views.push(read.records);
      }
      if (reference) assert.deepEqual(views, reference, `${r.name} serves what ${replicas[0]!.name} serves`);
      reference ??= views;
    }
  } finally {
    await writer.stop().catch(() => undefined);
    await Promise.all([admin.disconnect(), producer.disconnect()]).catch(() => undefined);
    await Promise.all([...replicas, ...gone].map((r) => r.cli.stop().catch(() => undefined)));
  }
}

test('elected carriers on Kafka 4.4: SIGKILL, SIGTERM, newcomers, SIGSTOP', { timeout: 600_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const kafka = await startKafka({ compaction: 'off' });
  try {
    await scenario(t, kafka.bootstrap);
  } finally {
    await kafka.stop();
  }
});

test('elected carriers on kfake: SIGKILL, SIGTERM, newcomers, SIGSTOP', { timeout: 600_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const kfake = await startKfake();
  try {
    await scenario(t, kfake.bootstrap);
  } finally {
    await kfake.stop();
  }
});
