import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BrokerDefaults } from '../../../../src/compaction/config/broker-defaults.js';
import { TopicConfigError } from '../../../../src/compaction/config/config-error.js';
import { TOPIC_CONFIG } from '../../../../src/compaction/config/definitions.js';
import { createdEntry, describeEntry } from '../../../../src/compaction/config/describe-entry.js';

const all = { includeSynonyms: true, includeDocumentation: true };
const def = (name: string) => TOPIC_CONFIG.get(name)!;
const describe = (name: string, override: string | undefined, defaults = new BrokerDefaults()) => describeEntry(def(name), override, defaults, all);
const brief = (name: string, override: string | undefined, defaults = new BrokerDefaults()) => {
  const e = describe(name, override, defaults);
  return { value: e.value, source: e.configSource, synonyms: e.synonyms };
};

test('a topic without overrides on a broker without settings: Kafka 4.4 defaults, types and synonyms', () => {
  const e = describe('cleanup.policy', undefined);
  assert.deepEqual(
    { ...e, documentation: undefined },
    {
      name: 'cleanup.policy',
      value: 'delete',
      readOnly: false,
      configSource: 5,
      isSensitive: false,
      synonyms: [{ name: 'log.cleanup.policy', value: 'delete', source: 5 }],
      configType: 7,
      documentation: undefined,
    },
  );
  assert.match(e.documentation!, /^This config designates the retention policy to use on log segments\./);
  const expected: Record<string, [string, number, { name: string; value: string; source: number }[]]> = {
    'delete.retention.ms': ['86400000', 5, [{ name: 'log.cleaner.delete.retention.ms', value: '86400000', source: 5 }]],
    'min.compaction.lag.ms': ['0', 5, [{ name: 'log.cleaner.min.compaction.lag.ms', value: '0', source: 5 }]],
    'max.compaction.lag.ms': ['9223372036854775807', 5, [{ name: 'log.cleaner.max.compaction.lag.ms', value: '9223372036854775807', source: 5 }]],
    'min.cleanable.dirty.ratio': ['0.5', 6, [{ name: 'log.cleaner.min.cleanable.ratio', value: '0.5', source: 5 }]],
    'segment.bytes': ['1073741824', 3, [{ name: 'log.segment.bytes', value: '1073741824', source: 5 }]],
    // Kafka lists no synonym for these two: its default comes from log.*.hours, which ConfigHelper drops.
    'segment.ms': ['604800000', 5, []],
    'retention.ms': ['604800000', 5, []],
    'retention.bytes': ['-1', 5, [{ name: 'log.retention.bytes', value: '-1', source: 5 }]],
  };
  for (const [name, [value, type, synonyms]] of Object.entries(expected)) {
    const got = describe(name, undefined);
    assert.deepEqual([got.value, got.configSource, got.configType, got.synonyms], [value, 5, type, synonyms], name);
  }
});

test('overrides show in canonical Java form with a DYNAMIC_TOPIC_CONFIG synonym first', () => {
  assert.deepEqual(brief('cleanup.policy', ' compact , delete '), {
    value: 'compact,delete',
    source: 1,
    synonyms: [
      { name: 'cleanup.policy', value: 'compact,delete', source: 1 },
      { name: 'log.cleanup.policy', value: 'delete', source: 5 },
    ],
  });
  assert.equal(describe('cleanup.policy', 'delete,compact,delete').value, 'delete,compact');
  assert.equal(describe('cleanup.policy', 'compact,compact').value, 'compact');
  assert.equal(describe('cleanup.policy', '').value, '');
  assert.equal(describe('min.cleanable.dirty.ratio', ' .5 ').value, '0.5');
  assert.equal(describe('min.cleanable.dirty.ratio', '1e-5').value, '1.0E-5');
  assert.equal(describe('min.cleanable.dirty.ratio', 'NaN').value, 'NaN');
  assert.equal(describe('min.cleanable.dirty.ratio', '-1e-9999').value, '-0.0');
  assert.equal(describe('delete.retention.ms', '0100').value, '100');
  assert.equal(describe('delete.retention.ms', ' 5 ').value, '5');
  assert.equal(describe('retention.bytes', '-5').value, '-5');
  assert.deepEqual(brief('retention.ms', '1000'), { value: '1000', source: 1, synonyms: [{ name: 'retention.ms', value: '1000', source: 1 }] });
});

