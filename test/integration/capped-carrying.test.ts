/**
 * Carrying on a store that caps retention (docs/carrying.md, "Stores that cap retention"): the
 * test bed's 'capped' Kafka refuses retention.ms=-1 and deletes records once the cap has passed,
 * as OCI Streaming and Event Hubs do. A compact-only topic is created through the carrying proxy
 * (which falls back to the store's retention), written for two cap periods with keys written
 * once and keys rewritten all along, then left idle for two more: the store lets every original
 * go, and yet Java's consumer from offset 0 (through the carrier and through a replica that
 * rebuilds its index and its topic configs from an empty data directory), a kafkajs consumer
 * group, and librdkafka, franz-go, kafkajs and kafka-python readers see the latest value of
 * every key at its original offset. A topic altered to compact-only is kept the same way; one
 * whose retention leaves a carry too little time is refused, naming the numbers, and not kept.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import kafkajs from 'kafkajs';
import { readToEnd, type TopicRecord } from '../support/read-to-end.js';
import { confluentKafka, franzGo, kafkaPython } from '../support/client-matrix/drivers/bed-clients.js';
import { kafkaJs } from '../support/client-matrix/drivers/kafkajs.js';
import { comparableRecords } from '../support/client-matrix/records.js';
import { startCompactingProxy, type RunningCompactingProxy } from '../support/kcompact.js';
import { pollUntil, requirePeers, startKafka, type RunningKafka } from '../support/index.js';
import { askOnce } from '../support/raw-client.js';
import { ApiKey } from '../../src/protocol/messages.js';

const TOPIC = 'capped-table';
const CONFIGS_TOPIC = '__kcompact_configs';
const ALTERED = 'capped-altered';
const TOO_SHORT = 'capped-too-short';
const INVALID_CONFIG = 40;
/** The store's cap; kcompact carries at half of it, leaving the 10 s a carry needs at least. */
const CAP_MS = 20_000;
const COLD_KEYS = 100;
const HOT_KEYS = 10;

