/**
 * Share groups (KIP-932) read the compacted view (docs/semantics.md, "Share groups"). The same
 * records go to Apache Kafka 4.4 with its own cleaner on (the reference) and, through kcompact,
 * to Kafka 4.4 with its cleaner off; both are cleaned to the same point (the uncleaned head holds
 * an aborted and a committed transaction). Then every client with a share consumer reads the
 * topic in a new share group on each side, at both isolation levels: the same records at the same
 * offsets, each delivered once; two members of one group share them out; a member that releases
 * every record at its first delivery gets each again, with its delivery count; what a member
 * that leaves without acknowledging goes to the one that stays, counted; and the group's
 * state afterwards (start offset and lag, after one more record) is the same on both sides.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import kafkajs from 'kafkajs';
import { CLIENTS } from '../support/client-matrix/drivers/index.js';
import type { ClientDriver, ShareDelivery, ShareOffsets, ShareReadFixture } from '../support/client-matrix/types.js';
import { startCliProxy, type CliProxy } from '../support/kcompact-cli.js';
import { pollUntil, requirePeers, startKafka, type RunningKafka } from '../support/index.js';
import { scrape } from '../support/prometheus.js';
import { readPartitionRaw } from '../support/raw-reader.js';
import { createCompactedTopic } from '../support/topics.js';

const TOPIC = 'queued';
const KEYS = 10;
const ROUNDS = 10;
/**
 * Long enough that the roll and the two transactions after it share the last (uncleaned) segment
 * on both sides. Each side rolls on its own clock: at 1 s, a loaded machine once took longer than
 * that over the transactions through kcompact, whose segment rolled (and whose aborted records
 * were then cleaned) where Kafka's did not.
 */
const SEGMENT_MS = 5_000;
const IDLE_MS = 2_000;

interface Side {
  name: string;
  /** Where clients connect: the reference broker itself, or kcompact in front of the store. */
  bootstrap: string;
}

