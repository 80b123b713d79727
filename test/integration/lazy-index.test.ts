/**
 * Indexing on demand (docs/operating.md, "Lazy indexing"), on kfake: one replica carries ten
 * compacted topics written straight to the store; a second replica, whose client reads one of
 * them, indexes that one only, serves it exactly as the carrier does from its first read from
 * offset 0 (the store has let the history go), lets its index go once its client stops, and
 * serves the same again when the client comes back.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import kafkajs from 'kafkajs';
import type { CleanReport } from '../../src/engine/api/engine-reports.js';
import { startCompactingProxy, type RunningCompactingProxy } from '../support/kcompact.js';
import { pollUntil, requirePeers, startKfake } from '../support/index.js';
import { readPartitionRaw, type RawRecord } from '../support/raw-reader.js';

const TOPICS = Array.from({ length: 10 }, (_, i) => `lazy-${i}`);
const KEYS = 300;
const SEGMENT_MS = 200;
const IDLE_MS = 1_500;

const comparable = (records: readonly RawRecord[]) => records.map((r) => JSON.stringify([r.offset, r.key, r.value, r.timestamp, r.headers]));

/**
 * Every key once, at its latest value, and the last roll. An earlier roll may show too: a roll
 * written after the last clean's dirty range ends stays uncleaned beside the one before it, as
 * in Kafka (the active segment is never cleaned).
 */
function assertLatestOfEveryKey(records: readonly RawRecord[], topic: string): void {
  const keyed = records.filter((r) => r.key !== 'roll');
  assert.deepEqual(
    keyed.map((r) => `${r.key}=${r.value}`).sort(),
    Array.from({ length: KEYS }, (_, k) => `k${k}=${topic}-${k}-2`).sort(),
    `${topic}: the latest record of every key, once`,
  );
  assert.equal(records.at(-1)?.key, 'roll', `${topic}: the last roll last`);
}

async function indexedTopics(proxy: RunningCompactingProxy): Promise<string[]> {
  const status = await proxy.compaction.engine.status();
  return [...new Set(status.partitions.map((p) => p.topic))].filter((t) => t.startsWith('lazy-')).sort();
}

test('a replica indexes only the topic its client reads, serves it exactly from the first read, and lets it go when idle', { timeout: 180_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const kfake = await startKfake({ brokers: 1 });
  const carrier = await startCompactingProxy(kfake.bootstrap, { carry: true, indexOnDemand: true });
  let reader: RunningCompactingProxy | undefined;
  const store = new kafkajs.Kafka({ clientId: 'lazy-index-test', brokers: [kfake.bootstrap], logLevel: kafkajs.logLevel.NOTHING });
  const producer = store.producer({ allowAutoTopicCreation: false });
  const admin = new kafkajs.Kafka({ clientId: 'lazy-index-test', brokers: [carrier.bootstrap], logLevel: kafkajs.logLevel.NOTHING }).admin();
  try {
    await Promise.all([admin.connect(), producer.connect()]);
    await admin.createTopics({
      waitForLeaders: true,
      topics: TOPICS.map((topic) => ({
        topic,
        numPartitions: 1,
        configEntries: [
          { name: 'cleanup.policy', value: 'compact' },
          { name: 'segment.ms', value: String(SEGMENT_MS) },
          { name: 'min.cleanable.dirty.ratio', value: '0.01' },
        ],
      })),
    });
    for (let round = 0; round < 3; round++) {
      await producer.sendBatch({
        acks: -1,
        topicMessages: TOPICS.map((topic) => ({
          topic,
          messages: Array.from({ length: KEYS }, (_, k) => ({ key: `k${k}`, value: `${topic}-${k}-${round}` })),
        })),
      });
    }
    // The carrier cleans and carries every topic (a clean asked for indexes what it would not otherwise); the store lets the history go.
    const carried = new Set<string>();
    await pollUntil('every topic carried', 90_000, async () => {
      await new Promise((resolve) => setTimeout(resolve, SEGMENT_MS * 2));
      await producer.sendBatch({ acks: -1, topicMessages: TOPICS.map((topic) => ({ topic, messages: [{ key: 'roll', value: 'roll' }] })) });
      const report = (await carrier.compactNow()) as CleanReport;
      for (const c of report.carried) if (c.released) carried.add(c.topic);
      return TOPICS.every((topic) => carried.has(topic)) ? true : undefined;
    });
    const storeAdmin = store.admin();
    await storeAdmin.connect();
    const [storeStart] = await storeAdmin.fetchTopicOffsetsByTimestamp(TOPICS[3]!, -2);
    await storeAdmin.disconnect();
    assert.ok(Number(storeStart!.offset) > 2 * KEYS, `the store let the history go (it starts at ${storeStart!.offset})`);
    const carried3 = (await readPartitionRaw(carrier.bootstrap, TOPICS[3]!, 0)).records;
    assertLatestOfEveryKey(carried3, TOPICS[3]!);
    const want = comparable(carried3);

    reader = await startCompactingProxy(kfake.bootstrap, { indexOnDemand: true, indexIdleMs: IDLE_MS });
    assert.deepEqual(await indexedTopics(reader), [], 'nothing indexed before a client asks');
    const first = await readPartitionRaw(reader.bootstrap, TOPICS[3]!, 0);
    assert.deepEqual(comparable(first.records), want, 'the first read from offset 0 through the new replica');
    assert.equal(first.logStart, 0, "the topic's own log start, not the store's");
    assert.deepEqual(await indexedTopics(reader), [TOPICS[3]], 'only the topic its client read');

    // The client stops: the index goes after the idle time.
    await pollUntil('the idle index let go', 30_000, async () => ((await indexedTopics(reader!)).length === 0 ? true : undefined));
    const again = await readPartitionRaw(reader.bootstrap, TOPICS[3]!, 0);
    assert.deepEqual(comparable(again.records), want, 'read again after its index went');
    assert.deepEqual(await indexedTopics(reader), [TOPICS[3]]);
    const other = await readPartitionRaw(reader.bootstrap, TOPICS[7]!, 0);
    assertLatestOfEveryKey(other.records, TOPICS[7]!);
    // The first topic's index may have gone idle meanwhile, on a busy machine: no other topic is indexed.
    const now = await indexedTopics(reader);
    assert.ok(now.includes(TOPICS[7]!) && now.every((topic) => topic === TOPICS[3] || topic === TOPICS[7]), `indexed: ${now.join(', ')}`);
  } finally {
    await Promise.all([admin.disconnect(), producer.disconnect()]).catch(() => undefined);
    await reader?.stop();
    await carrier.stop();
    await kfake.stop();
  }
});