const client = (bootstrap: string) => new kafkajs.Kafka({ clientId: 'capped-carrying-test', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The latest record of each key as the reader saw them, after checking offsets only ever rise. */
function latestByKey(records: readonly TopicRecord[]): Map<string, TopicRecord> {
  const latest = new Map<string, TopicRecord>();
  for (let i = 0; i < records.length; i++) {
    if (i > 0) assert.ok(records[i]!.offset > records[i - 1]!.offset, `offsets rise: ${records[i - 1]!.offset} then ${records[i]!.offset}`);
    latest.set(records[i]!.key!, records[i]!);
  }
  return latest;
}

function assertLatest(seen: ReadonlyMap<string, TopicRecord>, want: ReadonlyMap<string, { offset: number; value: string }>, who: string): void {
  assert.equal(seen.size, want.size, `${who}: every key, no other`);
  for (const [key, w] of want) {
    const s = seen.get(key);
    assert.deepEqual(s && { offset: s.offset, value: s.value }, w, `${who}: the latest value of ${key} at its original offset`);
  }
}

async function javaRead(proxy: RunningCompactingProxy, topic = TOPIC): Promise<Map<string, TopicRecord>> {
  const contents = await readToEnd(proxy.bootstrap, topic, { timeoutMs: 60_000 });
  return latestByKey(contents.partitions['0']?.records ?? []);
}

/** A new consumer group reads the topic from the start and rebuilds the table. */
async function groupRead(bootstrap: string, end: number): Promise<Map<string, TopicRecord>> {
  const consumer = client(bootstrap).consumer({ groupId: `capped-table-${Date.now()}` });
  const records: TopicRecord[] = [];
  await consumer.connect();
  try {
    await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
    let last = -1;
    await consumer.run({
      eachMessage: async ({ message }) => {
        last = Number(message.offset);
        records.push({ offset: last, timestamp: Number(message.timestamp), key: message.key?.toString() ?? null, value: message.value?.toString() ?? null });
      },
    });
    await pollUntil('the group to read to the end', 60_000, async () => (last >= end - 1 ? true : undefined));
  } finally {
    await consumer.disconnect();
  }
  return latestByKey(records);
}

test('a compact-only topic on a store that caps retention keeps the latest value of every key for four cap periods', { timeout: 420_000 }, async (t) => {
  if (!requirePeers(t)) return;
  let kafka: RunningKafka | undefined;
  let carrier: RunningCompactingProxy | undefined;
  let rebuilt: RunningCompactingProxy | undefined;
  try {
    kafka = await startKafka({ compaction: 'capped', retentionCapMs: CAP_MS });
    carrier = await startCompactingProxy(kafka.bootstrap, { carry: true, cleanerBackoffMs: 500 });
    const admin = client(carrier.bootstrap).admin();
    const storeAdmin = client(kafka.bootstrap).admin();
    const producer = client(carrier.bootstrap).producer({ allowAutoTopicCreation: false });
    await Promise.all([admin.connect(), storeAdmin.connect(), producer.connect()]);
    try {
      // The store refuses retention.ms=-1; kcompact creates the topic with the store's own.
      assert.equal(
        await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }] }),
        true,
      );
      const described = await storeAdmin.describeConfigs({ resources: [{ type: 2, name: TOPIC, configNames: ['retention.ms'] }], includeSynonyms: false });
      assert.equal(described.resources[0]!.configEntries[0]!.configValue, String(CAP_MS), "the store's own retention");

      // A replica whose cleaner rounds are 15 s apart cannot carry in the 10 s the cap leaves
      // after the carry age: the topic is refused, with the numbers, and deleted from the store again.
      const slow = await startCompactingProxy(kafka.bootstrap, { cleanerBackoffMs: 15_000 });
      try {
        const refused = await askOnce(slow.bootstrap, ApiKey.CreateTopics, 7, {
          topics: [{ name: TOO_SHORT, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [{ name: 'cleanup.policy', value: 'compact' }] }],
          timeoutMs: 30_000,
          validateOnly: false,
        });
        const [answer] = refused.topics;
        assert.equal(answer.errorCode, INVALID_CONFIG, answer.errorMessage);
        for (const part of [TOO_SHORT, `retention.ms=${CAP_MS}`, '10000 ms', '60000 ms'])
          assert.ok(answer.errorMessage.includes(part), `the refusal names ${part}: ${answer.errorMessage}`);
        await pollUntil('the refused topic to be gone from the store', 30_000, async () =>
          (await storeAdmin.listTopics()).includes(TOO_SHORT) ? undefined : true,
        );
      } finally {
        await slow.stop();
      }

      // A topic made compact-only by AlterConfigs: the store refuses retention.ms=-1 there too,
      // and kcompact alters it again without, keeping the store's own.
      await admin.createTopics({ topics: [{ topic: ALTERED, numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'delete' }] }] });
      const alteredWant = new Map<string, { offset: number; value: string }>();
      const [alteredMeta] = await producer.send({
        topic: ALTERED,
        acks: -1,
        messages: Array.from({ length: 20 }, (_, k) => ({ key: `k-${k}`, value: `v-${k}` })),
      });
      for (let k = 0; k < 20; k++) alteredWant.set(`k-${k}`, { offset: Number(alteredMeta!.baseOffset) + k, value: `v-${k}` });
      await admin.alterConfigs({ validateOnly: false, resources: [{ type: 2, name: ALTERED, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }] });
      const alteredConfigs = await admin.describeConfigs({ resources: [{ type: 2, name: ALTERED, configNames: ['cleanup.policy'] }], includeSynonyms: false });
      assert.equal(alteredConfigs.resources[0]!.configEntries[0]!.configValue, 'compact', 'the alter made the topic compact-only');

      const want = new Map<string, { offset: number; value: string }>();
      const send = async (messages: { key: string; value: string }[]) => {
        const [meta] = await producer.send({ topic: TOPIC, acks: -1, messages });
        messages.forEach((m, i) => want.set(m.key, { offset: Number(meta!.baseOffset) + i, value: m.value }));
      };
      await send(Array.from({ length: COLD_KEYS }, (_, k) => ({ key: `cold-${k}`, value: `cold-${k}-once` })));
      // Two cap periods of rewrites, then two idle: copies must be carried again by age alone.
      const writeUntil = Date.now() + 2 * CAP_MS;
      for (let round = 0; Date.now() < writeUntil; round++) {
        await send(Array.from({ length: HOT_KEYS }, (_, k) => ({ key: `hot-${k}`, value: `hot-${k}-round-${round}` })));
        await sleep(250);
      }
      const end = Math.max(...[...want.values()].map((w) => w.offset)) + 1;
      await sleep(2 * CAP_MS);

      const [store] = await storeAdmin.fetchTopicOffsetsByTimestamp(TOPIC, -2);
      assert.ok(Number(store!.offset) >= end, `the store let every original go: it starts at ${store!.offset}, past ${end}`);
      const [offsets] = await admin.fetchTopicOffsets(TOPIC);
      assert.equal(offsets!.low, '0', "EARLIEST is the topic's own log start");

      assertLatest(await javaRead(carrier), want, 'Java through the carrier');
      assertLatest(await groupRead(carrier.bootstrap, end), want, 'a kafkajs group through the carrier');
      // Idle for longer than half the carry age, the whole log is cleaned: the view is exactly the latest record of each key.
      const expected = [...want].map(([key, w]) => ({ partition: 0, offset: w.offset, key, value: w.value })).sort((a, b) => a.offset - b.offset);
      const highWatermark = Number(offsets!.high);
      for (const driver of [confluentKafka, franzGo, kafkaJs, kafkaPython]) {
        const run = await driver.compactedRead!(carrier.bootstrap, { topic: TOPIC, expected, highWatermark, idleMs: 1000 });
        assert.deepEqual(comparableRecords(run.records), expected, `${driver.name} from offset 0`);
      }
      const { cleaner } = await carrier.compaction.engine.status();
      t.diagnostic(`store starts at ${store!.offset}, ${end} written; carrier ${JSON.stringify(cleaner.carry)}; margin ${JSON.stringify(cleaner.carryMargin)}`);
      assert.ok(cleaner.carryMargin && cleaner.carryMargin.ratio > 0.25, 'the margin stays above the alert');

      // The topic's configs came through CreateTopics into __kcompact_configs, whose original
      // records the store let go too: the new replica learns them from the carried copies.
      const [configsStart] = await storeAdmin.fetchTopicOffsetsByTimestamp(CONFIGS_TOPIC, -2);
      assert.ok(Number(configsStart!.offset) > 0, `the store let the configs topic's originals go (it starts at ${configsStart!.offset})`);
      rebuilt = await startCompactingProxy(kafka.bootstrap);
      const fresh = await pollUntil('the rebuilt replica to serve every key', 60_000, async () => {
        const seen = await javaRead(rebuilt!);
        return seen.size === want.size ? seen : undefined;
      });
      assertLatest(fresh, want, 'Java through a replica rebuilt from an empty data directory');
      const [alteredStart] = await storeAdmin.fetchTopicOffsetsByTimestamp(ALTERED, -2);
      assert.ok(Number(alteredStart!.offset) >= 20, `the store let the altered topic's originals go (it starts at ${alteredStart!.offset})`);
      // Its configs record comes after capped-table's: the replica may index it a moment later.
      const alteredSeen = await pollUntil('the rebuilt replica to serve the altered topic', 60_000, async () => {
        const seen = await javaRead(rebuilt!, ALTERED);
        return seen.size === alteredWant.size ? seen : undefined;
      });
      assertLatest(alteredSeen, alteredWant, 'Java reads the altered topic through the rebuilt replica');
    } finally {
      await Promise.allSettled([producer.disconnect(), admin.disconnect(), storeAdmin.disconnect()]);
    }
  } finally {
    await rebuilt?.stop();
    await carrier?.stop();
    await kafka?.stop();
  }
});
