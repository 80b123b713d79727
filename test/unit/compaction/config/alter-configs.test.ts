import assert from 'node:assert/strict';
import { test } from 'node:test';
import { alterConfigsFilter } from '../../../../src/compaction/config/alter-configs.js';
import { ErrorCode } from '../../../../src/protocol/errors.js';
import { ApiKey } from '../../../../src/protocol/messages.js';
import { FilterHarness } from '../../../support/filter-harness.js';
import { configFixture, type FixtureOptions } from './config-fixture.js';

const ID = 'AAAAAAAAAAAAAAAAAAAAAQ';

function setup(opts: FixtureOptions = {}) {
  const fixture = configFixture({ upstreamIds: { orders: ID }, ...opts });
  return { ...fixture, harness: new FilterHarness(alterConfigsFilter(fixture.ctx)) };
}

const resource = (resourceName: string, configs: Record<string, string | null>, resourceType = 2) => ({
  resourceType,
  resourceName,
  configs: Object.entries(configs).map(([name, value]) => ({ name, value })),
});

const ok = (resourceName: string, resourceType = 2) => ({ errorCode: ErrorCode.NONE, errorMessage: null, resourceType, resourceName });

test('AlterConfigs without a topic resource passes through unread', async () => {
  const { harness } = setup();
  const run = await harness.request(ApiKey.AlterConfigs, 2, { resources: [resource('1', { 'log.cleaner.threads': '2' }, 4)], validateOnly: false });
  assert.ok(run.kind === 'forward' && !run.changed && !run.awaitsResponse);
});

test("a topic's owned configs become its overrides once the upstream took the rest, with the retention its policy needs", async () => {
  const { harness, writes } = setup();
  const run = await harness.request(ApiKey.AlterConfigs, 2, {
    resources: [resource('orders', { 'cleanup.policy': 'compact', 'compression.type': 'gzip' }), resource('1', { 'log.cleaner.threads': '2' }, 4)],
    validateOnly: false,
  });
  assert.equal(run.kind, 'forward');
  if (run.kind !== 'forward') return;
  assert.deepEqual(
    run.body.resources.map((r) => [r.resourceName, r.configs.map((c) => `${c.name}=${c.value}`)]),
    [
      ['orders', ['compression.type=gzip', 'retention.bytes=-1', 'retention.ms=-1']],
      ['1', ['log.cleaner.threads=2']],
    ],
  );
  assert.deepEqual(writes, []);
  const answer = await run.respond({ throttleTimeMs: 2, responses: [ok('orders'), ok('1', 4)] });
  assert.equal(answer.kind, 'forward');
  if (answer.kind !== 'forward') return;
  assert.equal(answer.body.throttleTimeMs, 2);
  assert.deepEqual(
    answer.body.responses.map((r) => [r.resourceName, r.errorCode]),
    [
      ['orders', ErrorCode.NONE],
      ['1', ErrorCode.NONE],
    ],
  );
  assert.deepEqual(writes, [{ topic: 'orders', stored: { topicId: ID, configs: { 'cleanup.policy': 'compact' } } }]);
});

test('refusals: an invalid value, a null owned config, a static topic and a repeated topic, answered in request order', async () => {
  const { harness, writes } = setup({ staticTopics: [{ topic: 'fixed', configs: { 'cleanup.policy': 'compact' } }] });
  const run = await harness.request(ApiKey.AlterConfigs, 1, {
    resources: [
      resource('bad', { 'min.cleanable.dirty.ratio': 'half' }),
      resource('nullish', { 'cleanup.policy': null }),
      resource('fixed', { 'cleanup.policy': 'delete' }),
      resource('twice', {}),
      resource('twice', { 'cleanup.policy': 'compact' }),
    ],
    validateOnly: false,
  });
  assert.equal(run.kind, 'respond', 'every resource refused: the upstream is not asked');
  if (run.kind !== 'respond') return;
  assert.deepEqual(
    run.body.responses.map((r) => [r.resourceName, r.errorCode]),
    [
      ['bad', ErrorCode.INVALID_CONFIG],
      ['nullish', ErrorCode.INVALID_REQUEST],
      ['fixed', ErrorCode.POLICY_VIOLATION],
      ['twice', ErrorCode.INVALID_REQUEST],
      ['twice', ErrorCode.INVALID_REQUEST],
    ],
  );
  assert.equal(run.body.responses[1]!.errorMessage, 'Null value not supported for : cleanup.policy');
  assert.match(run.body.responses[2]!.errorMessage!, /static topic configuration/);
  assert.equal(run.body.responses[3]!.errorMessage, 'Each resource must appear at most once.');
  assert.deepEqual(writes, []);
});