test('synonyms and documentation only when asked', () => {
  const e = describeEntry(def('cleanup.policy'), 'compact', new BrokerDefaults(), { includeSynonyms: false, includeDocumentation: false });
  assert.deepEqual(e.synonyms, []);
  assert.equal(e.documentation, null);
  assert.equal(e.configSource, 1);
});

test('broker settings: STATIC_BROKER_CONFIG, raw values in synonyms, and Kafka dropping synonyms before the first-priority name', () => {
  // The server.properties of a Kafka 4.4 broker, and what it described for topics on it.
  const defaults = new BrokerDefaults({
    'log.retention.minutes': '50',
    'log.retention.hours': '100',
    'log.roll.hours': '10',
    'log.segment.bytes': '2097152',
    'log.cleanup.policy': 'compact, delete',
    'log.retention.bytes': '0100',
  });
  assert.deepEqual(brief('cleanup.policy', undefined, defaults), {
    value: 'compact,delete',
    source: 4,
    synonyms: [
      { name: 'log.cleanup.policy', value: 'compact, delete', source: 4 },
      { name: 'log.cleanup.policy', value: 'delete', source: 5 },
    ],
  });
  assert.deepEqual(brief('segment.bytes', undefined, defaults), {
    value: '2097152',
    source: 4,
    synonyms: [
      { name: 'log.segment.bytes', value: '2097152', source: 4 },
      { name: 'log.segment.bytes', value: '1073741824', source: 5 },
    ],
  });
  assert.deepEqual(brief('retention.ms', undefined, defaults), { value: '3000000', source: 5, synonyms: [] });
  assert.deepEqual(brief('segment.ms', undefined, defaults), { value: '36000000', source: 5, synonyms: [] });
  assert.deepEqual(brief('retention.bytes', undefined, defaults), {
    value: '100',
    source: 4,
    synonyms: [
      { name: 'log.retention.bytes', value: '0100', source: 4 },
      { name: 'log.retention.bytes', value: '-1', source: 5 },
    ],
  });
  assert.deepEqual(brief('cleanup.policy', 'compact', defaults).synonyms, [
    { name: 'cleanup.policy', value: 'compact', source: 1 },
    { name: 'log.cleanup.policy', value: 'compact, delete', source: 4 },
    { name: 'log.cleanup.policy', value: 'delete', source: 5 },
  ]);
  const withMs = new BrokerDefaults({ 'log.retention.ms': '1000', 'log.retention.hours': '1' });
  assert.deepEqual(brief('retention.ms', undefined, withMs), {
    value: '1000',
    source: 4,
    synonyms: [
      { name: 'log.retention.ms', value: '1000', source: 4 },
      { name: 'log.retention.hours', value: '1', source: 4 },
      { name: 'log.retention.hours', value: '168', source: 5 },
    ],
  });
});

test('CreateTopics answers show values as given, broker settings with hours turned into ms, Kafka defaults', () => {
  const defaults = new BrokerDefaults({
    'log.retention.minutes': '50',
    'log.roll.hours': '10',
    'log.cleanup.policy': 'compact, delete',
    'log.retention.bytes': '0100',
  });
  const created = (name: string, override?: string) => {
    const e = createdEntry(def(name), override, defaults);
    return `${e.value}/${e.configSource}/${e.readOnly}/${e.isSensitive}`;
  };
  assert.equal(created('cleanup.policy'), 'compact, delete/4/false/false');
  assert.equal(created('retention.bytes'), '0100/4/false/false');
  assert.equal(created('retention.ms'), '3000000/4/false/false');
  assert.equal(created('segment.ms'), '36000000/4/false/false');
  assert.equal(created('delete.retention.ms'), '86400000/5/false/false');
  assert.equal(created('min.cleanable.dirty.ratio', ' .5 '), ' .5 /1/false/false');
  assert.equal(created('cleanup.policy', ' compact , delete '), ' compact , delete /1/false/false');
});

test('broker settings kcompact does not know, or cannot parse, are refused with the name', () => {
  assert.throws(
    () => new BrokerDefaults({ 'log.cleaner.enable': 'false' }),
    (e: Error) => e instanceof TopicConfigError && /log\.cleaner\.enable/.test(e.message),
  );
  assert.throws(() => new BrokerDefaults({ 'log.cleanup.policy': 'foo' }), /log\.cleanup\.policy=foo: Invalid value foo for configuration cleanup\.policy/);
  assert.throws(() => new BrokerDefaults({ 'log.roll.hours': 'x' }), /log\.roll\.hours=x is not a valid INT/);
  assert.equal(new BrokerDefaults({ 'log.retention.hours': '-1' }).value(def('retention.ms')), -1n);
});
