import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BrokerDefaults } from '../../../../src/compaction/config/broker-defaults.js';
import { describeConfigsFilter, mergeOwned } from '../../../../src/compaction/config/describe-configs.js';
import { type DescribeConfigsResponseResourceResult as DescribedConfig, ApiKey } from '../../../../src/protocol/messages.js';
import { TopicConfigState } from '../../../../src/compaction/config/topic-config-state.js';
import { createLogger } from '../../../../src/common/log.js';
import { TopicIds } from '../../../../src/proxy/topic-ids.js';
import { ErrorCode } from '../../../../src/protocol/errors.js';
import { FilterHarness } from '../../../support/filter-harness.js';
import { configFixture } from './config-fixture.js';

const defaults = new BrokerDefaults();
const opts = { includeSynonyms: false, includeDocumentation: false };

function ctx() {
  return { state: new TopicConfigState(defaults, new TopicIds(), [], createLogger()), defaults };
}

const upstreamEntry = (name: string, value: string, configSource = 1): DescribedConfig => ({
  name,
  value,
  readOnly: false,
  configSource,
  isSensitive: false,
  synonyms: [],
  configType: 5,
  documentation: null,
});

test("owned entries replace the upstream's in place; missing ones are added after", () => {
  const c = ctx();
  c.state.apply(1, 't', { configs: { 'cleanup.policy': 'compact' } });
  const merged = mergeOwned(
    c,
    't',
    [upstreamEntry('compression.type', 'gzip'), upstreamEntry('retention.ms', '-1'), upstreamEntry('cleanup.policy', 'delete', 5)],
    null,
    opts,
  );
  assert.deepEqual(
    merged.slice(0, 3).map((e) => `${e.name}=${e.value}/${e.configSource}`),
    ['compression.type=gzip/1', 'retention.ms=604800000/5', 'cleanup.policy=compact/1'],
  );
  assert.equal(merged.length, 3 + 7);
});

test('only the owned configs asked for are shown, even when the upstream ignores the key list', () => {
  const c = ctx();
  const merged = mergeOwned(
    c,
    't',
    [upstreamEntry('retention.bytes', '-1', 5), upstreamEntry('compression.type', 'producer', 5)],
    ['cleanup.policy', 'compression.type'],
    opts,
  );
  assert.deepEqual(
    merged.map((e) => e.name),
    ['compression.type', 'cleanup.policy'],
  );
  assert.equal(mergeOwned(c, 't', [], [], opts).length, 9, 'an empty key list means all');
});

test("a topic that expires data shows retention set on the upstream directly; a compacted topic hides the upstream's -1", () => {
  const c = ctx();
  const upstream = [upstreamEntry('retention.ms', '1000'), upstreamEntry('segment.bytes', '2097152')];
  const plain = mergeOwned(c, 'plain', upstream, ['retention.ms', 'segment.bytes'], opts);
  assert.deepEqual(
    plain.map((e) => `${e.name}=${e.value}/${e.configSource}`),
    ['retention.ms=1000/1', 'segment.bytes=2097152/1'],
  );
  c.state.apply(1, 'compacted', { configs: { 'cleanup.policy': 'compact', 'retention.ms': '5000' } });
  const compacted = mergeOwned(
    c,
    'compacted',
    [upstreamEntry('retention.ms', '-1'), upstreamEntry('retention.bytes', '-1')],
    ['retention.ms', 'retention.bytes'],
    opts,
  );
  assert.deepEqual(
    compacted.map((e) => `${e.name}=${e.value}/${e.configSource}`),
    ['retention.ms=5000/1', 'retention.bytes=-1/5'],
  );
});

const described = (name: string, value: string | null, configSource: number) => ({
  name,
  value,
  readOnly: false,
  configSource,
  isSensitive: false,
  synonyms: [],
  configType: 0,
  documentation: null,
});

test('DescribeConfigs without topic resources passes through unread', async () => {
  const harness = new FilterHarness(describeConfigsFilter(configFixture().ctx));
  const run = await harness.request(ApiKey.DescribeConfigs, 4, {
    resources: [{ resourceType: 4, resourceName: '1', configurationKeys: null }],
    includeSynonyms: false,
    includeDocumentation: false,
  });
  assert.ok(run.kind === 'forward' && !run.changed && !run.awaitsResponse);
});

