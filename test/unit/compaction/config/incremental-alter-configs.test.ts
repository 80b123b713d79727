import assert from 'node:assert/strict';
import { test } from 'node:test';
import { incrementalAlterConfigsFilter } from '../../../../src/compaction/config/incremental-alter-configs.js';
import { AlterOp } from '../../../../src/compaction/config/incremental-ops.js';
import { ErrorCode } from '../../../../src/protocol/errors.js';
import { ApiKey } from '../../../../src/protocol/messages.js';
import { FilterHarness } from '../../../support/filter-harness.js';
import { configFixture, type FixtureOptions } from './config-fixture.js';

const ID = 'AAAAAAAAAAAAAAAAAAAAAQ';
const { SET, DELETE, APPEND } = AlterOp;

function setup(opts: FixtureOptions = {}) {
  const fixture = configFixture({ upstreamIds: { orders: ID }, ...opts });
  return { ...fixture, harness: new FilterHarness(incrementalAlterConfigsFilter(fixture.ctx)) };
}

const resource = (resourceName: string, ops: [string, number, string | null][], resourceType = 2) => ({
  resourceType,
  resourceName,
  configs: ops.map(([name, configOperation, value]) => ({ name, configOperation, value })),
});

const ok = (resourceName: string) => ({ errorCode: ErrorCode.NONE, errorMessage: null, resourceType: 2, resourceName });
const opsOf = (configs: { name: string; configOperation: number; value: string | null }[]) => configs.map((c) => `${c.name}:${c.configOperation}=${c.value}`);

test('operations on configs kcompact does not own pass through unread', async () => {
  const { harness } = setup();
  const run = await harness.request(ApiKey.IncrementalAlterConfigs, 1, {
    resources: [resource('orders', [['compression.type', SET, 'gzip']])],
    validateOnly: false,
  });
  assert.ok(run.kind === 'forward' && !run.changed && !run.awaitsResponse);
});

test('SET cleanup.policy=compact: the upstream gets retention -1, the override is stored once it accepted', async () => {
  const { harness, writes, settled } = setup();
  const run = await harness.request(ApiKey.IncrementalAlterConfigs, 1, {
    resources: [
      resource('orders', [
        ['cleanup.policy', SET, 'compact'],
        ['compression.type', SET, 'gzip'],
      ]),
      resource('plain', [['compression.type', SET, 'lz4']]),
    ],
    validateOnly: false,
  });
  assert.equal(run.kind, 'forward');
  if (run.kind !== 'forward') return;
  assert.deepEqual(
    run.body.resources.map((r) => opsOf(r.configs)),
    [['compression.type:0=gzip', 'retention.bytes:0=-1', 'retention.ms:0=-1'], ['compression.type:0=lz4']],
  );
  const answer = await run.respond({ throttleTimeMs: 0, responses: [ok('orders'), ok('plain')] });
  assert.ok(answer.kind === 'forward');
  assert.deepEqual(
    answer.body.responses.map((r) => [r.resourceName, r.errorCode]),
    [
      ['orders', ErrorCode.NONE],
      ['plain', ErrorCode.NONE],
    ],
  );
  assert.deepEqual(writes, [{ topic: 'orders', stored: { topicId: ID, configs: { 'cleanup.policy': 'compact' } } }]);
  assert.deepEqual(settled, ['orders', 'plain'], "the store's segments are put in line before the answer (store-segments.ts)");
});

test('DELETE cleanup.policy on a compacted topic gives the upstream its retention back and drops the record', async () => {
  const { harness, writes, store } = setup();
  store('orders', { 'cleanup.policy': 'compact' });
  const run = await harness.request(ApiKey.IncrementalAlterConfigs, 1, {
    resources: [resource('orders', [['cleanup.policy', DELETE, null]])],
    validateOnly: false,
  });
  assert.ok(run.kind === 'forward');
  assert.deepEqual(opsOf(run.body.resources[0]!.configs), ['retention.bytes:1=null', 'retention.ms:1=null']);
  await run.respond({ throttleTimeMs: 0, responses: [ok('orders')] });
  assert.deepEqual(writes, [{ topic: 'orders', stored: null }]);
});

test('an owned-only change that leaves the upstream as it was still goes upstream, with no operations', async () => {
  const { harness, writes, store } = setup();
  store('orders', { 'cleanup.policy': 'compact' });
  const run = await harness.request(ApiKey.IncrementalAlterConfigs, 1, {
    resources: [resource('orders', [['min.cleanable.dirty.ratio', SET, '0.1']])],
    validateOnly: false,
  });
  assert.ok(run.kind === 'forward');
  assert.deepEqual(run.body.resources[0]!.configs, []);
  await run.respond({ throttleTimeMs: 0, responses: [ok('orders')] });
  assert.deepEqual(
    writes.map((w) => w.stored?.configs),
    [{ 'cleanup.policy': 'compact', 'min.cleanable.dirty.ratio': '0.1' }],
  );
});

