/**
 * Conditional records and the table reads on kfake (docs/tables.md): records written straight
 * to the store by a Kafka producer with the condition headers are judged alike by two replicas,
 * a Kafka consumer through either sees exactly the winners before and after a clean and a carry
 * pass, and a replica started afterwards from an empty data directory reports the same latest
 * values.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import kafkajs from 'kafkajs';
import { IF_MATCH_HEADER, IF_NONE_MATCH_HEADER, type TableReads } from '../../src/engine/api/table-reads.js';
import { startCompactingProxy, type RunningCompactingProxy } from '../support/kcompact.js';
import { pollUntil, requirePeers, startKfake } from '../support/index.js';
import { readPartitionRaw } from '../support/raw-reader.js';
import type { CleanReport } from '../../src/engine/api/engine-reports.js';

const TOPIC = 'cas-table';
const WAIT_MS = 20_000;

interface Write {
  key: string;
  value: string | null;
  headers?: Record<string, string>;
  /** Whether its condition holds, judged from the log's order. */
  wins: boolean;
}

/** Racing writers on k1 and one on k2: every verdict follows from the offsets before it. */
const WRITES: Write[] = [
  { key: 'k1', value: 'v0', wins: true }, // 0
  { key: 'k1', value: 'lost-none', headers: { [IF_NONE_MATCH_HEADER]: '*' }, wins: false }, // 1: k1 has a value
  { key: 'k1', value: 'v2', headers: { [IF_MATCH_HEADER]: '0' }, wins: true }, // 2
  { key: 'k1', value: 'lost-stale', headers: { [IF_MATCH_HEADER]: '0' }, wins: false }, // 3: 0 is no longer the latest
  { key: 'k2', value: 'w4', headers: { [IF_NONE_MATCH_HEADER]: '*' }, wins: true }, // 4
  { key: 'k1', value: null, headers: { [IF_MATCH_HEADER]: '2' }, wins: true }, // 5: a conditional delete
  { key: 'k1', value: 'lost-tombstone', headers: { [IF_MATCH_HEADER]: '5' }, wins: false }, // 6: a tombstone is no value
  { key: 'k1', value: 'v7', headers: { [IF_NONE_MATCH_HEADER]: '*' }, wins: true }, // 7
  { key: 'k2', value: 'lost-malformed', headers: { [IF_MATCH_HEADER]: '4x' }, wins: false }, // 8
  { key: 'k2', value: 'w9', headers: { [IF_MATCH_HEADER]: '4' }, wins: true }, // 9
];

const winners = WRITES.flatMap((w, offset) => (w.wins ? [offset] : []));

async function verdicts(tables: TableReads): Promise<boolean[]> {
  const out: boolean[] = [];
  for (let offset = 0; offset < WRITES.length; offset++) {
    const answer = await tables.verdict(TOPIC, 0, offset, WAIT_MS);
    assert.ok(!answer.behind, `the index reached offset ${offset}`);
    out.push(answer.verdict !== 'void');
  }
  return out;
}

async function latestValues(tables: TableReads): Promise<Record<string, [number, string | null] | null>> {
  const out: Record<string, [number, string | null] | null> = {};
  for (const key of ['k1', 'k2', 'k3']) {
    const answer = await tables.latest(TOPIC, 0, { bytes: Buffer.from(key) }, 0, WAIT_MS);
    assert.ok(!answer.behind);
    out[key] = answer.record ? [answer.record.offset, answer.record.value?.toString() ?? null] : null;
  }
  return out;
}

const LATEST = { k1: [7, 'v7'], k2: [9, 'w9'], k3: null };

