import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BrokerDefaults } from '../../../../src/compaction/config/broker-defaults.js';
import { forwardedConfigs, keepsForever, topicPolicy, upstreamConfigs } from '../../../../src/compaction/config/effective-policy.js';

const defaults = new BrokerDefaults();

test('a topic policy resolves every setting from overrides, broker settings and Kafka defaults', () => {
  const p = topicPolicy(
    { 'cleanup.policy': 'compact', 'delete.retention.ms': '0100', 'min.cleanable.dirty.ratio': ' .2 ' },
    new BrokerDefaults({ 'log.roll.hours': '2' }),
  );
  assert.deepEqual(p, {
    compact: true,
    delete: false,
    deleteRetentionMs: 100,
    minCompactionLagMs: 0,
    maxCompactionLagMs: Number(9223372036854775807n),
    minCleanableDirtyRatio: 0.2,
    segmentMs: 7_200_000,
    segmentBytes: 1073741824,
    retentionMs: 604800000,
    retentionBytes: -1,
    storeRetentionMs: -1,
    carryAfterMs: -1,
  });
  assert.equal(topicPolicy({ 'cleanup.policy': 'delete, compact' }, defaults).delete, true);
  assert.ok(Number.isNaN(topicPolicy({ 'min.cleanable.dirty.ratio': 'NaN' }, defaults).minCleanableDirtyRatio));
});

test('the upstream keeps everything, in its own segments, unless the policy contains delete', () => {
  const kept = { 'segment.bytes': null, 'segment.ms': null, 'retention.bytes': '-1', 'retention.ms': '-1' };
  assert.deepEqual(upstreamConfigs({ 'cleanup.policy': 'compact', 'retention.ms': '1000', 'segment.ms': '100' }, defaults), kept);
  assert.deepEqual(upstreamConfigs({ 'cleanup.policy': '' }, defaults), kept);
  assert.deepEqual(upstreamConfigs({ 'cleanup.policy': 'compact,delete', 'retention.ms': '1000', 'segment.ms': '100' }, defaults), {
    'segment.bytes': null,
    'segment.ms': '100',
    'retention.bytes': null,
    'retention.ms': '1000',
  });
  assert.deepEqual(upstreamConfigs({ 'segment.bytes': '2097152' }, defaults), {
    'segment.bytes': '2097152',
    'segment.ms': null,
    'retention.bytes': null,
    'retention.ms': null,
  });
  assert.equal(keepsForever({}, new BrokerDefaults({ 'log.cleanup.policy': 'compact' })), true);
  assert.equal(keepsForever({ 'cleanup.policy': 'delete' }, defaults), false);
});

test('a create or whole-state alter sends the upstream the overrides upstreamConfigs gives, nulls left out', () => {
  assert.deepEqual(forwardedConfigs({ 'cleanup.policy': 'compact', 'segment.ms': '100', 'retention.bytes': '5', 'delete.retention.ms': '1' }, defaults), [
    { name: 'retention.bytes', value: '-1' },
    { name: 'retention.ms', value: '-1' },
  ]);
  assert.deepEqual(forwardedConfigs({ 'cleanup.policy': 'compact,delete', 'segment.bytes': '2097152', 'retention.bytes': '5' }, defaults), [
    { name: 'segment.bytes', value: '2097152' },
    { name: 'retention.bytes', value: '5' },
  ]);
});
