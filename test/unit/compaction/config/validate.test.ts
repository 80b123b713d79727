import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BrokerDefaults } from '../../../../src/compaction/config/broker-defaults.js';
import { validateOverrides } from '../../../../src/compaction/config/validate.js';

const defaults = new BrokerDefaults();

/** Each pair is a CreateTopics config and the INVALID_CONFIG message a Kafka 4.4 broker gave for it. */
const KAFKA_REFUSALS: [Record<string, string>, string][] = [
  [{ 'cleanup.policy': 'foo' }, 'Invalid value foo for configuration cleanup.policy: String must be one of: compact, delete'],
  [{ 'cleanup.policy': 'compact,foo' }, 'Invalid value foo for configuration cleanup.policy: String must be one of: compact, delete'],
  [{ 'cleanup.policy': 'Compact' }, 'Invalid value Compact for configuration cleanup.policy: String must be one of: compact, delete'],
  [{ 'cleanup.policy': ' compact , foo ' }, 'Invalid value foo for configuration cleanup.policy: String must be one of: compact, delete'],
  [{ 'cleanup.policy': 'foo,' }, 'Invalid value foo for configuration cleanup.policy: String must be one of: compact, delete'],
  [{ 'cleanup.policy': 'compact,' }, "Configuration 'cleanup.policy' values must not be empty."],
  [{ 'cleanup.policy': ',foo' }, "Configuration 'cleanup.policy' values must not be empty."],
  [{ 'cleanup.policy': ' , ' }, "Configuration 'cleanup.policy' values must not be empty."],
  [{ 'cleanup.policy': 'compact, ,delete' }, "Configuration 'cleanup.policy' values must not be empty."],
  [{ 'delete.retention.ms': '-1' }, 'Invalid value -1 for configuration delete.retention.ms: Value must be at least 0'],
  [{ 'delete.retention.ms': ' -4 ' }, 'Invalid value -4 for configuration delete.retention.ms: Value must be at least 0'],
  [{ 'delete.retention.ms': 'abc' }, 'Invalid value abc for configuration delete.retention.ms: Not a number of type LONG'],
  [{ 'delete.retention.ms': ' x ' }, 'Invalid value  x  for configuration delete.retention.ms: Not a number of type LONG'],
  [{ 'delete.retention.ms': '9223372036854775808' }, 'Invalid value 9223372036854775808 for configuration delete.retention.ms: Not a number of type LONG'],
  [{ 'min.compaction.lag.ms': '-1' }, 'Invalid value -1 for configuration min.compaction.lag.ms: Value must be at least 0'],
  [{ 'max.compaction.lag.ms': '0' }, 'Invalid value 0 for configuration max.compaction.lag.ms: Value must be at least 1'],
  [{ 'min.cleanable.dirty.ratio': '1.5' }, 'Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no more than 1'],
  [{ 'min.cleanable.dirty.ratio': '2' }, 'Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1'],
  [{ 'min.cleanable.dirty.ratio': '-0.1' }, 'Invalid value -0.1 for configuration min.cleanable.dirty.ratio: Value must be at least 0'],
  [{ 'min.cleanable.dirty.ratio': 'Infinity' }, 'Invalid value Infinity for configuration min.cleanable.dirty.ratio: Value must be no more than 1'],
  [{ 'min.cleanable.dirty.ratio': 'x' }, 'Invalid value x for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE'],
  [{ 'segment.ms': '0' }, 'Invalid value 0 for configuration segment.ms: Value must be at least 1'],
  [{ 'segment.bytes': '1000' }, 'Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576'],
  [{ 'segment.bytes': '1048575' }, 'Invalid value 1048575 for configuration segment.bytes: Value must be at least 1048576'],
  [{ 'segment.bytes': '99999999999' }, 'Invalid value 99999999999 for configuration segment.bytes: Not a number of type INT'],
  [{ 'segment.bytes': '1e7' }, 'Invalid value 1e7 for configuration segment.bytes: Not a number of type INT'],
  [{ 'retention.ms': '-2' }, 'Invalid value -2 for configuration retention.ms: Value must be at least -1'],
  [{ 'retention.ms': '1.5' }, 'Invalid value 1.5 for configuration retention.ms: Not a number of type LONG'],
  [{ 'min.compaction.lag.ms': '100', 'max.compaction.lag.ms': '10' }, 'conflict topic config setting min.compaction.lag.ms (100) > max.compaction.lag.ms (10)'],
  [
    { 'min.compaction.lag.ms': '9223372036854775807', 'max.compaction.lag.ms': '9223372036854775806' },
    'conflict topic config setting min.compaction.lag.ms (9223372036854775807) > max.compaction.lag.ms (9223372036854775806)',
  ],
];