/** Keyed updates, the last round only half the keys (a tombstone among them), a roll past segment.ms, then two transactions. */
async function write(bootstrap: string): Promise<void> {
  const kafka = new kafkajs.Kafka({ clientId: 'share-groups', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafka.admin();
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  const txn = kafka.producer({ transactionalId: `share-groups-${bootstrap}`, idempotent: true, maxInFlightRequests: 1 });
  try {
    await Promise.all([admin.connect(), producer.connect(), txn.connect()]);
    // delete.retention.ms: the tombstone stays through every clean of the test, on both sides.
    await createCompactedTopic(admin, TOPIC, { 'segment.ms': String(SEGMENT_MS), 'min.cleanable.dirty.ratio': '0.01', 'delete.retention.ms': '86400000' });
    for (let round = 0; round < ROUNDS; round++) {
      // The last round updates half the keys: the round before keeps the other half, with gaps between them.
      const keys = round === ROUNDS - 1 ? KEYS / 2 : KEYS;
      const messages = Array.from({ length: keys }, (_, k) => ({ key: `key-${k}`, value: round === ROUNDS - 1 && k === 3 ? null : `value-${k}-${round}` }));
      await producer.send({ topic: TOPIC, acks: -1, messages });
    }
    await new Promise((resolve) => setTimeout(resolve, SEGMENT_MS * 2));
    await producer.send({ topic: TOPIC, acks: -1, messages: [{ key: 'roll', value: 'roll' }] });
    const aborted = await txn.transaction();
    await aborted.send({ topic: TOPIC, messages: [0, 1, 2].map((i) => ({ key: `txn-${i}`, value: `aborted-${i}` })) });
    await aborted.abort();
    const committed = await txn.transaction();
    await committed.send({ topic: TOPIC, messages: [3, 4].map((i) => ({ key: `txn-${i}`, value: `committed-${i}` })) });
    await committed.commit();
  } finally {
    await Promise.allSettled([admin.disconnect(), producer.disconnect(), txn.disconnect()]);
  }
}

const view = (read: Awaited<ReturnType<typeof readPartitionRaw>>) => read.records.map(({ offset, key, value }) => ({ offset, key, value }));

/** Writes to both sides and cleans both up to the roll: kcompact on demand, the reference's cleaner on its own. */
async function prepare(reference: Side, proxied: Side, proxy: CliProxy): Promise<ReturnType<typeof view>> {
  await Promise.all([write(reference.bootstrap), write(proxied.bootstrap)]);
  const res = await proxy.http(`/compact?topic=${TOPIC}`, 'POST');
  assert.equal(res.status, 200, res.body);
  const cleaned = view(await readPartitionRaw(proxied.bootstrap, TOPIC, 0, { timeoutMs: 30_000 }));
  assert.ok(cleaned.length < ROUNDS * KEYS, `kcompact cleaned: ${cleaned.length} records left`);
  // Kafka's cleaner thread runs on its own schedule; a loaded machine delays it by tens of seconds.
  let kafkaView: ReturnType<typeof view> = [];
  await pollUntil("Kafka's cleaner to leave the same records", 180_000, async () => {
    kafkaView = view(await readPartitionRaw(reference.bootstrap, TOPIC, 0, { timeoutMs: 30_000 }));
    return JSON.stringify(kafkaView) === JSON.stringify(cleaned) ? true : undefined;
  }).catch((err: unknown) => {
    const offsets = (v: ReturnType<typeof view>) => v.map((r) => r.offset).join(',');
    throw new Error(`${String(err)}: Kafka's cleaner left offsets ${offsets(kafkaView)}, kcompact ${offsets(cleaned)}`, { cause: err });
  });
  return cleaned;
}

/** What the Java share op answers: the deliveries and the group's state of partition 0 after them. */
type ShareRun = { records: ShareDelivery[] } & Partial<ShareOffsets>;

const comparable = (records: readonly ShareDelivery[]) =>
  records
    .map(({ offset, key, value, deliveryCount }) => ({ offset, key, value, deliveryCount }))
    .sort((a, b) => a.offset - b.offset || a.deliveryCount - b.deliveryCount);

/** The same share read on both sides, side by side; what each side delivered. */
async function both(client: ClientDriver, sides: readonly Side[], f: ShareReadFixture): Promise<ShareDelivery[][]> {
  return Promise.all(sides.map(async (s) => (await client.shareRead!(s.bootstrap, f)).records));
}

function onceEach(records: readonly ShareDelivery[], where: string): void {
  const offsets = records.map((r) => r.offset);
  assert.equal(new Set(offsets).size, offsets.length, `${where}: a record delivered twice`);
}

test.after(() => Promise.all(CLIENTS.map((c) => c.close?.())));

test('share groups get the compacted view, as from Kafka 4.4 with its cleaner on', { timeout: 600_000 }, async (t: TestContext) => {
  if (!requirePeers(t)) return;
  let reference: RunningKafka | undefined;
  let store: RunningKafka | undefined;
  let proxy: CliProxy | undefined;
  try {
    [reference, store] = await Promise.all([startKafka({ compaction: 'reference' }), startKafka({ compaction: 'off' })]);
    proxy = await startCliProxy({ upstream: store.bootstrap, args: ['--carrier-group', 'none', '--cleaner-backoff-ms', '3600000'] });
    const sides: Side[] = [
      { name: 'Kafka with its cleaner', bootstrap: reference.bootstrap },
      { name: 'kcompact', bootstrap: proxy.bootstrap },
    ];
    const cleaned = await prepare(sides[0]!, sides[1]!, proxy);
    const committed = cleaned.filter((r) => !r.value?.startsWith('aborted-'));
    assert.equal(cleaned.length - committed.length, 3, 'the aborted transaction is in the uncleaned head: the isolation levels differ');
    t.diagnostic(`${(ROUNDS - 1) * KEYS + KEYS / 2 + 1 + 5} records written, ${cleaned.length} left by the cleaners (${committed.length} committed)`);

    const sharing = CLIENTS.filter((c) => c.shareRead);
    assert.deepEqual(
      sharing.map((c) => c.id),
      ['java', 'librdkafka', 'franz-go'],
      'the clients with a share consumer',
    );
    let run = 0;
    const group = (what: string) => `share-${what}-${run++}`;

    // Java at both levels; the others at one each.
    const [java, librdkafka, franzGo] = sharing as [ClientDriver, ClientDriver, ClientDriver];
    const reads = [
      [java, 'read_uncommitted'],
      [java, 'read_committed'],
      [librdkafka, 'read_committed'],
      [franzGo, 'read_uncommitted'],
    ] as const;
    // Each read has a group of its own, so they go side by side.
    const delivered = await Promise.all(
      reads.map(([client, isolation]) =>
        both(client, sides, {
          topic: TOPIC,
          group: group(client.id),
          isolation,
          expected: (isolation === 'read_committed' ? committed : cleaned).length,
          idleMs: IDLE_MS,
        }),
      ),
    );
    for (const [i, [client, isolation]] of reads.entries()) {
      const expected = isolation === 'read_committed' ? committed : cleaned;
      const [kafka, through] = delivered[i]!;
      onceEach(kafka!, `${client.name} on Kafka`);
      onceEach(through!, `${client.name} through kcompact`);
      assert.deepEqual(
        comparable(kafka!).map(({ offset, key, value }) => ({ offset, key, value })),
        expected,
        `${client.name} at ${isolation}: Kafka's own delivery`,
      );
      assert.deepEqual(comparable(through!), comparable(kafka!), `${client.name} at ${isolation}: through kcompact as from Kafka`);
      t.diagnostic(`${client.name} at ${isolation}: ${through!.length} records, as from Kafka`);
    }

    const members = { topic: TOPIC, group: group('members'), isolation: 'read_committed', expected: committed.length, idleMs: IDLE_MS, members: 2 } as const;
    const [kafkaMembers, throughMembers] = await both(java, sides, members);
    onceEach(throughMembers!, 'two members through kcompact');
    assert.deepEqual(comparable(throughMembers!), comparable(kafkaMembers!), 'two members: together, the same records');
    t.diagnostic(`two members through kcompact: ${[0, 1].map((m) => throughMembers!.filter((r) => r.member === m).length).join(' and ')} records`);

    const released = {
      topic: TOPIC,
      group: group('release'),
      isolation: 'read_uncommitted',
      expected: cleaned.length,
      idleMs: IDLE_MS,
      release: true,
    } as const;
    const [kafkaReleased, throughReleased] = await both(java, sides, released);
    assert.deepEqual(comparable(throughReleased!), comparable(kafkaReleased!), 'released records come again, counted');
    assert.deepEqual([...new Set(throughReleased!.map((r) => r.deliveryCount))].sort(), [1, 2], 'each record delivered twice');

    // A member that leaves with records it never acknowledged: the broker gives them to the other, counted.
    const leaving = { topic: TOPIC, group: group('leave'), isolation: 'read_committed', expected: committed.length, idleMs: IDLE_MS, leave: true } as const;
    const [kafkaLeft, throughLeft] = await Promise.all(sides.map(async (s) => (await java.shareRead!(s.bootstrap, leaving)) as ShareRun));
    for (const [run, where] of [
      [kafkaLeft!, 'on Kafka'],
      [throughLeft!, 'through kcompact'],
    ] as const) {
      const left = run.records.filter((r) => r.member === 1);
      const stayed = run.records.filter((r) => r.member === 0);
      assert.ok(left.length > 0, `${where}: the leaving member got records`);
      onceEach(stayed, `${where}: the member that stayed`);
      assert.deepEqual(
        comparable(stayed).map(({ offset, key, value }) => ({ offset, key, value })),
        committed,
        `${where}: the member that stayed got every record`,
      );
      // What the leaving member's poll returned comes again, counted. It may also have acquired
      // records its poll never returned (fetched ahead): those come again counted too, on Kafka as
      // through kcompact, so a record the leaver never showed may count 2 as well.
      const again = new Set(left.map((r) => r.offset));
      for (const r of stayed) {
        if (again.has(r.offset)) assert.equal(r.deliveryCount, 2, `${where}: offset ${r.offset}'s delivery count, after the leaver had it`);
        else assert.ok(r.deliveryCount === 1 || r.deliveryCount === 2, `${where}: offset ${r.offset}'s delivery count ${r.deliveryCount}`);
      }
      assert.equal(run.lag, 0, `${where}: nothing is left stuck in the group`);
    }
    t.diagnostic(`a member left with ${throughLeft!.records.filter((r) => r.member === 1).length} records through kcompact, all delivered again`);

    // The group's state: after one more record, read by the first group, both sides agree.
    const first = 'share-java-0';
    for (const s of sides) {
      const kafka = new kafkajs.Kafka({ clientId: 'share-groups', brokers: [s.bootstrap], logLevel: kafkajs.logLevel.NOTHING });
      const producer = kafka.producer();
      await producer.connect();
      await producer.send({ topic: TOPIC, acks: -1, messages: [{ key: 'after', value: 'after' }] });
      await producer.disconnect();
    }
    const [kafkaAfter, throughAfter] = await both(java, sides, { topic: TOPIC, group: first, isolation: 'read_uncommitted', expected: 1, idleMs: IDLE_MS });
    assert.deepEqual(
      comparable(throughAfter!).map((r) => r.key),
      ['after'],
      'the group gets the new record only',
    );
    assert.deepEqual(comparable(throughAfter!), comparable(kafkaAfter!));
    const states = await Promise.all(sides.map((s) => java.shareOffsets!(s.bootstrap, first, TOPIC)));
    assert.deepEqual(states[1], states[0], "the group's start offset and lag");
    t.diagnostic(`the group's state on both sides: ${JSON.stringify(states[0])}`);
    const removed = (await scrape(proxy.management)).value('kcompact_share_fetch_filtered_records_total') ?? 0;
    assert.ok(removed > 0, `kcompact_share_fetch_filtered_records_total counts what the view removed (${removed})`);
  } finally {
    await proxy?.stop().catch(() => undefined);
    await Promise.allSettled([reference?.stop(), store?.stop()]);
  }
});
