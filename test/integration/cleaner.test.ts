/**
 * The compaction engine end to end against real upstreams without compaction (Kafka 4.4 with
 * its cleaner off, kfake with 3 brokers): records produced straight to the upstream are indexed
 * and cleaned, and the main thread's index view then says exactly what Kafka's cleaner would
 * keep: below cleanedUpTo the latest record of each key (tombstones until their delete horizon
 * passes, no aborted data), everything from cleanedUpTo on. Cleaning also runs by itself on its
 * backoff, and compact,delete retention moves the upstream's log start with DeleteRecords.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import kafkajs from 'kafkajs';
import type { TopicPolicy } from '../../src/engine/api/topic-policy.js';
import type { CompactionEngine } from '../../src/engine/api/engine-handle.js';
import { startCompactionEngine } from '../../src/compaction/engine-client/compaction-engine.js';
import { engineOptions } from '../../src/engine/api/engine-options.js';
import type { Logger } from '../../src/common/log.js';
import { ckTxn, franzConsume, franzProduce, makeTempDir, pollUntil, requirePeers, startKafka, startKfake, type RecordView } from '../support/index.js';

/**
 * One virtual segment per batch (segment.bytes 1), so that everything but a partition's last
 * batch is cleanable; Kafka's defaults otherwise.
 */
const POLICY: TopicPolicy = {
  compact: true,
  delete: false,
  deleteRetentionMs: 0,
  minCompactionLagMs: 0,
  maxCompactionLagMs: Number.MAX_SAFE_INTEGER,
  minCleanableDirtyRatio: 0.5,
  segmentMs: 604_800_000,
  segmentBytes: 1,
  retentionMs: -1,
  retentionBytes: -1,
  storeRetentionMs: -1,
  carryAfterMs: -1,
};

const silent: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {}, child: () => silent, enabled: () => false };

function startEngine(bootstrap: string, dataDir: string, cleanerBackoffMs: number): Promise<CompactionEngine> {
  return startCompactionEngine(
    engineOptions({
      connection: { upstream: bootstrap.split(',').map((hp) => ({ host: hp.split(':')[0]!, port: Number(hp.split(':')[1]) })) },
      dataDir,
      // Every compacted partition, not only those a client uses: the records are written around the engine.
      indexing: { onDemand: false },
      cleaner: { backoffMs: cleanerBackoffMs },
      indexer: { maxWaitMs: 200, metadataIntervalMs: 500 },
    }),
    silent,
  );
}

async function caughtUp(engine: CompactionEngine, topic: string, partitions: number): Promise<void> {
  await pollUntil(`index of ${topic} caught up`, 60_000, async () => {
    const status = (await engine.status()).partitions.filter((p) => p.topic === topic);
    return status.length === partitions && status.every((p) => p.highWatermark > 0 && p.nextOffset === p.highWatermark) ? true : undefined;
  });
}

/** Kafka's survivors of a clean that ends at `end`: the latest record of each key below it. */
function latestPerKey(records: RecordView[], partition: number, end: number, withTombstones: boolean): number[] {
  const latest = new Map<string, RecordView>();
  for (const r of records) if (r.partition === partition && r.offset < end && r.key !== null) latest.set(r.key, r);
  return [...latest.values()]
    .filter((r) => withTombstones || r.value !== null)
    .map((r) => r.offset)
    .sort((a, b) => a - b);
}

function survivorsOf(engine: CompactionEngine, topic: string, partition: number): { upTo: number; offsets: number[] } {
  const view = engine.index.partition(topic, partition);
  assert.ok(view, `${topic}-${partition} is indexed`);
  return { upTo: view.cleanedUpTo(), offsets: [...view.survivors(0, Number.MAX_SAFE_INTEGER)] };
}

