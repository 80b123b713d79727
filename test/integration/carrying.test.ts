/**
 * Physical compaction end to end (docs/carrying.md): a proxy that carries, in front of stores
 * without compaction (kfake, Kafka 4.4 with its cleaner off). A compacted topic written with
 * many updates per key is cleaned and carried; the store then lets the old range go, and yet a
 * reader from offset 0 (Java's consumer, which checks every CRC) sees exactly the latest record
 * of every key at its original offset, through the carrier and through a second proxy that
 * starts with an empty data directory and rebuilds its index from the copies; librdkafka,
 * franz-go, kafkajs and kafka-python read from offset 0 exactly what Java read.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import kafkajs from 'kafkajs';
import type { CleanReport } from '../../src/engine/api/engine-reports.js';
import { compactedView, readToEnd, type TopicRecord } from '../support/read-to-end.js';
import { startCompactingProxy, type RunningCompactingProxy } from '../support/kcompact.js';
import { confluentKafka, franzGo, kafkaPython } from '../support/client-matrix/drivers/bed-clients.js';
import { kafkaJs } from '../support/client-matrix/drivers/kafkajs.js';
import { comparableRecords } from '../support/client-matrix/records.js';
import { pollUntil, requirePeers, startKafka, startKfake } from '../support/index.js';
import { readPartitionRaw } from '../support/raw-reader.js';
import { createCompactedTopic } from '../support/topics.js';

const TOPIC = 'carried';
const KEYS = 200;
const ROUNDS = 10;
const SEGMENT_MS = 200;

function client(bootstrap: string): kafkajs.Kafka {
  return new kafkajs.Kafka({ clientId: 'carrying-test', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING });
}

/** What was written, by offset: the store's records as a reader of the raw log would see them. */
async function writeUpdates(producer: kafkajs.Producer, rounds: number, from: number): Promise<TopicRecord[]> {
  const written: TopicRecord[] = [];
  for (let round = 0; round < rounds; round++) {
    const messages = Array.from({ length: KEYS }, (_, k) => ({
      key: `key-${k}`,
      // Every seventh key's last update deletes it: tombstones are carried too.
      value: round === rounds - 1 && k % 7 === 3 ? null : `value-${k}-round-${from + round}`,
      headers: { round: String(from + round) },
    }));
    for (let i = 0; i < messages.length; i += 50) {
      const batch = messages.slice(i, i + 50);
      const [meta] = await producer.send({ topic: TOPIC, acks: -1, messages: batch });
      const base = Number(meta!.baseOffset);
      batch.forEach((m, j) => written.push({ offset: base + j, timestamp: 0, key: m.key, value: m.value }));
    }
  }
  return written;
}

async function storeEarliest(admin: kafkajs.Admin): Promise<number> {
  const [p] = await admin.fetchTopicOffsetsByTimestamp(TOPIC, -2);
  return Number(p!.offset);
}

function recordsOf(contents: Awaited<ReturnType<typeof readToEnd>>): TopicRecord[] {
  return (contents.partitions['0']?.records ?? []).map((r) => ({ offset: r.offset, timestamp: r.timestamp, key: r.key, value: r.value }));
}

/** Cleans and carries until the carrier reports a pass (the virtual active segment must have rolled). */
async function cleanAndCarry(proxy: RunningCompactingProxy, producer: kafkajs.Producer): Promise<CleanReport> {
  let report: CleanReport | undefined;
  await pollUntil('a carry pass', 60_000, async () => {
    await new Promise((resolve) => setTimeout(resolve, SEGMENT_MS * 2));
    // One more record after segment.ms rolls the virtual segment, as in Kafka.
    await producer.send({ topic: TOPIC, acks: -1, messages: [{ key: 'roll', value: 'roll' }] });
    report = (await proxy.compactNow(TOPIC)) as CleanReport;
    return report.carried.length > 0 ? true : undefined;
  });
  return report!;
}

/** A replica with an empty data directory rebuilds from the copies and the tail, and serves `want` below `end`. */
async function assertRebuiltAgrees(rebuilt: RunningCompactingProxy, want: readonly TopicRecord[], end: number): Promise<void> {
  const got = await pollUntil('the rebuilt replica serves the carried records', 60_000, async () => {
    const read = recordsOf(await readToEnd(rebuilt.bootstrap, TOPIC, { timeoutMs: 30_000 })).filter((r) => r.key !== 'roll' && r.offset < end);
    return read.length === want.length ? read : undefined;
  });
  assert.deepEqual(got, want);
}

/** librdkafka, franz-go, kafkajs and kafka-python, each reading from offset 0, see exactly what Java's consumer saw. */
async function assertClientsAgree(bootstrap: string, admin: kafkajs.Admin, java: readonly TopicRecord[]): Promise<void> {
  const [offsets] = await admin.fetchTopicOffsets(TOPIC);
  const expected = java.map((r) => ({ partition: 0, offset: r.offset, key: r.key, value: r.value }));
  for (const driver of [confluentKafka, franzGo, kafkaJs, kafkaPython]) {
    const run = await driver.compactedRead!(bootstrap, { topic: TOPIC, expected, highWatermark: Number(offsets!.high), idleMs: 1000 });
    assert.deepEqual(comparableRecords(run.records), expected, `${driver.name} from offset 0`);
  }
}

