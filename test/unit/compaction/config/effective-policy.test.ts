import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BrokerDefaults } from '../../../../src/compaction/config/broker-defaults.js';
import { forwardedConfigs, keepsForever, topicPolicy, upstreamRetention } from '../../../../src/compaction/config/effective-policy.js';

const defaults = new BrokerDefaults();

test('a topic policy resolves every setting from overrides, broker settings and Kafka defaults', () => {
  const p = topicPolicy({ 'cleanup.policy': 'compact', 'delete.retention.ms': '0100', 'min.cleanable.dirty.ratio': ' .2 ' }, new BrokerDefaults({ 'log.roll.hours': '2' }));
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
  });
  assert.equal(topicPolicy({ 'cleanup.policy': 'delete, compact' }, defaults).delete, true);
  assert.ok(Number.isNaN(topicPolicy({ 'min.cleanable.dirty.ratio': 'NaN' }, defaults).minCleanableDirtyRatio));
});

test('the upstream keeps everything unless the policy contains delete', () => {
  assert.deepEqual(upstreamRetention({ 'cleanup.policy': 'compact', 'retention.ms': '1000' }, defaults), { 'retention.ms': '-1', 'retention.bytes': '-1' });
  assert.deepEqual(upstreamRetention({ 'cleanup.policy': '' }, defaults), { 'retention.ms': '-1', 'retention.bytes': '-1' });
  assert.deepEqual(upstreamRetention({ 'cleanup.policy': 'compact,delete', 'retention.ms': '1000' }, defaults), { 'retention.ms': '1000', 'retention.bytes': null });
  assert.deepEqual(upstreamRetention({}, defaults), { 'retention.ms': null, 'retention.bytes': null });
  assert.equal(keepsForever({}, new BrokerDefaults({ 'log.cleanup.policy': 'compact' })), true);
  assert.equal(keepsForever({ 'cleanup.policy': 'delete' }, defaults), false);
});

test('the upstream gets segment settings as given and the retention the policy needs', () => {
  assert.deepEqual(forwardedConfigs({ 'cleanup.policy': 'compact', 'segment.ms': '100', 'retention.bytes': '5', 'delete.retention.ms': '1' }, defaults), [
    { name: 'segment.ms', value: '100' },
    { name: 'retention.ms', value: '-1' },
    { name: 'retention.bytes', value: '-1' },
  ]);
  assert.deepEqual(forwardedConfigs({ 'cleanup.policy': 'compact,delete', 'segment.bytes': '2097152', 'retention.bytes': '5' }, defaults), [
    { name: 'segment.bytes', value: '2097152' },
    { name: 'retention.bytes', value: '5' },
  ]);
});
