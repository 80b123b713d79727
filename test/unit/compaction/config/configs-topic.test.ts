/**
 * The configs topic's reader on a store where passes carried its records (docs/carrying.md):
 * a copy stands for its original's offset, markers stand for nothing, so the latest original
 * per topic name wins whichever physical order copies and originals are in.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CopyRun, markerBatch } from '../../../../src/protocol/carry/carried-batch.js';
import { encodePassEnd, encodePassStart } from '../../../../src/protocol/carry/carry-record.js';
import { BrokerDefaults } from '../../../../src/compaction/config/broker-defaults.js';
import type { ConfigCache } from '../../../../src/compaction/config/config-cache.js';
import { ConfigSync } from '../../../../src/compaction/config/config-sync.js';
import { CONFIGS_TOPIC, ConfigsTopic } from '../../../../src/compaction/config/configs-topic.js';
import { encodeStoredTopic } from '../../../../src/compaction/config/stored-topic.js';
import { TopicConfigState } from '../../../../src/compaction/config/topic-config-state.js';
import { configLayerOptions, createTopicConfigs } from '../../../../src/compaction/config/topic-configs.js';
import { connectionOptions } from '../../../../src/upstream/connection-options.js';
import { createLogger } from '../../../../src/common/log.js';
import { TopicIds } from '../../../../src/proxy/topic-ids.js';
import { encodeBatch } from '../../../../src/protocol/records/batch.js';
import type { UpstreamClusterClient } from '../../../../src/upstream/upstream-cluster-client.js';

const stored = (policy: string) => encodeStoredTopic({ configs: { 'cleanup.policy': policy } });

/** A batch as the store holds it at `base`: the base offset is not covered by the CRC. */
function at(base: number, batch: Buffer): Buffer {
  batch.writeBigInt64BE(BigInt(base), 0);
  return batch;
}

async function original(base: number, key: string, value: Buffer | null): Promise<Buffer> {
  const fields = {
    baseOffset: 0n,
    partitionLeaderEpoch: 0,
    attributes: 0,
    lastOffsetDelta: 0,
    baseTimestamp: 1_700_000_000_000n,
    maxTimestamp: 1_700_000_000_000n,
    producerId: -1n,
    producerEpoch: -1,
    baseSequence: -1,
  };
  return at(base, await encodeBatch(fields, [{ timestampDelta: 0, offsetDelta: 0, key: Buffer.from(key), value }], 0));
}

/** One copy of the originals, as a pass writes it. */
async function copies(base: number, pass: number, originals: Buffer[]): Promise<Buffer> {
  const out = new CopyRun();
  for (const bytes of originals) out.add(bytes, Number(bytes.readBigInt64BE(0)));
  return at(base, (await out.flush(pass, 1_700_000_100_000))!);
}

/** A configs topic on a store whose partition holds `log` (batches at their offsets). */
function storeHolding(log: Buffer[]): ConfigsTopic {
  const data = Buffer.concat(log);
  const client = {
    version: () => 12,
    request: async (_api: number, _version: number, body: { topics: { partitions: { fetchOffset: bigint }[] }[] }) => {
      const from = Number(body.topics[0]!.partitions[0]!.fetchOffset);
      const held = log.filter((b) => Number(b.readBigInt64BE(0)) + b.readInt32BE(23) >= from);
      return {
        errorCode: 0,
        responses: [{ partitions: [{ errorCode: 0, highWatermark: 7n, records: held.length ? Buffer.concat(held) : data.subarray(0, 0) }] }],
      };
    },
  };
  const links = {
    metadata: async () => ({
      topics: [{ name: CONFIGS_TOPIC, errorCode: 0, topicId: 'AAAAAAAAAAAAAAAAAAAAAA', partitions: [{ partitionIndex: 0, leaderId: 1 }] }],
    }),
    broker: async () => client,
    // A store without DescribeConfigs: the retention check has nothing to say.
    any: async () => ({
      version: () => {
        throw new Error('no DescribeConfigs');
      },
    }),
  } as unknown as UpstreamClusterClient;
  return new ConfigsTopic(links, createLogger(), 1000);
}

/**
 * 0 orders=compact, 1 prices=compact, 2 orders=delete (the latest), then a pass (stopped
 * before it was let go, or one of an earlier round) carrying orders@0 and prices@1: a
 * replica reading it all must end with orders at its write at 2.
 */
async function carriedLog(): Promise<Buffer[]> {
  const o0 = await original(0, 'orders', stored('compact'));
  const p1 = await original(1, 'prices', stored('compact'));
  const o2 = await original(2, 'orders', stored('delete'));
  return [
    o0,
    p1,
    o2,
    at(3, await markerBatch(encodePassStart({ releaseEnd: 2, topicStart: 0 }), 1_700_000_100_000)),
    await copies(4, 3, [o0, p1]),
    at(6, await markerBatch(encodePassEnd({ pass: 3, copies: 2, releaseEnd: 2 }), 1_700_000_100_000)),
  ];
}

test('copies stand at their originals offsets and markers are no records', async () => {
  const topic = storeHolding(await carriedLog());
  const all = await topic.read(0);
  assert.deepEqual(
    all.records.map((r) => [r.offset, r.key, r.value?.toString()]),
    [
      [0, 'orders', '{"configs":{"cleanup.policy":"compact"}}'],
      [1, 'prices', '{"configs":{"cleanup.policy":"compact"}}'],
      [2, 'orders', '{"configs":{"cleanup.policy":"delete"}}'],
      [0, 'orders', '{"configs":{"cleanup.policy":"compact"}}'],
      [1, 'prices', '{"configs":{"cleanup.policy":"compact"}}'],
    ],
  );
  assert.equal(all.nextOffset, 7, 'the read moves past the carry records');
  const released = await topic.read(3);
  assert.deepEqual(
    released.records.map((r) => [r.offset, r.key]),
    [
      [0, 'orders'],
      [1, 'prices'],
    ],
    'a replica starting at the released range reads the copies as the originals',
  );
});

test('a stale copy read after the newer original does not bring the older configs back', async () => {
  const ids = new TopicIds();
  const log = createLogger();
  const state = new TopicConfigState(new BrokerDefaults(), ids, [], log);
  const cache = { commit: () => {}, reset: () => {} } as unknown as ConfigCache;
  const sync = new ConfigSync(
    storeHolding(await carriedLog()),
    cache,
    state,
    {} as UpstreamClusterClient,
    { nextOffset: 0, storeTopicId: null },
    {
      pollIntervalMs: 500,
      log,
    },
  );
  await sync.sync();
  assert.equal(state.compacted('orders'), undefined, 'orders is cleanup.policy=delete, as written last');
  assert.equal(state.compacted('prices')?.compact, true);
  assert.equal(state.entry('orders')?.offset, 2);
  assert.equal(state.entry('kcompact.carry'), undefined, 'a marker is not a topic deleted');
  await sync.close();
});

test('the configs topic is compacted by kcompact itself, not by a static topic entry', async () => {
  await assert.rejects(
    createTopicConfigs({
      layer: configLayerOptions({ staticTopics: [{ topic: CONFIGS_TOPIC, configs: {} }] }),
      connection: connectionOptions({ upstream: [] }),
      dataDir: '/nonexistent',
      topicIds: new TopicIds(),
      log: createLogger(),
    }),
    /__kcompact_configs is kcompact's own configs topic and compacted by kcompact itself: remove it from the static topics/,
  );
});