async function carryingSuite(t: TestContext, upstream: string): Promise<void> {
  const carrier = await startCompactingProxy(upstream, { carry: true });
  const proxyClient = client(carrier.bootstrap);
  const admin = proxyClient.admin();
  const storeAdmin = client(upstream.split(',')[0]!).admin();
  const producer = proxyClient.producer({ allowAutoTopicCreation: false });
  let rebuilt: RunningCompactingProxy | undefined;
  try {
    await Promise.all([admin.connect(), storeAdmin.connect(), producer.connect()]);
    // Nothing is cleanable (so nothing carried) until the store's raw log has been read: the
    // carrier cleans as soon as the group assigns it the partition, not only when asked. (An
    // AlterConfigs sets every config it does not name back to its default.)
    const configs = { 'cleanup.policy': 'compact', 'segment.ms': String(SEGMENT_MS), 'min.cleanable.dirty.ratio': '0.01' };
    await createCompactedTopic(admin, TOPIC, { ...configs, 'min.compaction.lag.ms': String(3_600_000) });
    const written = await writeUpdates(producer, ROUNDS, 0);
    // The store's own records, timestamps and all, before anything is carried.
    const raw = recordsOf(await readToEnd(upstream.split(',')[0]!, TOPIC, { timeoutMs: 60_000 }));
    assert.equal(raw.length, written.length);
    await admin.alterConfigs({
      validateOnly: false,
      resources: [{ type: 2, name: TOPIC, configEntries: Object.entries(configs).map(([name, value]) => ({ name, value })) }],
    });
    const first = await cleanAndCarry(carrier, producer);
    const [pass] = first.carried;
    assert.ok(pass!.copies >= KEYS, `the pass copied every key's latest record (${pass!.copies})`);
    assert.ok(pass!.released, 'the store let the carried range go');

    // The store no longer holds the history: its log starts past every record written.
    const earliest = await storeEarliest(storeAdmin);
    assert.ok(earliest > written.at(-1)!.offset, `the store starts at ${earliest}, past the ${written.length} records written`);

    // A reader from offset 0 sees the latest record of each key, at its original offset.
    const cleanedUpTo = first.cleaned.at(-1)!.endOffset;
    const want = compactedView(raw, cleanedUpTo).filter((r) => r.offset < cleanedUpTo);
    const seen = recordsOf(await readToEnd(carrier.bootstrap, TOPIC, { timeoutMs: 60_000 })).filter((r) => r.key !== 'roll');
    assert.deepEqual(
      seen.filter((r) => r.offset < cleanedUpTo),
      want,
    );
    // ListOffsets: the topic's own log start, and lookups by the records' original timestamps.
    const [offsets] = await admin.fetchTopicOffsets(TOPIC);
    assert.equal(offsets!.low, '0', 'EARLIEST is the topic\u2019s own log start');
    for (const r of [want[0]!, want[Math.floor(want.length / 2)]!, want.at(-1)!]) {
      const [byTime] = await admin.fetchTopicOffsetsByTimestamp(TOPIC, r.timestamp);
      assert.equal(Number(byTime!.offset), want.find((w) => w.timestamp >= r.timestamp)!.offset, `the first offset at or after ${r.timestamp}`);
    }
    t.diagnostic(`carried ${pass!.copies} copies (${pass!.bytesWritten} bytes) of ${written.length} records; store starts at ${earliest}`);

    // A reader taking one batch per fetch: from the second fetch on, its answers were begun
    // while it read the one before (copies-ahead.ts), and it sees the same records byte for byte, CRCs checked.
    const stepped = await readPartitionRaw(carrier.bootstrap, TOPIC, 0, { partitionMaxBytes: 2048, timeoutMs: 60_000 });
    assert.deepEqual(
      stepped.records.filter((r) => r.offset < cleanedUpTo).map(({ offset, timestamp, key, value }) => ({ offset, timestamp, key, value })),
      want,
    );
    assert.ok(stepped.fetches >= 4, `${stepped.fetches} fetches`);
    const ahead = carrier.compaction.fetchView.copiesAhead;
    assert.ok(ahead.used >= 2 && ahead.used <= ahead.begun, `answers begun ahead ${ahead.begun}, used ${ahead.used}`);

    // A second round of updates, carried again: the first pass's copies are let go in turn.
    await writeUpdates(producer, 3, ROUNDS);
    // What the proxy shows before the second pass: compacted below the first, raw after it.
    const before2 = recordsOf(await readToEnd(carrier.bootstrap, TOPIC, { timeoutMs: 60_000 }));
    const second = await cleanAndCarry(carrier, producer);
    const end = second.cleaned.at(-1)!.endOffset;
    const want2 = compactedView(before2, end).filter((r) => r.offset < end && r.key !== 'roll');
    const seen2 = recordsOf(await readToEnd(carrier.bootstrap, TOPIC, { timeoutMs: 60_000 })).filter((r) => r.key !== 'roll' && r.offset < end);
    assert.deepEqual(seen2, want2);
    await assertClientsAgree(carrier.bootstrap, admin, recordsOf(await readToEnd(carrier.bootstrap, TOPIC, { timeoutMs: 60_000 })));

    rebuilt = await startCompactingProxy(upstream);
    await assertRebuiltAgrees(rebuilt, want2, end);
  } finally {
    await Promise.allSettled([producer.disconnect(), admin.disconnect(), storeAdmin.disconnect()]);
    await rebuilt?.stop();
    await carrier.stop();
  }
}

test('carrying over kfake', { timeout: 300_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const kfake = await startKfake({ brokers: 1 });
  try {
    await carryingSuite(t, kfake.bootstrap);
  } catch (err) {
    t.diagnostic(`kfake stderr:\n${kfake.stderrTail()}`);
    throw err;
  } finally {
    await kfake.stop();
  }
});

test('carrying over Kafka 4.4 with its cleaner off', { timeout: 300_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const kafka = await startKafka({ compaction: 'off' });
  try {
    await carryingSuite(t, kafka.bootstrap);
  } finally {
    await kafka.stop();
  }
});
