/**
 * The compaction worker's indexer against real upstreams without compaction (Kafka 4.4 with its
 * cleaner off, and kfake with 3 brokers). Records are produced straight to the upstream, never
 * through a proxy, and must all be indexed: the index equals the log as a consumer reads it, a
 * restart resumes from the checkpoint, a deleted index file is rebuilt, a deleted and re-created
 * topic starts over, and transactions are indexed with aborted data and markers flagged.
 */
import { DEFAULT_POLICY } from '../support/default-policy.js';
import { capturingLogger } from '../support/capturing-logger.js';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test, type TestContext } from 'node:test';
import kafkajs from 'kafkajs';
import { keyDigest } from '../../src/engine/store/key-digest.js';
import { topicIndexFile } from '../../src/engine/store/index-files.js';
import { PartitionStore, type IndexRow } from '../../src/engine/store/partition-store.js';
import { RecordFlag } from '../../src/engine/store/record-flags.js';
import type { CompactionEngine } from '../../src/engine/api/engine-handle.js';
import { startCompactionEngine } from '../../src/compaction/engine-client/compaction-engine.js';
import { engineOptions } from '../../src/engine/api/engine-options.js';
import { TopicIndex } from '../../src/engine/store/topic-index.js';
import type { Logger } from '../../src/common/log.js';
import {
  ckTxn,
  franzConsume,
  franzProduce,
  freePorts,
  makeTempDir,
  pollUntil,
  requirePeers,
  startKafka,
  startKfake,
  type RecordView,
} from '../support/index.js';

function startEngine(bootstrap: string, dataDir: string, log: Logger): Promise<CompactionEngine> {
  return startCompactionEngine(
    engineOptions({
      connection: { upstream: bootstrap.split(',').map((hp) => ({ host: hp.split(':')[0]!, port: Number(hp.split(':')[1]) })) },
      dataDir,
      // Every compacted partition, not only those a client uses: the records are written around the engine.
      indexing: { onDemand: false },
      cleaner: { backoffMs: 3_600_000 },
      indexer: { maxWaitMs: 200, metadataIntervalMs: 500 },
    }),
    log,
  );
}

/** The topic's index file, opened read-only while the engine writes it (as `kcompact data-dir` opens one). */
function withIndex<T>(dataDir: string, topic: string, use: (index: TopicIndex) => T): T {
  const index = TopicIndex.openReadOnly(topicIndexFile(dataDir, topic), topic);
  try {
    return use(index);
  } finally {
    index.close();
  }
}

function indexedPartitions(dataDir: string, topic: string): number[] {
  return withIndex(dataDir, topic, (index) => index.partitions());
}

function indexRows(dataDir: string, topic: string, partition: number): IndexRow[] {
  return withIndex(dataDir, topic, (index) => PartitionStore.within(index, partition).rowsIn(0, Infinity));
}

/** Waits until every partition of the topic is indexed up to its high watermark. */
async function caughtUp(engine: CompactionEngine, topic: string, partitions: number, atLeast: number): Promise<void> {
  await pollUntil(`index of ${topic} caught up`, 60_000, async () => {
    const status = (await engine.status()).partitions.filter((p) => p.topic === topic);
    const indexed = status.reduce((n, p) => n + p.nextOffset, 0);
    return status.length === partitions && indexed >= atLeast && status.every((p) => p.nextOffset === p.highWatermark) ? true : undefined;
  });
}

function digestOf(key: string | null): string | null {
  return key === null ? null : keyDigest(Buffer.from(key)).toString('hex');
}

/** The index's data rows of a partition must be the consumed records, one for one. */
function assertIndexed(dataDir: string, topic: string, records: RecordView[], partitions: number): void {
  for (let p = 0; p < partitions; p++) {
    const expected = records
      .filter((r) => r.partition === p)
      .map((r) => ({ offset: r.offset, key: digestOf(r.key), tombstone: r.key !== null && r.value === null }));
    const actual = indexRows(dataDir, topic, p)
      .filter((r) => !(r.flags & RecordFlag.Control))
      .map((r) => ({ offset: r.offset, key: r.key?.toString('hex') ?? null, tombstone: (r.flags & RecordFlag.Tombstone) !== 0 }));
    const at = actual.findIndex((row, i) => JSON.stringify(row) !== JSON.stringify(expected[i]));
    assert.ok(
      at < 0 && actual.length === expected.length,
      `partition ${p}: ${actual.length} rows indexed, ${expected.length} records read; first difference at row ${at}: ` +
        `${JSON.stringify(actual[at])} indexed, ${JSON.stringify(expected[at])} read`,
    );
  }
}

