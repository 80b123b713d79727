/**
 * A pass lets go only what every share group has finished (docs/carrying.md, "A pass"). A share
 * group reads a compacted topic that kcompact carries, in front of Kafka 4.4 with its cleaner
 * off; more rounds of updates follow that the group has not read when the carrier cleans and
 * carries. The pass keeps the store from the group's start offset on, instead of letting go of
 * the survivors the group has yet to read (the store would move the group past them, and the
 * share view does not deliver copies). The group then gets exactly the survivors past its start,
 * as the compacted view shows them, and once it has finished them the store lets the range go.
 *
 * A share group new to the partition after a pass let its range go starts at the store's log
 * start: it gets the survivors below it from the pass's copies, at their original offsets, as
 * Kafka delivers them from offset 0, and its acknowledgements of them settle the copies; a group
 * that had read the range where it was gets none of them again.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import kafkajs from 'kafkajs';
import type { CleanReport } from '../../src/engine/api/engine-reports.js';
import { confluentKafka, franzGo } from '../support/client-matrix/drivers/bed-clients.js';
import { javaClients } from '../support/client-matrix/drivers/java.js';
import { carrierArgs, startCliProxy, waitCarrying, type CliProxy } from '../support/kcompact-cli.js';
import { pollUntil, requirePeers, startKafka, type RunningKafka } from '../support/index.js';
import { scrape } from '../support/prometheus.js';
import { askOnce } from '../support/raw-client.js';
import { ApiKey } from '../../src/protocol/messages.js';
import { readPartitionRaw } from '../support/raw-reader.js';
import { createCompactedTopic } from '../support/topics.js';

const TOPIC = 'queued-carried';
const KEYS = 20;
const SEGMENT_MS = 300;
const IDLE_MS = 1_500;

/** One store and one carrying proxy for both tests (each on a topic of its own). */
interface Bed {
  store: RunningKafka;
  proxy: CliProxy;
  /** Through kcompact. */
  admin: kafkajs.Admin;
  producer: kafkajs.Producer;
  /** Straight to the store. */
  storeAdmin: kafkajs.Admin;
}
let bed: Promise<Bed> | undefined;
const bedOf = () =>
  (bed ??= (async () => {
    const store = await startKafka({ compaction: 'off' });
    try {
      const proxy = await startCliProxy({ upstream: store.bootstrap, args: [...carrierArgs(), '--cleaner-backoff-ms', '3600000'] });
      const kafka = new kafkajs.Kafka({ clientId: 'share-carrying', brokers: [proxy.bootstrap], logLevel: kafkajs.logLevel.NOTHING });
      const storeAdmin = new kafkajs.Kafka({ clientId: 'share-carrying', brokers: [store.bootstrap], logLevel: kafkajs.logLevel.NOTHING }).admin();
      const admin = kafka.admin();
      const producer = kafka.producer({ allowAutoTopicCreation: false });
      await Promise.all([admin.connect(), storeAdmin.connect(), producer.connect()]);
      return { store, proxy, admin, producer, storeAdmin };
    } catch (err) {
      await store.stop();
      throw err;
    }
  })());

test.after(async () => {
  await javaClients.close?.();
  const b = await bed?.catch(() => undefined);
  if (b) await Promise.allSettled([b.admin.disconnect(), b.storeAdmin.disconnect(), b.producer.disconnect()]);
  await b?.proxy.stop().catch(() => undefined);
  await b?.store.stop();
});