async function cleanerSuite(t: TestContext, bootstrap: string): Promise<void> {
  const data = makeTempDir('kcompact-cleaner-');
  const engine = await startEngine(bootstrap, data.path, 300);
  const admin = new kafkajs.Kafka({ clientId: 'cleaner-test', brokers: [bootstrap.split(',')[0]!], logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  const topic = 'cleaned';
  const txnTopic = 'cleaned-txn';
  const retained = 'retained';
  const policies = new Map<string, TopicPolicy>();
  try {
    await t.test('after a clean the view holds the latest offset per key, and everything past the cleaned range', async () => {
      for (let round = 0; round < 6; round++) {
        const spec = { topic, count: 500, start: round * 500, keys: 60, tombstoneEvery: 11, valueSize: 64, compression: 'snappy' as const };
        await franzProduce(bootstrap, round === 0 ? { ...spec, createPartitions: 2 } : spec);
      }
      policies.set(topic, { ...POLICY, minCleanableDirtyRatio: 1 });
      engine.setPolicies(policies);
      await caughtUp(engine, topic, 2);
      const records = (await franzConsume(bootstrap, { topic, count: 3000, records: true })).records!;
      const report = await engine.compactNow(topic);
      assert.equal(report.cleaned.length, 2);
      for (let p = 0; p < 2; p++) {
        const { upTo, offsets } = survivorsOf(engine, topic, p);
        const end = Math.max(...records.filter((r) => r.partition === p).map((r) => r.offset)) + 1;
        assert.ok(upTo > end / 2 && upTo < end, `partition ${p} cleaned up to ${upTo} of ${end}: all but the last batch`);
        assert.deepEqual(offsets, latestPerKey(records, p, upTo, true), `partition ${p}: tombstones stay until the next clean`);
        const view = engine.index.partition(topic, p)!;
        assert.equal(view.nextVisible(upTo + 3), upTo + 3);
      }
      await engine.compactNow(topic);
      for (let p = 0; p < 2; p++) {
        const { upTo, offsets } = survivorsOf(engine, topic, p);
        assert.deepEqual(offsets, latestPerKey(records, p, upTo, false), `partition ${p}: delete.retention.ms 0 has passed`);
      }
    });

    await t.test('cleans on its own once the dirty ratio passes min.cleanable.dirty.ratio', async () => {
      policies.set(topic, POLICY);
      engine.setPolicies(policies);
      // Read before the horizons: every row at or past them that a later clean removes counts after this.
      const { cleaner: start } = await engine.status();
      const before = [0, 1].map((p) => survivorsOf(engine, topic, p).upTo);
      for (let round = 0; round < 6; round++) {
        await franzProduce(bootstrap, { topic, count: 1000, start: 3000 + round * 1000, keys: 60, valueSize: 64, compression: 'lz4' });
      }
      await caughtUp(engine, topic, 2);
      // Both partitions, each past a new value of every key: a partition cleaned over part of the
      // new records alone may still hold an old tombstone as a key's latest, which that clean
      // (delete.retention.ms 0) removes.
      await pollUntil('the periodic cleaner ran over both partitions', 30_000, async () =>
        [0, 1].every((p) => survivorsOf(engine, topic, p).upTo > before[p]! + 1000) ? true : undefined,
      );
      const records = (await franzConsume(bootstrap, { topic, count: 9000, records: true })).records!;
      let reapedAtLeast = 0;
      for (let p = 0; p < 2; p++) {
        // Every key got new values, so no tombstone is anyone's latest record any more.
        const { upTo, offsets } = survivorsOf(engine, topic, p);
        assert.deepEqual(offsets, latestPerKey(records, p, upTo, true), `partition ${p}`);
        // The rows between the two horizons that did not survive were reaped by the cleans since `start`,
        // however many rounds those cleans took.
        const kept = new Set(offsets);
        reapedAtLeast += records.filter((r) => r.partition === p && r.offset >= before[p]! && r.offset < upTo && !kept.has(r.offset)).length;
      }
      const { cleaner } = await engine.status();
      assert.ok(cleaner.cleansTotal >= start.cleansTotal + 2, `a clean of each partition: ${JSON.stringify(cleaner)}`);
      assert.ok(reapedAtLeast > 1000, `the cleans covered superseded rows (${reapedAtLeast})`);
      assert.ok(cleaner.reapedTotal - start.reapedTotal >= reapedAtLeast, `reaped ${cleaner.reapedTotal - start.reapedTotal}, at least ${reapedAtLeast}`);
    });

    await t.test('drops aborted data and keeps committed data by the same rules', async () => {
      const result = await ckTxn(bootstrap, { topic: txnTopic, createPartitions: 1, transactions: 8, perTxn: 6, keys: 5 });
      assert.deepEqual(result.transactions, { committed: 24, aborted: 24 });
      await franzProduce(bootstrap, { topic: txnTopic, count: 100, start: 1000, keys: 50 });
      await franzProduce(bootstrap, { topic: txnTopic, count: 100, start: 1100, keys: 50 });
      policies.set(txnTopic, { ...POLICY, minCleanableDirtyRatio: 1 });
      engine.setPolicies(policies);
      await caughtUp(engine, txnTopic, 1);
      const records = (await franzConsume(bootstrap, { topic: txnTopic, count: 248, records: true })).records!;
      await engine.compactNow(txnTopic);
      const { upTo, offsets } = survivorsOf(engine, txnTopic, 0);
      assert.ok(upTo > 100, `cleaned up to ${upTo}`);
      const committed = records.filter((r) => !r.value?.startsWith('aborted-'));
      const data = new Set(records.map((r) => r.offset));
      assert.deepEqual(
        offsets.filter((o) => data.has(o)),
        latestPerKey(committed, 0, upTo, true),
        'data survivors: latest committed record per key',
      );
      const markers = offsets.filter((o) => !data.has(o));
      assert.ok(markers.length > 0 && markers.length <= 8, `${markers.length} transaction markers still held`);
    });

    await t.test('compact,delete retention moves the upstream log start with DeleteRecords', async () => {
      const retentionMs = 4000;
      // No record is older than this (the producer stamps them as it makes them): retention cannot come sooner after it.
      const producedFrom = Date.now();
      await franzProduce(bootstrap, { topic: retained, count: 400, keys: 400, valueSize: 100, createPartitions: 1 });
      const oldAt = Date.now();
      policies.set(retained, { ...POLICY, delete: true, retentionMs, minCleanableDirtyRatio: 1 });
      engine.setPolicies(policies);
      await caughtUp(engine, retained, 1);
      await new Promise((r) => setTimeout(r, Math.max(0, oldAt + 2500 - Date.now())));
      await franzProduce(bootstrap, { topic: retained, count: 50, start: 400, keys: 400, valueSize: 100 });
      await caughtUp(engine, retained, 1);
      // A periodic round applies retention once the first 400 records are 4 s old; the last 50
      // are 2.5 s younger and stay.
      const low = await pollUntil('the upstream log start moved', 30_000, async () => {
        const low = Number((await admin.fetchTopicOffsets(retained))[0]!.low);
        return low > 0 ? low : undefined;
      });
      assert.ok(Date.now() - producedFrom >= retentionMs, 'not before the records were old enough');
      assert.equal(low, 400);
      await pollUntil('the index follows', 10_000, async () => {
        const status = (await engine.status()).partitions.find((p) => p.topic === retained)!;
        return status.logStartOffset === 400 ? true : undefined;
      });
      assert.ok(survivorsOf(engine, retained, 0).offsets.every((o) => o >= 400));
    });
  } finally {
    await admin.disconnect();
    await engine.close();
    data.remove();
  }
}

test('the cleaner over Kafka 4.4 (cleaner off)', { timeout: 300_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const kafka = await startKafka({ compaction: 'off' });
  try {
    await cleanerSuite(t, kafka.bootstrap);
  } finally {
    await kafka.stop();
  }
});

test('the cleaner over kfake (3 brokers)', { timeout: 300_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const kfake = await startKfake({ brokers: 3 });
  try {
    await cleanerSuite(t, kfake.bootstrap);
  } finally {
    await kfake.stop();
  }
});
