import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CONFIGS_TOPIC } from '../../../../src/compaction/config/configs-topic.js';
import { deleteTopicsFilter } from '../../../../src/compaction/config/delete-topics.js';
import { ErrorCode } from '../../../../src/protocol/errors.js';
import { ApiKey } from '../../../../src/protocol/messages.js';
import { FilterHarness } from '../../../support/filter-harness.js';
import { configFixture, type FixtureOptions } from './config-fixture.js';

const ORDERS_ID = 'AAAAAAAAAAAAAAAAAAAAAQ';
const STORE_ID = 'AAAAAAAAAAAAAAAAAAAAAg';

function setup(opts: FixtureOptions = {}) {
  const fixture = configFixture(opts);
  return { ...fixture, harness: new FilterHarness(deleteTopicsFilter(fixture.ctx)) };
}

const deleted = (name: string | null, topicId?: string) => ({ name, topicId, errorCode: ErrorCode.NONE, errorMessage: null });

test('deleting topics without stored configs passes through untouched', async () => {
  const { harness } = setup();
  const run = await harness.request(ApiKey.DeleteTopics, 5, { topicNames: ['plain'], timeoutMs: 1000 });
  assert.ok(run.kind === 'forward' && !run.changed && !run.awaitsResponse);
});

test("a deleted topic's stored configs are dropped; one the upstream failed to delete keeps them", async () => {
  const { harness, writes, store } = setup();
  store('orders', { 'cleanup.policy': 'compact' });
  store('kept', { 'cleanup.policy': 'compact' });
  const run = await harness.request(ApiKey.DeleteTopics, 5, { topicNames: ['orders', 'kept'], timeoutMs: 1000 });
  assert.equal(run.kind, 'forward');
  if (run.kind !== 'forward') return;
  assert.ok(run.awaitsResponse && !run.changed);
  const answer = await run.respond({
    throttleTimeMs: 0,
    responses: [deleted('orders'), { name: 'kept', errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED, errorMessage: 'no' }],
  });
  assert.ok(answer.kind === 'forward' && !answer.changed, 'the answer goes back as it came');
  assert.deepEqual(writes, [{ topic: 'orders', stored: null }]);
});

test('topics named by id (v6) are resolved to names before the request goes out', async () => {
  const { harness, writes, store, topicIds } = setup();
  store('orders', { 'cleanup.policy': 'compact' }, ORDERS_ID);
  topicIds.learn('orders', ORDERS_ID);
  const run = await harness.request(ApiKey.DeleteTopics, 6, { topics: [{ name: null, topicId: ORDERS_ID }], timeoutMs: 1000 });
  assert.ok(run.kind === 'forward' && run.awaitsResponse);
  // The topic-id filter, nearer the upstream, may have forgotten the id by the time the answer arrives.
  topicIds.forget('orders');
  await run.respond({ throttleTimeMs: 0, responses: [deleted(null, ORDERS_ID)] });
  assert.deepEqual(writes, [{ topic: 'orders', stored: null }]);
});

test('the configs topic is refused POLICY_VIOLATION and the rest of the request goes on', async () => {
  const { harness, writes, store } = setup();
  store('orders', { 'cleanup.policy': 'compact' });
  const run = await harness.request(ApiKey.DeleteTopics, 5, { topicNames: [CONFIGS_TOPIC, 'orders'], timeoutMs: 1000 });
  assert.equal(run.kind, 'forward');
  if (run.kind !== 'forward') return;
  assert.deepEqual(run.body.topicNames, ['orders']);
  const answer = await run.respond({ throttleTimeMs: 4, responses: [deleted('orders')] });
  assert.equal(answer.kind, 'forward');
  if (answer.kind !== 'forward') return;
  assert.equal(answer.body.throttleTimeMs, 4);
  assert.deepEqual(
    answer.body.responses.map((r) => [r.name, r.errorCode]),
    [
      ['orders', ErrorCode.NONE],
      [CONFIGS_TOPIC, ErrorCode.POLICY_VIOLATION],
    ],
  );
  assert.match(answer.body.responses[1]!.errorMessage!, /holds kcompact's topic configs/);
  assert.deepEqual(writes, [{ topic: 'orders', stored: null }]);
});

test('a request naming only the configs topic, by name or by id, is answered without the upstream', async () => {
  const { harness, topicIds } = setup();
  const byName = await harness.request(ApiKey.DeleteTopics, 4, { topicNames: [CONFIGS_TOPIC], timeoutMs: 1000 });
  assert.ok(byName.kind === 'respond');
  assert.deepEqual(
    byName.body.responses.map((r) => [r.name, r.errorCode]),
    [[CONFIGS_TOPIC, ErrorCode.POLICY_VIOLATION]],
  );
  topicIds.learn(CONFIGS_TOPIC, STORE_ID);
  const byId = await harness.request(ApiKey.DeleteTopics, 6, { topics: [{ name: null, topicId: STORE_ID }], timeoutMs: 1000 });
  assert.ok(byId.kind === 'respond');
  assert.deepEqual(
    byId.body.responses.map((r) => [r.name, r.topicId, r.errorCode]),
    [[CONFIGS_TOPIC, STORE_ID, ErrorCode.POLICY_VIOLATION]],
  );
});

test('a failed drop of stored configs is logged, not answered: the topic is gone either way', async () => {
  const { harness, store } = setup({ failWrites: new Error('no leader') });
  store('orders', { 'cleanup.policy': 'compact' });
  const run = await harness.request(ApiKey.DeleteTopics, 5, { topicNames: ['orders'], timeoutMs: 1000 });
  assert.ok(run.kind === 'forward');
  const answer = await run.respond({ throttleTimeMs: 0, responses: [deleted('orders')] });
  assert.ok(answer.kind === 'forward' && answer.body.responses[0]!.errorCode === ErrorCode.NONE);
});