test('a pass keeps what a share group has not finished, and lets it go once it has', { timeout: 300_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const { store, proxy, admin, producer, storeAdmin } = await bedOf();
  await createCompactedTopic(admin, TOPIC, { 'segment.ms': String(SEGMENT_MS), 'min.cleanable.dirty.ratio': '0.01' });
  await waitCarrying(proxy, 2);
  const round = async (n: number) => {
    await producer.send({ topic: TOPIC, acks: -1, messages: Array.from({ length: KEYS }, (_, k) => ({ key: `key-${k}`, value: `value-${k}-${n}` })) });
    await new Promise((resolve) => setTimeout(resolve, SEGMENT_MS * 2));
    await producer.send({ topic: TOPIC, acks: -1, messages: [{ key: 'roll', value: `roll-${n}` }] });
  };
  const compact = async () => {
    const res = await proxy.http(`/compact?topic=${TOPIC}`, 'POST');
    assert.equal(res.status, 200, res.body);
    return JSON.parse(res.body) as CleanReport;
  };
  const storeStart = async () => Number((await storeAdmin.fetchTopicOffsets(TOPIC))[0]!.low);
  const group = 'share-carried';
  const read = (expected: number) => javaClients.shareRead!(proxy.bootstrap, { topic: TOPIC, group, isolation: 'read_uncommitted', expected, idleMs: IDLE_MS });

  await round(0);
  const first = await read(KEYS + 1);
  assert.equal(first.records.length, KEYS + 1, 'the group read the first round and its roll');
  const { startOffset } = await javaClients.shareOffsets!(store.bootstrap, group, TOPIC);
  t.diagnostic(`the group stands at ${startOffset}`);

  await round(1);
  await round(2);
  const report = await compact();
  const pass = report.carried.find((c) => c.topic === TOPIC);
  assert.ok(pass, `the clean carried the topic: ${JSON.stringify(report)}`);
  assert.ok(pass.releaseEnd > startOffset, `the pass would let go past the group (${pass.releaseEnd} > ${startOffset})`);
  assert.equal(pass.released, false, 'the pass did not let the whole range go');
  assert.deepEqual(pass.keptFor, { group, offset: startOffset }, 'the report names the group the range is kept for');
  assert.equal(await storeStart(), startOffset, "the store keeps the range from the group's start offset");
  const held = async () => (await scrape(proxy.management)).value('kcompact_carry_held_partitions');
  assert.equal(await held(), 1, 'kcompact_carry_held_partitions');

  // What the group has yet to get: the compacted view past what it finished.
  const view = (await readPartitionRaw(proxy.bootstrap, TOPIC, 0, { timeoutMs: 30_000 })).records.filter((r) => r.offset >= KEYS + 1);
  const rest = await read(view.length);
  assert.deepEqual(
    rest.records.map(({ offset, key, value }) => ({ offset, key, value })).sort((a, b) => a.offset - b.offset),
    view.map(({ offset, key, value }) => ({ offset, key, value })),
    'the group gets the survivors it had not read, as the compacted view shows them',
  );
  t.diagnostic(`the group got the ${rest.records.length} survivors past its start`);

  // The coordinator moves a group's start offset past what it finished at its next acquisition.
  await producer.send({ topic: TOPIC, acks: -1, messages: [{ key: 'after', value: 'after' }] });
  assert.deepEqual(
    (await read(1)).records.map((r) => r.key),
    ['after'],
  );
  await pollUntil('the store to let the kept range go', 60_000, async () => {
    await compact();
    return (await storeStart()) >= pass.releaseEnd ? true : undefined;
  });
  assert.equal(await held(), 0, 'kcompact_carry_held_partitions once the range went');
  t.diagnostic(`the store let the range go up to ${await storeStart()} (the pass's release end ${pass.releaseEnd})`);
});