test("a compacted topic's owned configs are kcompact's, with sources, synonyms and documentation as asked", async () => {
  const { ctx, store } = configFixture({ brokerConfigs: { 'log.retention.ms': '86400000' } });
  store('orders', { 'cleanup.policy': 'compact', 'segment.ms': '60000' });
  const harness = new FilterHarness(describeConfigsFilter(ctx));
  const run = await harness.request(ApiKey.DescribeConfigs, 4, {
    resources: [
      { resourceType: 2, resourceName: 'orders', configurationKeys: null },
      { resourceType: 2, resourceName: 'gone', configurationKeys: null },
      { resourceType: 4, resourceName: '1', configurationKeys: null },
    ],
    includeSynonyms: true,
    includeDocumentation: true,
  });
  assert.equal(run.kind, 'forward');
  if (run.kind !== 'forward') return;
  assert.ok(run.awaitsResponse && !run.changed, 'the request goes on as it came');
  const answer = await run.respond({
    throttleTimeMs: 0,
    results: [
      {
        errorCode: ErrorCode.NONE,
        errorMessage: null,
        resourceType: 2,
        resourceName: 'orders',
        configs: [described('compression.type', 'producer', 5), described('retention.ms', '-1', 1), described('cleanup.policy', 'delete', 5)],
      },
      { errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: 'gone', resourceType: 2, resourceName: 'gone', configs: [] },
      { errorCode: ErrorCode.NONE, errorMessage: null, resourceType: 4, resourceName: '1', configs: [described('log.retention.ms', '86400000', 4)] },
    ],
  });
  assert.equal(answer.kind, 'forward');
  if (answer.kind !== 'forward') return;
  const [orders, gone, broker] = answer.body.results;
  const byName = new Map(orders!.configs.map((c) => [c.name, c]));
  assert.deepEqual(
    orders!.configs.slice(0, 3).map((c) => `${c.name}=${c.value}/${c.configSource}`),
    ['compression.type=producer/5', 'retention.ms=86400000/4', 'cleanup.policy=compact/1'],
  );
  assert.equal(orders!.configs.length, 3 + 7, 'owned configs the upstream lacks are added');
  assert.deepEqual(
    byName.get('cleanup.policy')!.synonyms.map((s) => `${s.name}=${s.value}/${s.source}`),
    ['cleanup.policy=compact/1', 'log.cleanup.policy=delete/5'],
  );
  assert.deepEqual(
    byName.get('retention.ms')!.synonyms.map((s) => `${s.name}=${s.value}/${s.source}`),
    ['log.retention.ms=86400000/4', 'log.retention.hours=168/5'],
  );
  assert.equal(byName.get('segment.ms')!.value, '60000');
  assert.equal(byName.get('segment.ms')!.configType, 5);
  assert.match(byName.get('cleanup.policy')!.documentation!, /\S/);
  assert.deepEqual(gone!.configs, [], 'an error result is left alone');
  assert.deepEqual(
    broker!.configs.map((c) => c.name),
    ['log.retention.ms'],
  );

  const plain = await harness.request(ApiKey.DescribeConfigs, 1, {
    resources: [{ resourceType: 2, resourceName: 'orders', configurationKeys: ['cleanup.policy'] }],
    includeSynonyms: false,
  });
  assert.equal(plain.kind, 'forward');
  if (plain.kind !== 'forward') return;
  const v1 = await plain.respond({
    throttleTimeMs: 0,
    results: [{ errorCode: ErrorCode.NONE, errorMessage: null, resourceType: 2, resourceName: 'orders', configs: [described('cleanup.policy', 'delete', 5)] }],
  });
  assert.equal(v1.kind, 'forward');
  if (v1.kind !== 'forward') return;
  assert.deepEqual(
    v1.body.results[0]!.configs.map((c) => [c.name, c.value, c.configSource, c.synonyms.length]),
    [['cleanup.policy', 'compact', 1, 0]],
    'only the keys asked for; no synonyms unless asked',
  );
});