async function consumeAll(
  bootstrap: string,
  topic: string,
  count: number,
  isolation: 'read_uncommitted' | 'read_committed' = 'read_uncommitted',
): Promise<RecordView[]> {
  const summary = await franzConsume(bootstrap, { topic, count, records: true, isolation, timeoutMs: 30_000 });
  return summary.records!;
}

async function indexerSuite(t: TestContext, bootstrap: string, brokers: number): Promise<void> {
  const lines: string[] = [];
  const log = capturingLogger(lines);
  const data = makeTempDir('kcompact-indexer-');
  const dataDir = data.path;
  const admin = new kafkajs.Kafka({ clientId: 'indexer-test', brokers: [bootstrap.split(',')[0]!], logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  let engine = await startEngine(bootstrap, dataDir, log);
  try {
    const topic = 'indexed';
    await t.test('indexes what was produced straight to the upstream, every codec', async () => {
      await franzProduce(bootstrap, { topic, count: 1500, keys: 40, tombstoneEvery: 7, createPartitions: 3, compression: 'lz4' });
      await franzProduce(bootstrap, { topic, count: 500, start: 1500, keys: 0, compression: 'zstd' });
      engine.setPolicies(new Map([[topic, DEFAULT_POLICY]]));
      await caughtUp(engine, topic, 3, 2000);
      assertIndexed(dataDir, topic, await consumeAll(bootstrap, topic, 2000), 3);
      const status = await engine.status();
      assert.ok(
        status.partitions.every((p) => p.topicId.length === 22 && p.leader >= 0),
        JSON.stringify(status.partitions),
      );
    });

    await t.test('resumes from its checkpoint after a restart', async () => {
      await engine.close();
      const before = indexRows(dataDir, topic, 0).length;
      await franzProduce(bootstrap, { topic, count: 600, start: 2000, keys: 40, compression: 'gzip' });
      engine = await startEngine(bootstrap, dataDir, log);
      const resumed = (await engine.status()).partitions.find((p) => p.topic === topic && p.partition === 0)!;
      assert.equal(resumed.nextOffset, before, 'the checkpoint, before any fetch');
      engine.setPolicies(new Map([[topic, DEFAULT_POLICY]]));
      await caughtUp(engine, topic, 3, 2600);
      assertIndexed(dataDir, topic, await consumeAll(bootstrap, topic, 2600), 3);
      assert.ok(!lines.some((l) => /rebuilding|resetting/.test(l)), lines.join('\n'));
    });

    await t.test('rebuilds a deleted or unreadable index file from the upstream', async () => {
      const file = topicIndexFile(dataDir, topic);
      for (const damage of [() => undefined, () => fs.writeFileSync(file, 'not a database at all, but long enough to be read as one'.repeat(100))]) {
        await engine.close();
        for (const f of [file, `${file}-wal`, `${file}-shm`]) fs.rmSync(f, { force: true });
        damage();
        engine = await startEngine(bootstrap, dataDir, log);
        engine.setPolicies(new Map([[topic, DEFAULT_POLICY]]));
        await caughtUp(engine, topic, 3, 2600);
        assertIndexed(dataDir, topic, await consumeAll(bootstrap, topic, 2600), 3);
      }
      assert.ok(
        lines.some((l) => /index file unusable/.test(l) && l.includes(`"topic":"${topic}"`)),
        lines.join('\n'),
      );
    });

    await t.test('starts over when the topic is deleted and created again', async () => {
      const before = (await engine.status()).partitions.find((p) => p.topic === topic)!.topicId;
      await admin.deleteTopics({ topics: [topic] });
      await pollUntil('topic deleted', 30_000, async () => ((await admin.listTopics()).includes(topic) ? undefined : true));
      await franzProduce(bootstrap, { topic, count: 300, start: 5000, keys: 7, createPartitions: 2 });
      await pollUntil('index follows the new topic', 60_000, async () => {
        const status = (await engine.status()).partitions.filter((p) => p.topic === topic);
        return status.length === 2 && status.every((p) => p.topicId !== before && p.nextOffset === p.highWatermark) ? true : undefined;
      });
      await caughtUp(engine, topic, 2, 300);
      assertIndexed(dataDir, topic, await consumeAll(bootstrap, topic, 300), 2);
      assert.deepEqual(indexedPartitions(dataDir, topic), [0, 1], 'the third partition of the old topic is gone');
    });

    await t.test('picks up partitions added with CreatePartitions', async () => {
      await admin.createPartitions({ topicPartitions: [{ topic, count: 3 }] });
      await franzProduce(bootstrap, { topic, count: 300, start: 6000, keys: 60 });
      await caughtUp(engine, topic, 3, 600);
      assertIndexed(dataDir, topic, await consumeAll(bootstrap, topic, 600), 3);
    });

    await t.test('indexes transactions: aborted data flagged, markers as rows', async () => {
      const txnTopic = 'indexed-txn';
      const result = await ckTxn(bootstrap, { topic: txnTopic, createPartitions: 1, transactions: 6, perTxn: 5, keys: 4 });
      assert.deepEqual(result.transactions, { committed: 15, aborted: 15 });
      engine.setPolicies(new Map([[txnTopic, DEFAULT_POLICY]]));
      await caughtUp(engine, txnTopic, 1, 36);
      const all = await consumeAll(bootstrap, txnTopic, 30);
      const rows = indexRows(dataDir, txnTopic, 0);
      const data = rows.filter((r) => !(r.flags & RecordFlag.Control));
      assert.deepEqual(
        data.map((r) => [r.offset, (r.flags & RecordFlag.Aborted) !== 0]),
        all.map((r) => [r.offset, r.value!.startsWith('aborted-')]),
      );
      const markers = rows.filter((r) => r.flags & RecordFlag.Control);
      assert.equal(markers.length, 6);
      assert.deepEqual(
        markers.map((r) => (r.flags & RecordFlag.Commit ? 'commit' : 'abort')),
        ['commit', 'abort', 'commit', 'abort', 'commit', 'abort'],
      );
      assert.ok(rows.every((r) => r.flags & RecordFlag.Transactional));
      assert.ok(!fs.existsSync(topicIndexFile(dataDir, topic)), 'the topic no longer listed was dropped');
    });
    t.diagnostic(`${brokers} broker(s); ${lines.filter((l) => l.startsWith('warn')).length} warnings logged`);
  } finally {
    await engine.close();
    await admin.disconnect();
    data.remove();
  }
}

test('the indexer tails Kafka 4.4 (cleaner off)', { timeout: 300_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const kafka = await startKafka({ compaction: 'off' });
  try {
    await indexerSuite(t, kafka.bootstrap, 1);
  } finally {
    await kafka.stop();
  }
});

test('the indexer tails kfake (3 brokers)', { timeout: 300_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const kfake = await startKfake({ brokers: 3 });
  try {
    await indexerSuite(t, kfake.bootstrap, 3);
  } finally {
    await kfake.stop();
  }
});

test('the indexer rides out an upstream outage and follows the upstream when it returns', { timeout: 300_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const ports = await freePorts(3);
  let kfake = await startKfake({ ports });
  const lines: string[] = [];
  const data = makeTempDir('kcompact-outage-');
  const engine = await startEngine(kfake.bootstrap, data.path, capturingLogger(lines));
  try {
    const topic = 'outage';
    await franzProduce(kfake.bootstrap, { topic, count: 300, keys: 30, createPartitions: 2 });
    engine.setPolicies(new Map([[topic, DEFAULT_POLICY]]));
    await caughtUp(engine, topic, 2, 300);
    await kfake.stop();
    await pollUntil('the outage is noticed', 30_000, async () => (lines.some((l) => /index fetch failed|metadata failed/.test(l)) ? true : undefined));
    const during = await engine.status();
    assert.equal(during.partitions.filter((p) => p.topic === topic).length, 2, 'the worker still answers and keeps its index');
    await new Promise((r) => setTimeout(r, 1000));
    // kfake keeps nothing across a restart: the topic comes back empty, with a new id.
    kfake = await startKfake({ ports });
    await franzProduce(kfake.bootstrap, { topic, count: 120, start: 900, keys: 30, createPartitions: 2 });
    await pollUntil('the index follows the returned upstream', 60_000, async () => {
      const status = (await engine.status()).partitions.filter((p) => p.topic === topic);
      const indexed = status.reduce((n, p) => n + p.nextOffset, 0);
      return status.length === 2 && indexed === 120 && status.every((p) => p.nextOffset === p.highWatermark) ? true : undefined;
    });
    assertIndexed(data.path, topic, await consumeAll(kfake.bootstrap, topic, 120), 2);
    assert.ok(
      lines.some((l) => /reachable again/.test(l)),
      lines.join('\n'),
    );
  } finally {
    await engine.close();
    await kfake.stop();
    data.remove();
  }
});