test('conditional records are judged alike by every replica, and clients see the winners only', { timeout: 240_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const kfake = await startKfake({ brokers: 1 });
  const proxies: RunningCompactingProxy[] = [];
  const store = new kafkajs.Kafka({ clientId: 'tables-test', brokers: [kfake.bootstrap], logLevel: kafkajs.logLevel.NOTHING });
  const producer = store.producer({ allowAutoTopicCreation: false });
  try {
    const carrier = await startCompactingProxy(kfake.bootstrap, { carry: true });
    proxies.push(carrier);
    const other = await startCompactingProxy(kfake.bootstrap, {});
    proxies.push(other);
    const admin = new kafkajs.Kafka({ clientId: 'tables-test', brokers: [carrier.bootstrap], logLevel: kafkajs.logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.createTopics({
      waitForLeaders: true,
      topics: [
        {
          topic: TOPIC,
          numPartitions: 1,
          configEntries: [
            { name: 'cleanup.policy', value: 'compact' },
            { name: 'segment.ms', value: '100' },
          ],
        },
      ],
    });
    await admin.disconnect();
    // The other replica learns the topic's policy from the config store: writes before it does would be read there as a plain topic's.
    await pollUntil('both replicas hold the topic as compacted', 30_000, async () =>
      proxies.every((p) => p.compaction.configs.view.compacted(TOPIC) !== undefined) ? true : undefined,
    );
    await producer.connect();
    // A consumer tailing the table through a replica while the writers race: it gets what the index judged, never a void record.
    const tailed: number[] = [];
    const consumer = new kafkajs.Kafka({ clientId: 'tables-tail', brokers: [other.bootstrap], logLevel: kafkajs.logLevel.NOTHING }).consumer({
      groupId: 'tables-tail',
      maxWaitTimeInMs: 200,
    });
    await consumer.connect();
    await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
    await consumer.run({ eachMessage: async ({ message }) => void tailed.push(Number(message.offset)) });
    t.after(() => consumer.disconnect().catch(() => {}));
    for (const w of WRITES) {
      await producer.send({ topic: TOPIC, acks: -1, messages: [{ partition: 0, key: w.key, value: w.value, ...(w.headers && { headers: w.headers }) }] });
    }
    const want = WRITES.map((w) => w.wins);
    await pollUntil('the tailing consumer has every winner', 30_000, async () =>
      tailed.filter((o) => o < WRITES.length).length >= winners.length ? true : undefined,
    );
    assert.deepEqual(
      tailed.filter((o) => o < WRITES.length),
      winners,
    );
    await consumer.disconnect();
    for (const proxy of proxies) {
      assert.deepEqual(await verdicts(proxy.compaction.engine.tables), want);
      assert.deepEqual(await latestValues(proxy.compaction.engine.tables), LATEST);
      const read = await readPartitionRaw(proxy.bootstrap, TOPIC, 0);
      assert.deepEqual(
        read.records.map((r) => r.offset),
        winners,
        'a consumer through kcompact sees the winners only, before any clean',
      );
    }
    const changes = await carrier.compaction.engine.tables.changes(TOPIC, 0, 0, null, 100, 0);
    assert.deepEqual(
      changes.records.map((r) => [r.offset, r.key.toString(), r.value?.toString() ?? null]),
      winners.map((o) => [o, WRITES[o]!.key, WRITES[o]!.value]),
    );
    assert.equal(changes.next, WRITES.length);

    // A clean and a carry pass: the store lets the history go, the winners' latest survive.
    await pollUntil('the partition carried and released', 60_000, async () => {
      await new Promise((resolve) => setTimeout(resolve, 200));
      await producer.send({ topic: TOPIC, acks: -1, messages: [{ partition: 0, key: 'roll', value: 'roll' }] });
      const report = (await carrier.compactNow(TOPIC)) as CleanReport;
      return report.carried.some((c) => c.topic === TOPIC && c.released) ? true : undefined;
    });
    const survivors = [5 /* k1's tombstone, within delete.retention.ms */, 7, 9];
    for (const proxy of proxies) {
      await pollUntil('the replica read the pass', 30_000, async () => {
        const read = await readPartitionRaw(proxy.bootstrap, TOPIC, 0);
        const offsets = read.records.map((r) => r.offset).filter((o) => o < WRITES.length);
        return JSON.stringify(offsets) === JSON.stringify(survivors.filter((o) => o !== 5 || offsets.includes(5))) ? true : undefined;
      });
      assert.deepEqual(await latestValues(proxy.compaction.engine.tables), LATEST);
    }

    // A replica from an empty data directory reads the carried store and answers the same.
    const fresh = await startCompactingProxy(kfake.bootstrap, {});
    proxies.push(fresh);
    assert.deepEqual(await latestValues(fresh.compaction.engine.tables), LATEST);
    const read = await readPartitionRaw(fresh.bootstrap, TOPIC, 0);
    assert.ok(
      read.records.every((r) => r.offset >= WRITES.length || winners.includes(r.offset)),
      `no void record through the new replica: ${read.records.map((r) => r.offset)}`,
    );
  } finally {
    await producer.disconnect().catch(() => {});
    for (const proxy of proxies.reverse()) await proxy.stop();
    await kfake.stop();
  }
});