test("invalid values get Kafka 4.4's INVALID_CONFIG message", () => {
  for (const [configs, message] of KAFKA_REFUSALS) assert.equal(validateOverrides(configs, defaults), message, JSON.stringify(configs));
});

/** Values a Kafka 4.4 broker accepted. */
const KAFKA_ACCEPTS: Record<string, string>[] = [
  { 'cleanup.policy': ' compact , delete ' },
  { 'cleanup.policy': 'delete,compact' },
  { 'cleanup.policy': 'compact,compact' },
  { 'cleanup.policy': '' },
  { 'cleanup.policy': '   ' },
  { 'cleanup.policy': 'compact\t,\ndelete' },
  { 'delete.retention.ms': '0100' },
  { 'delete.retention.ms': ' 5 ' },
  { 'delete.retention.ms': '+7' },
  { 'delete.retention.ms': '١٢' },
  { 'min.cleanable.dirty.ratio': '0.50' },
  { 'min.cleanable.dirty.ratio': 'NaN' },
  { 'min.cleanable.dirty.ratio': '1e-5' },
  { 'min.cleanable.dirty.ratio': '0.5d' },
  { 'min.cleanable.dirty.ratio': ' .5 ' },
  { 'min.cleanable.dirty.ratio': '0x1p-2' },
  { 'min.cleanable.dirty.ratio': '1.' },
  { 'min.cleanable.dirty.ratio': '-1e-9999' },
  { 'segment.bytes': '+2097152' },
  { 'retention.bytes': '-5' },
  { 'max.compaction.lag.ms': '100', 'min.compaction.lag.ms': '100' },
];

test('values Kafka 4.4 accepts pass', () => {
  for (const configs of KAFKA_ACCEPTS) assert.equal(validateOverrides(configs, defaults), null, JSON.stringify(configs));
});

test('the first bad value in LogConfig definition order is the one reported', () => {
  // Kafka reported retention.ms here although cleanup.policy came first in the request.
  assert.match(validateOverrides({ 'cleanup.policy': 'foo', 'retention.ms': 'abc' }, defaults)!, /retention\.ms/);
  assert.match(validateOverrides({ 'cleanup.policy': 'foo', 'segment.bytes': '1' }, defaults)!, /segment\.bytes/);
  // Values are checked before the lag conflict.
  assert.match(validateOverrides({ 'min.compaction.lag.ms': '100', 'max.compaction.lag.ms': '10', 'cleanup.policy': 'x' }, defaults)!, /cleanup\.policy/);
});

test('the lag conflict takes broker defaults into account, as Kafka combines them with the topic configs', () => {
  const brokers = new BrokerDefaults({ 'log.cleaner.max.compaction.lag.ms': '50' });
  assert.equal(
    validateOverrides({ 'min.compaction.lag.ms': '60' }, brokers),
    'conflict topic config setting min.compaction.lag.ms (60) > max.compaction.lag.ms (50)',
  );
  assert.equal(validateOverrides({ 'min.compaction.lag.ms': '60' }, defaults), null);
});
