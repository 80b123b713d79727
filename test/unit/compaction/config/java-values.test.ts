import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  javaDoubleToString,
  javaSplitComma,
  javaTrim,
  parseJavaDouble,
  parseJavaInt,
  parseJavaList,
  parseJavaLong,
} from '../../../../src/compaction/config/java-values.js';

test('Long.parseLong: signs, Unicode decimal digits, 64-bit range, nothing else', () => {
  assert.equal(parseJavaLong('0100'), 100n);
  assert.equal(parseJavaLong('+7'), 7n);
  assert.equal(parseJavaLong('-1'), -1n);
  assert.equal(parseJavaLong('9223372036854775807'), 9223372036854775807n);
  assert.equal(parseJavaLong('-9223372036854775808'), -9223372036854775808n);
  // Kafka 4.4 accepts delete.retention.ms=١٢ (Arabic-Indic digits) and describes it as 12.
  assert.equal(parseJavaLong('١٢'), 12n);
  assert.equal(parseJavaLong('１２'), 12n);
  for (const bad of ['', '+', '-', '9223372036854775808', '1.5', '1e3', ' 5', 'abc', '0x10', '5L', '𝟏']) {
    assert.equal(parseJavaLong(bad), null, JSON.stringify(bad));
  }
});

test('Integer.parseInt: 32-bit range', () => {
  assert.equal(parseJavaInt('2147483647'), 2147483647);
  assert.equal(parseJavaInt('-2147483648'), -2147483648);
  assert.equal(parseJavaInt('+2097152'), 2097152);
  assert.equal(parseJavaInt('99999999999'), null);
  assert.equal(parseJavaInt('1e7'), null);
});

test('Double.parseDouble: the spellings Kafka accepted for min.cleanable.dirty.ratio', () => {
  const cases: [string, number][] = [
    ['0.5', 0.5],
    ['0.50', 0.5],
    [' .5 ', 0.5],
    ['1.', 1],
    ['0.5d', 0.5],
    ['0.5F', 0.5],
    ['1e-5', 1e-5],
    ['1E2', 100],
    ['+0.25', 0.25],
    ['0x1p-2', 0.25],
    ['0X1.8P1', 3],
    ['Infinity', Infinity],
    ['-Infinity', -Infinity],
    ['1e-9999', 0],
  ];
  for (const [raw, want] of cases) assert.equal(parseJavaDouble(raw), want, raw);
  assert.ok(Number.isNaN(parseJavaDouble('NaN')));
  assert.ok(Object.is(parseJavaDouble('-1e-9999'), -0));
  for (const bad of ['', 'x', '1e', '.', 'NaNd', 'Infinityf', '0x1', '0x.p1', '1_0', '0b1', '١']) assert.equal(parseJavaDouble(bad), null, JSON.stringify(bad));
});

test('Double.toString: plain between 10^-3 and 10^7, computerized scientific notation outside', () => {
  const cases: [number, string][] = [
    [0.5, '0.5'],
    [2, '2.0'],
    [0.01, '0.01'],
    [0.001, '0.001'],
    [1e-5, '1.0E-5'],
    [1.5e-4, '1.5E-4'],
    [1234567, '1234567.0'],
    [1e7, '1.0E7'],
    [12345678.5, '1.23456785E7'],
    [0, '0.0'],
    [-0, '-0.0'],
    [-0.1, '-0.1'],
    [NaN, 'NaN'],
    [Infinity, 'Infinity'],
  ];
  for (const [d, want] of cases) assert.equal(javaDoubleToString(d), want, String(d));
});

test('ConfigDef list parsing trims around commas with ASCII whitespace only and keeps empty items', () => {
  assert.deepEqual(parseJavaList(' compact , delete '), ['compact', 'delete']);
  assert.deepEqual(parseJavaList('compact\t,\ndelete'), ['compact', 'delete']);
  assert.deepEqual(parseJavaList('   '), []);
  assert.deepEqual(parseJavaList(''), []);
  assert.deepEqual(parseJavaList('compact,'), ['compact', '']);
  assert.deepEqual(parseJavaList(',compact'), ['', 'compact']);
  assert.deepEqual(parseJavaList('compact, ,delete'), ['compact', '', 'delete']);
  assert.deepEqual(parseJavaList('compact,\u00a0delete'), ['compact', '\u00a0delete']);
  assert.equal(javaTrim('\u0001 x \u0000'), 'x');
  assert.equal(javaTrim('\u00a0x'), '\u00a0x');
});

test('String.split(",") as APPEND and SUBTRACT use it', () => {
  assert.deepEqual(javaSplitComma('compact,delete'), ['compact', 'delete']);
  assert.deepEqual(javaSplitComma(''), ['']);
  assert.deepEqual(javaSplitComma('compact,,'), ['compact']);
  assert.deepEqual(javaSplitComma(',compact'), ['', 'compact']);
  assert.deepEqual(javaSplitComma(',,'), []);
  assert.deepEqual(javaSplitComma(' compact'), [' compact']);
});
