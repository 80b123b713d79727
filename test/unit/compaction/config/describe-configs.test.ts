import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BrokerDefaults } from '../../../../src/compaction/config/broker-defaults.js';
import { mergeOwned } from '../../../../src/compaction/config/describe-configs.js';
import type { DescribedConfig } from '../../../../src/compaction/config/describe-entry.js';
import { TopicConfigState } from '../../../../src/compaction/config/topic-config-state.js';
import { createLogger } from '../../../../src/ops/log.js';
import { TopicIds } from '../../../../src/proxy/topic-ids.js';

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
