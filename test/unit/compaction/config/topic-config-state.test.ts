import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BrokerDefaults } from '../../../../src/compaction/config/broker-defaults.js';
import { TopicConfigError } from '../../../../src/compaction/config/config-error.js';
import { TopicConfigState, type StaticTopic } from '../../../../src/compaction/config/topic-config-state.js';
import { createLogger } from '../../../../src/common/log.js';
import { TopicIds } from '../../../../src/proxy/topic-ids.js';

const ID_A = 'XhzDQGnES3mzr8NT16faDw';
const ID_B = 'INyfQd3ES0Kc5DTGPBfSUA';

function fresh(staticTopics: StaticTopic[] = []) {
  const ids = new TopicIds();
  const state = new TopicConfigState(new BrokerDefaults(), ids, staticTopics, createLogger());
  const changed: string[] = [];
  state.onChange((t) => changed.push(t));
  return { ids, state, changed };
}

test('records apply in offset order; an older record never replaces a newer one, deleted or not', () => {
  const { state, changed } = fresh();
  assert.equal(state.apply(5, 'orders', { configs: { 'cleanup.policy': 'compact' } }), true);
  assert.equal(state.compacted('orders')?.compact, true);
  assert.equal(state.apply(3, 'orders', { configs: { 'cleanup.policy': 'delete' } }), false);
  assert.equal(state.apply(9, 'orders', null), true);
  assert.equal(state.compacted('orders'), undefined);
  assert.equal(state.apply(7, 'orders', { configs: { 'cleanup.policy': 'compact' } }), false, 'a deleted topic stays deleted');
  assert.deepEqual(state.entry('orders'), { offset: 9, topicId: undefined, configs: null });
  assert.deepEqual(changed, ['orders', 'orders']);
  assert.deepEqual(state.compactedTopics(), []);
});

test('only topics whose policy contains compact are compacted; the policy carries every setting', () => {
  const { state } = fresh();
  state.apply(1, 'a', { configs: { 'cleanup.policy': 'delete', 'segment.ms': '5' } });
  state.apply(2, 'b', { configs: { 'cleanup.policy': 'compact,delete', 'retention.ms': '1000', 'delete.retention.ms': '7' } });
  assert.equal(state.compacted('a'), undefined);
  assert.deepEqual(state.overrides('a'), { 'cleanup.policy': 'delete', 'segment.ms': '5' });
  const b = state.compacted('b')!;
  assert.deepEqual([b.compact, b.delete, b.retentionMs, b.deleteRetentionMs], [true, true, 1000, 7]);
  assert.deepEqual(state.compactedTopics(), ['b']);
});

test('configs stored for one topic id do not apply to a topic re-created under the same name', () => {
  const { ids, state, changed } = fresh();
  state.apply(1, 'orders', { topicId: ID_A, configs: { 'cleanup.policy': 'compact' } });
  assert.ok(state.compacted('orders'), 'an unknown current id matches');
  ids.learn('orders', ID_A);
  assert.ok(state.compacted('orders'));
  ids.learn('orders', ID_B);
  assert.equal(state.compacted('orders'), undefined);
  assert.deepEqual(state.overrides('orders'), {});
  changed.length = 0;
  state.recheckTopicIds();
  assert.deepEqual(changed, ['orders']);
  state.recheckTopicIds();
  assert.deepEqual(changed, ['orders'], 'announced once');
  assert.deepEqual(state.topicsWithIds(), ['orders']);
});

test('static topics win over stored configs and are validated up front', () => {
  const { state } = fresh([{ topic: 'fixed', configs: { 'cleanup.policy': 'compact', 'min.compaction.lag.ms': '10' } }]);
  state.apply(1, 'fixed', { configs: { 'cleanup.policy': 'delete' } });
  assert.equal(state.isStatic('fixed'), true);
  assert.equal(state.compacted('fixed')?.minCompactionLagMs, 10);
  assert.deepEqual(state.compactedTopics(), ['fixed']);
  assert.throws(
    () => fresh([{ topic: 'x', configs: { 'cleanup.policy': 'foo' } }]),
    (e: Error) => e instanceof TopicConfigError && /static topic x: Invalid value foo/.test(e.message),
  );
  assert.throws(() => fresh([{ topic: 'x', configs: { 'compression.type': 'gzip' } }]), /compression\.type is not a config kcompact handles/);
  assert.throws(
    () =>
      fresh([
        { topic: 'x', configs: {} },
        { topic: 'x', configs: {} },
      ]),
    /listed twice/,
  );
});

test('a failing listener does not stop the others', () => {
  const { state, changed } = fresh();
  state.onChange(() => {
    throw new Error('boom');
  });
  const seen: string[] = [];
  const off = state.onChange((t) => seen.push(t));
  state.apply(1, 't', { configs: {} });
  assert.deepEqual([changed, seen], [['t'], ['t']]);
  off();
  state.clear();
  assert.deepEqual(seen, ['t']);
  assert.equal(state.entry('t'), undefined);
});