test('a share group new to a carried partition gets the survivors from the copies; one that read them gets none again', { timeout: 300_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const { store, proxy, admin, producer, storeAdmin } = await bedOf();
  const topic = 'queued-copies';
  await createCompactedTopic(admin, topic, { 'segment.ms': String(SEGMENT_MS), 'min.cleanable.dirty.ratio': '0.01' });
  // The store keeps this topic in one segment (an operator's setting on the store, which kcompact
  // leaves as it is). With the one-second segments kcompact sets there, the pass's release record
  // ends up alone in the store's last segment; a ShareFetch answer holding only that record (which
  // the share view takes out) is never acknowledged by librdkafka's share consumer, while Java's
  // and franz-go's acknowledge it as a gap, and the librdkafka group would keep a lag of one.
  const kept = await askOnce(store.bootstrap, ApiKey.IncrementalAlterConfigs, 1, {
    resources: [{ resourceType: 2, resourceName: topic, configs: [{ name: 'segment.ms', configOperation: 0, value: '604800000' }] }],
    validateOnly: false,
  });
  assert.equal(kept.responses[0].errorCode, 0, kept.responses[0].errorMessage);
  await waitCarrying(proxy, 2);
  const round = async (n: number) => {
    const messages = Array.from({ length: KEYS }, (_, k) => ({ key: `key-${k}`, value: k % 7 === 3 && n > 0 ? null : `value-${k}-${n}` }));
    await producer.send({ topic, acks: -1, messages });
    await new Promise((resolve) => setTimeout(resolve, SEGMENT_MS * 2));
    await producer.send({ topic, acks: -1, messages: [{ key: 'roll', value: `roll-${n}` }] });
  };
  const read = (group: string, expected: number, more: { release?: boolean; leave?: boolean } = {}) =>
    javaClients.shareRead!(proxy.bootstrap, { topic, group, isolation: 'read_uncommitted', expected, idleMs: IDLE_MS, ...more });
  const shape = (records: { offset: number; key: string | null; value: string | null }[]) =>
    records.map(({ offset, key, value }) => ({ offset, key, value })).sort((a, b) => a.offset - b.offset);
  const storeStart = async () => Number((await storeAdmin.fetchTopicOffsets(topic))[0]!.low);
  // Nothing left stuck: the group has no lag on the store (every copy settled).
  const settled = (group: string) =>
    pollUntil(`share group ${group} to have settled everything`, 30_000, async () => {
      const offsets = await javaClients.shareOffsets!(store.bootstrap, group, topic);
      return offsets.lag === 0 ? offsets : undefined;
    });

  const early = 'share-early';
  await round(0);
  assert.equal((await read(early, KEYS + 1)).records.length, KEYS + 1, 'the early group read the first round');
  await round(1);
  await round(2);
  assert.equal((await read(early, 2 * (KEYS + 1))).records.length, 2 * (KEYS + 1), 'the early group read every round');
  // The coordinator moves the group's start offset past what it finished at its next acquisition.
  await producer.send({ topic, acks: -1, messages: [{ key: 'after', value: 'after' }] });
  assert.deepEqual(
    (await read(early, 1)).records.map((r) => r.key),
    ['after'],
  );

  const res = await proxy.http(`/compact?topic=${topic}`, 'POST');
  assert.equal(res.status, 200, res.body);
  const pass = (JSON.parse(res.body) as CleanReport).carried.find((c) => c.topic === topic);
  assert.ok(pass?.released, `the clean carried the topic and the store let the range go: ${res.body}`);
  const start = await storeStart();
  assert.equal(start, pass.releaseEnd, "the store's log start is the pass's release end");

  // What Kafka's cleaner leaves: the latest value of each key, tombstones included until their horizon.
  const view = shape((await readPartitionRaw(proxy.bootstrap, topic, 0, { timeoutMs: 30_000 })).records);
  const latest = new Map<string, string | null>();
  for (let n = 0; n <= 2; n++) for (let k = 0; k < KEYS; k++) latest.set(`key-${k}`, k % 7 === 3 && n > 0 ? null : `value-${k}-${n}`);
  latest.set('roll', 'roll-2');
  latest.set('after', 'after');
  assert.deepEqual(new Map(view.map((r) => [r.key!, r.value])), latest, 'the compacted view holds the latest value of every key');
  const below = view.filter((r) => r.offset < start);
  assert.ok(below.length > KEYS / 2, `most survivors lie below the store's log start ${start} (${below.length})`);

  const fresh = 'share-fresh';
  const got = await read(fresh, view.length);
  assert.deepEqual(shape(got.records), view, 'the new group gets every survivor, those below the store log start from the copies');
  assert.ok(
    got.records.every((r) => r.deliveryCount === 1),
    'each delivered once',
  );
  const scraped = await scrape(proxy.management);
  // At least once each: a ShareFetch that arrives while the records of an earlier one are still
  // acquired (a slow machine delays the acknowledgement) unpacks the same copies and hands out nothing.
  const copied = scraped.value('kcompact_share_fetch_copied_records_total') ?? 0;
  assert.ok(copied >= below.length, `kcompact_share_fetch_copied_records_total ${copied}, survivors below the store's log start ${below.length}`);
  await settled(fresh);

  // The same from every share consumer of the test bed (side by side with Java's runs, which go one at a time).
  const others = Promise.all(
    [confluentKafka, franzGo].map(async (client) => {
      const group = `share-fresh-${client.id}`;
      const run = await client.shareRead!(proxy.bootstrap, { topic, group, isolation: 'read_uncommitted', expected: view.length, idleMs: IDLE_MS });
      assert.deepEqual(shape(run.records), view, `${client.name}: every survivor, those below the store log start from the copies`);
      assert.deepEqual([...new Set(run.records.map((r) => r.deliveryCount))], [1], `${client.name}: each at its first delivery`);
      await settled(group);
    }),
  );
  // Awaited below; a failure meanwhile is not an unhandled rejection.
  others.catch(() => undefined);
  // And at the other isolation level.
  const committed = await javaClients.shareRead!(proxy.bootstrap, {
    topic,
    group: 'share-fresh-committed',
    isolation: 'read_committed',
    expected: view.length,
    idleMs: IDLE_MS,
  });
  assert.deepEqual(shape(committed.records), view, 'read_committed: every survivor');

  // A group that releases each record at its first delivery gets each again, as from Kafka: the copies go back whole.
  const again = await read('share-releasing', view.length, { release: true });
  const second = again.records.filter((r) => r.deliveryCount === 2);
  assert.deepEqual(shape(second), view, 'a released survivor comes again, copied or not, with delivery count 2');
  assert.equal(again.records.length, 2 * view.length, 'and only twice');

  // A member that leaves with records it never acknowledged: the broker gives them, copies whole, to the other.
  const left = await read('share-leaving', view.length, { leave: true });
  const leaver = left.records.filter((r) => r.member === 1);
  const stayed = left.records.filter((r) => r.member === 0);
  assert.ok(leaver.length > 0, 'the leaving member got records');
  assert.deepEqual(shape(stayed), view, 'the member that stayed got every survivor once');
  const twice = new Set(leaver.map((r) => r.offset));
  for (const r of stayed) assert.equal(r.deliveryCount, twice.has(r.offset) ? 2 : 1, `offset ${r.offset}'s delivery count`);
  await settled('share-leaving');
  await others;

  // The early group read the range where it was: the copies give it nothing.
  await producer.send({ topic, acks: -1, messages: [{ key: 'later', value: 'later' }] });
  assert.deepEqual(
    (await read(early, 1)).records.map((r) => r.key),
    ['later'],
    'the early group gets what came after, and nothing twice',
  );
  t.diagnostic(`${view.length} survivors, ${below.length} of them below the store's log start ${start}, read from the copies`);
});