test('a refused resource is answered beside what the upstream answered for the others', async () => {
  const { harness, writes } = setup();
  const run = await harness.request(ApiKey.AlterConfigs, 2, {
    resources: [resource('bad', { 'segment.ms': 'soon' }), resource('orders', { 'cleanup.policy': 'compact' })],
    validateOnly: false,
  });
  assert.equal(run.kind, 'forward');
  if (run.kind !== 'forward') return;
  assert.deepEqual(
    run.body.resources.map((r) => r.resourceName),
    ['orders'],
  );
  const answer = await run.respond({ throttleTimeMs: 0, responses: [ok('orders')] });
  assert.ok(answer.kind === 'forward');
  assert.deepEqual(
    answer.body.responses.map((r) => [r.resourceName, r.errorCode]),
    [
      ['bad', ErrorCode.INVALID_CONFIG],
      ['orders', ErrorCode.NONE],
    ],
  );
  assert.equal(writes.length, 1);
});

test('nothing is stored for validateOnly, or when the upstream refused its part', async () => {
  const { harness, writes, settled } = setup();
  const dry = await harness.request(ApiKey.AlterConfigs, 2, { resources: [resource('orders', { 'cleanup.policy': 'compact' })], validateOnly: true });
  assert.ok(dry.kind === 'forward' && dry.body.validateOnly);
  await dry.respond({ throttleTimeMs: 0, responses: [ok('orders')] });
  const refused = await harness.request(ApiKey.AlterConfigs, 2, { resources: [resource('orders', { 'cleanup.policy': 'compact' })], validateOnly: false });
  assert.ok(refused.kind === 'forward');
  const answer = await refused.respond({
    throttleTimeMs: 0,
    responses: [{ errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED, errorMessage: 'no', resourceType: 2, resourceName: 'orders' }],
  });
  assert.ok(answer.kind === 'forward' && answer.body.responses[0]!.errorCode === ErrorCode.TOPIC_AUTHORIZATION_FAILED);
  assert.deepEqual(writes, []);
  assert.deepEqual(settled, [], "nor are the store's segments looked at");
});

test('dropping every owned config of a stored topic drops its record; a failed store is reported', async () => {
  const { harness, writes, store } = setup();
  store('orders', { 'cleanup.policy': 'compact' });
  const run = await harness.request(ApiKey.AlterConfigs, 2, { resources: [resource('orders', { 'compression.type': 'lz4' })], validateOnly: false });
  assert.ok(run.kind === 'forward');
  assert.deepEqual(
    run.body.resources[0]!.configs.map((c) => c.name),
    ['compression.type'],
    'a policy with delete again: no -1 retention',
  );
  await run.respond({ throttleTimeMs: 0, responses: [ok('orders')] });
  assert.deepEqual(writes, [{ topic: 'orders', stored: null }]);

  const failing = setup({ failWrites: new Error('no leader') });
  const again = await failing.harness.request(ApiKey.AlterConfigs, 2, {
    resources: [resource('orders', { 'cleanup.policy': 'compact' })],
    validateOnly: false,
  });
  assert.ok(again.kind === 'forward');
  const answer = await again.respond({ throttleTimeMs: 0, responses: [ok('orders')] });
  assert.ok(answer.kind === 'forward');
  assert.equal(answer.body.responses[0]!.errorCode, ErrorCode.UNKNOWN_SERVER_ERROR);
  assert.match(answer.body.responses[0]!.errorMessage!, /no leader.*the upstream part of the change was applied; retry the request/);
});

test('without a usable configs topic, owned configs are refused POLICY_VIOLATION', async () => {
  const { harness } = setup({ unavailable: 'read-only store' });
  const run = await harness.request(ApiKey.AlterConfigs, 2, { resources: [resource('orders', { 'cleanup.policy': 'compact' })], validateOnly: false });
  assert.ok(run.kind === 'respond');
  assert.equal(run.body.responses[0]!.errorCode, ErrorCode.POLICY_VIOLATION);
});

/** The store's answer to a compact-only change: it caps retention (OCI Streaming, Event Hubs, a policy). */
const capped = (resourceName: string) => ({
  ...ok(resourceName),
  errorCode: ErrorCode.POLICY_VIOLATION,
  errorMessage: `topic ${resourceName}: retention.ms=-1 exceeds the retention cap of 604800000 ms`,
});

