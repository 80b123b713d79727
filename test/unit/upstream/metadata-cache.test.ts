import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrorCode } from '../../../src/protocol/errors.js';
import type { MetadataResponse, MetadataResponseTopic } from '../../../src/protocol/messages.js';
import { ZERO_UUID } from '../../../src/protocol/wire/uuid.js';
import { MetadataCache } from '../../../src/upstream/metadata-cache.js';

const partition = (partitionIndex: number, leaderId: number, errorCode: number = ErrorCode.NONE, leaderEpoch = 4) => ({
  errorCode,
  partitionIndex,
  leaderId,
  leaderEpoch,
  replicaNodes: [],
  isrNodes: [],
});

const topic = (name: string, topicId: string, partitions: MetadataResponseTopic['partitions'], errorCode: number = ErrorCode.NONE): MetadataResponseTopic => ({
  errorCode,
  name,
  topicId,
  partitions,
});

const answer = (topics: MetadataResponseTopic[], controllerId = 1): MetadataResponse => ({
  brokers: [
    { nodeId: 1, host: 'b1', port: 9092 },
    { nodeId: 2, host: 'b2', port: 9092 },
  ],
  controllerId,
  topics,
});

test('learns brokers, the controller, topic ids and partition leaders with their epochs', () => {
  const cache = new MetadataCache();
  cache.learn(answer([topic('orders', 'id-orders', [partition(0, 1), partition(1, 2, ErrorCode.NONE, 9)])], 2));
  assert.deepEqual(cache.broker(2), { host: 'b2', port: 9092 });
  assert.equal(cache.broker(3), undefined);
  assert.equal(cache.controller, 2);
  assert.equal(cache.topicId('orders'), 'id-orders');
  assert.deepEqual(cache.leader('orders', 1), { leaderId: 2, leaderEpoch: 9 });
  assert.equal(cache.leader('orders', 2), undefined);
});

test('answers merge: one about other topics leaves the known ones; a newer one about a topic replaces it', () => {
  const cache = new MetadataCache();
  cache.learn(answer([topic('a', 'id-a', [partition(0, 1)])]));
  cache.learn(answer([topic('b', 'id-b', [partition(0, 2)])]));
  assert.equal(cache.leader('a', 0)?.leaderId, 1);
  cache.learn(answer([topic('a', 'id-a2', [partition(0, 2)])]));
  assert.equal(cache.leader('a', 0)?.leaderId, 2);
  assert.equal(cache.topicId('a'), 'id-a2');
  assert.equal(cache.leader('b', 0)?.leaderId, 2);
});

test('a forgotten leader stays unknown until the next answer; an unknown topic is forgotten whole', () => {
  const cache = new MetadataCache();
  cache.learn(answer([topic('a', 'id-a', [partition(0, 1), partition(1, 1)])]));
  cache.forgetLeader('a', 0);
  assert.equal(cache.leader('a', 0), undefined);
  assert.equal(cache.leader('a', 1)?.leaderId, 1);
  cache.learn(answer([topic('a', 'id-a', [partition(0, 2), partition(1, 1)])]));
  assert.equal(cache.leader('a', 0)?.leaderId, 2);
  cache.learn(answer([topic('a', ZERO_UUID, [], ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]));
  assert.equal(cache.leader('a', 1), undefined);
  assert.equal(cache.topicId('a'), undefined);
});

test('partitions without a leader, topics with other errors, zero topic ids and old versions', () => {
  const cache = new MetadataCache();
  cache.learn(answer([topic('a', ZERO_UUID, [partition(0, -1, ErrorCode.LEADER_NOT_AVAILABLE), partition(1, 2)])]));
  assert.equal(cache.leader('a', 0), undefined);
  assert.equal(cache.topicId('a'), undefined, 'an upstream without topic ids');
  cache.learn(answer([topic('a', 'id-a', [], ErrorCode.TOPIC_AUTHORIZATION_FAILED)]));
  assert.equal(cache.leader('a', 1)?.leaderId, 2, 'an error answer about a topic says nothing about its leaders');
  // Metadata v0: no controller, no topic ids, no leader epochs.
  const v0: MetadataResponse = {
    brokers: [],
    topics: [{ errorCode: 0, name: 'old', partitions: [{ errorCode: 0, partitionIndex: 0, leaderId: 1, replicaNodes: [], isrNodes: [] }] }],
  };
  cache.learn(v0);
  assert.deepEqual(cache.leader('old', 0), { leaderId: 1, leaderEpoch: -1 });
  assert.equal(cache.controller, 1, 'kept from the earlier answer');
  cache.forgetController();
  assert.equal(cache.controller, -1);
});