test('refusals: duplicate keys, null values, static topics, bad results and repeated resources', async () => {
  const { harness, writes } = setup({ staticTopics: [{ topic: 'fixed', configs: { 'cleanup.policy': 'compact' } }] });
  const run = await harness.request(ApiKey.IncrementalAlterConfigs, 1, {
    resources: [
      resource('dupe', [
        ['cleanup.policy', SET, 'compact'],
        ['cleanup.policy', APPEND, 'delete'],
      ]),
      resource('nullish', [['cleanup.policy', SET, null]]),
      resource('fixed', [['cleanup.policy', SET, 'delete']]),
      resource('ratio', [['min.cleanable.dirty.ratio', SET, '7']]),
      resource('lists', [['segment.ms', APPEND, '1']]),
      resource('twice', [['compression.type', SET, 'gzip']]),
      resource('twice', [['cleanup.policy', SET, 'compact']]),
    ],
    validateOnly: false,
  });
  assert.ok(run.kind === 'respond', 'every resource refused: answered without the upstream');
  assert.deepEqual(
    run.body.responses.map((r) => [r.resourceName, r.errorCode]),
    [
      ['dupe', ErrorCode.INVALID_REQUEST],
      ['nullish', ErrorCode.INVALID_REQUEST],
      ['fixed', ErrorCode.POLICY_VIOLATION],
      ['ratio', ErrorCode.INVALID_CONFIG],
      ['lists', ErrorCode.INVALID_CONFIG],
      ['twice', ErrorCode.INVALID_REQUEST],
      ['twice', ErrorCode.INVALID_REQUEST],
    ],
  );
  assert.equal(run.body.responses[0]!.errorMessage, 'Error due to duplicate config keys');
  assert.deepEqual(writes, []);
});

test('validateOnly and store failures', async () => {
  const dry = setup();
  const run = await dry.harness.request(ApiKey.IncrementalAlterConfigs, 1, {
    resources: [resource('orders', [['cleanup.policy', SET, 'compact']])],
    validateOnly: true,
  });
  assert.ok(run.kind === 'forward' && run.body.validateOnly);
  await run.respond({ throttleTimeMs: 0, responses: [ok('orders')] });
  assert.deepEqual(dry.writes, []);

  const failing = setup({ failWrites: new Error('no leader') });
  const again = await failing.harness.request(ApiKey.IncrementalAlterConfigs, 1, {
    resources: [resource('orders', [['cleanup.policy', SET, 'compact']])],
    validateOnly: false,
  });
  assert.ok(again.kind === 'forward');
  const answer = await again.respond({ throttleTimeMs: 0, responses: [ok('orders')] });
  assert.ok(answer.kind === 'forward');
  assert.equal(answer.body.responses[0]!.errorCode, ErrorCode.UNKNOWN_SERVER_ERROR);
  const missing = await failing.harness.request(ApiKey.IncrementalAlterConfigs, 1, {
    resources: [resource('orders', [['cleanup.policy', SET, 'compact']])],
    validateOnly: false,
  });
  assert.ok(missing.kind === 'forward');
  const none = await missing.respond({ throttleTimeMs: 0, responses: [] });
  assert.ok(none.kind === 'forward');
  assert.deepEqual(
    none.body.responses.map((r) => [r.errorCode, r.errorMessage]),
    [[ErrorCode.UNKNOWN_SERVER_ERROR, 'the upstream did not answer for this resource']],
  );
});

test('a store that refuses -1 gets the operations again with its retention deleted to its default, and the topic turns compact-only', async () => {
  const { harness, admin, writes } = setup({ upstreamRetention: { ms: '604800000', bytes: '-1' } });
  const run = await harness.request(ApiKey.IncrementalAlterConfigs, 1, {
    resources: [
      resource('orders', [
        ['cleanup.policy', SET, 'compact'],
        ['compression.type', SET, 'gzip'],
      ]),
    ],
    validateOnly: false,
  });
  assert.equal(run.kind, 'forward');
  if (run.kind !== 'forward') return;
  const refused = { ...ok('orders'), errorCode: ErrorCode.POLICY_VIOLATION, errorMessage: 'retention.ms=-1 exceeds the retention cap' };
  const answer = await run.respond({ throttleTimeMs: 0, responses: [refused] });
  assert.ok(answer.kind === 'forward');
  assert.deepEqual(
    answer.body.responses.map((r) => [r.resourceName, r.errorCode]),
    [['orders', ErrorCode.NONE]],
  );
  const resent = admin.filter((a) => a.apiKey === ApiKey.IncrementalAlterConfigs);
  assert.deepEqual(
    resent.map((a) => opsOf((a.body as { resources: { configs: { name: string; configOperation: number; value: string | null }[] }[] }).resources[0]!.configs)),
    [['compression.type:0=gzip', `retention.bytes:${DELETE}=null`, `retention.ms:${DELETE}=null`]],
  );
  assert.deepEqual(writes, [{ topic: 'orders', stored: { topicId: ID, configs: { 'cleanup.policy': 'compact' } } }]);
});