test('a store that refuses -1 gets the change again without retention, and the topic turns compact-only when carrying keeps it', async () => {
  const { harness, admin, writes } = setup({ upstreamRetention: { ms: '604800000', bytes: '-1' } });
  const run = await harness.request(ApiKey.AlterConfigs, 2, {
    resources: [resource('orders', { 'cleanup.policy': 'compact', 'compression.type': 'gzip' })],
    validateOnly: false,
  });
  assert.equal(run.kind, 'forward');
  if (run.kind !== 'forward') return;
  const answer = await run.respond({ throttleTimeMs: 0, responses: [capped('orders')] });
  assert.equal(answer.kind, 'forward');
  if (answer.kind !== 'forward') return;
  assert.deepEqual(
    answer.body.responses.map((r) => [r.resourceName, r.errorCode, r.errorMessage]),
    [['orders', ErrorCode.NONE, null]],
  );
  const resent = admin
    .filter((a) => a.apiKey === ApiKey.AlterConfigs)
    .map((a) => (a.body as { resources: { configs: { name: string }[] }[] }).resources[0]!.configs);
  assert.deepEqual(resent, [[{ name: 'compression.type', value: 'gzip' }]], 'sent again without retention.ms and retention.bytes');
  assert.deepEqual(writes, [{ topic: 'orders', stored: { topicId: ID, configs: { 'cleanup.policy': 'compact' } } }]);
});

test('a store whose retention is too short to carry keeps the topic as it was, and says why with the numbers', async () => {
  const { harness, writes } = setup({ upstreamRetention: { ms: '20000', bytes: '-1' } });
  const run = await harness.request(ApiKey.AlterConfigs, 2, { resources: [resource('orders', { 'cleanup.policy': 'compact' })], validateOnly: false });
  assert.equal(run.kind, 'forward');
  if (run.kind !== 'forward') return;
  const answer = await run.respond({ throttleTimeMs: 0, responses: [capped('orders')] });
  assert.equal(answer.kind, 'forward');
  if (answer.kind !== 'forward') return;
  const [r] = answer.body.responses;
  assert.equal(r!.errorCode, ErrorCode.INVALID_CONFIG);
  assert.match(r!.errorMessage!, /retention\.ms=20000; kcompact carries them at 0\.5 of that .*its compaction configs were not/);
  assert.deepEqual(writes, [], 'the topic is not made compact-only');
});

test('a compact-only change at whose carry age carryBytesPerSecond cannot write the smallest pass is refused, with the numbers', async () => {
  const { ctx, harness, writes } = setup({ upstreamRetention: { ms: '300000', bytes: '-1' } });
  ctx.carrying.bytesPerSecond = 1;
  const run = await harness.request(ApiKey.AlterConfigs, 2, { resources: [resource('orders', { 'cleanup.policy': 'compact' })], validateOnly: false });
  assert.equal(run.kind, 'forward');
  if (run.kind !== 'forward') return;
  const answer = await run.respond({ throttleTimeMs: 0, responses: [capped('orders')] });
  assert.equal(answer.kind, 'forward');
  if (answer.kind !== 'forward') return;
  const [r] = answer.body.responses;
  assert.equal(r!.errorCode, ErrorCode.INVALID_CONFIG);
  assert.match(
    r!.errorMessage!,
    /^the store keeps the records of topic orders for retention\.ms=300000 .* carryBytesPerSecond=1 lets a pass write 150 bytes, less than the 183 bytes .*its compaction configs were not$/,
  );
  assert.deepEqual(writes, []);
});

test('a store that refuses the change without retention too gets the refusal, with what kcompact asked for and why', async () => {
  const { harness, writes } = setup({ alterErrors: { orders: { errorCode: ErrorCode.POLICY_VIOLATION, errorMessage: 'no changes allowed' } } });
  const run = await harness.request(ApiKey.AlterConfigs, 2, { resources: [resource('orders', { 'cleanup.policy': 'compact' })], validateOnly: false });
  assert.equal(run.kind, 'forward');
  if (run.kind !== 'forward') return;
  const answer = await run.respond({ throttleTimeMs: 0, responses: [capped('orders')] });
  assert.equal(answer.kind, 'forward');
  if (answer.kind !== 'forward') return;
  const [r] = answer.body.responses;
  assert.equal(r!.errorCode, ErrorCode.POLICY_VIOLATION);
  assert.match(
    r!.errorMessage!,
    /^kcompact gives topic orders retention\.ms=-1 .*the upstream refused: topic orders: retention\.ms=-1 exceeds the retention cap/,
  );
  assert.deepEqual(writes, []);
});
