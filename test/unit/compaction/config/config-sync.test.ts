import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BrokerDefaults } from '../../../../src/compaction/config/broker-defaults.js';
import type { CachedChange, ConfigCache } from '../../../../src/compaction/config/config-cache.js';
import { ConfigSync } from '../../../../src/compaction/config/config-sync.js';
import type { ConfigRead, ConfigsTopic } from '../../../../src/compaction/config/configs-topic.js';
import { encodeStoredTopic } from '../../../../src/compaction/config/stored-topic.js';
import { TopicConfigState } from '../../../../src/compaction/config/topic-config-state.js';
import type { UpstreamClusterClient } from '../../../../src/upstream/upstream-cluster-client.js';
import { createLogger } from '../../../../src/common/log.js';
import { TopicIds } from '../../../../src/proxy/topic-ids.js';

/** A configs topic holding `records`, read one record per fetch. */
function topicOf(records: ConfigRead['records']): ConfigsTopic {
  const end = records.length;
  return {
    topic: '__kcompact_configs',
    open: async () => 'STORE',
    read: async (from: number) => ({ records: records.slice(from, from + 1), nextOffset: Math.min(from + 1, end), highWatermark: end }),
    logStart: async () => 0,
  } as unknown as ConfigsTopic;
}

test('the cache is written when the store moves on, not at every idle poll', async () => {
  const commits: { changes: readonly CachedChange[]; nextOffset?: number }[] = [];
  const cache = {
    commit: (changes: readonly CachedChange[], nextOffset?: number) => commits.push({ changes, nextOffset }),
    reset: () => {},
  } as unknown as ConfigCache;
  const ids = new TopicIds();
  const log = createLogger();
  const state = new TopicConfigState(new BrokerDefaults(), ids, [], log);
  const value = encodeStoredTopic({ configs: { 'cleanup.policy': 'compact' } });
  const records = [
    { offset: 0, key: 'orders', value },
    { offset: 1, key: 'prices', value },
  ];
  const sync = new ConfigSync(
    topicOf(records),
    cache,
    state,
    {} as UpstreamClusterClient,
    { nextOffset: 0, storeTopicId: 'STORE' },
    { pollIntervalMs: 500, log },
  );

  await sync.sync();
  assert.deepEqual(
    commits.map((c) => [c.changes.map((x) => x.topic), c.nextOffset]),
    [
      [['orders'], 1],
      [['prices'], 2],
    ],
  );
  assert.equal(state.compacted('prices')?.compact, true);
  await sync.sync();
  await sync.sync();
  assert.equal(commits.length, 2, 'polls at the end of the store write nothing');
  await sync.close();
});
