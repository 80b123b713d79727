import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeBase64, recordJson } from '../../../src/tables/record-json.js';
import { ApiError } from '../../../src/tables/api-error.js';
import type { TableRecord } from '../../../src/engine/api/table-reads.js';

const record = (over: Partial<TableRecord> = {}): TableRecord => ({
  partition: 2,
  offset: 40,
  timestamp: 1_700_000_000_000,
  key: Buffer.from('clé'),
  value: Buffer.from('{"v":1}'),
  headers: [{ key: 'h', value: Buffer.from('x') }],
  ...over,
});

test('text mode gives key, value and header values as UTF-8 text', () => {
  assert.deepEqual(recordJson(record(), 'utf8'), {
    key: 'clé',
    value: '{"v":1}',
    partition: 2,
    offset: 40,
    timestamp: 1_700_000_000_000,
    headers: [{ key: 'h', value: 'x' }],
  });
});

test('base64 mode gives every byte field in base64', () => {
  const j = recordJson(record(), 'base64');
  assert.equal(j.key, Buffer.from('clé').toString('base64'));
  assert.equal(j.value, Buffer.from('{"v":1}').toString('base64'));
  assert.equal(j.headers[0]!.value, 'eA==');
  assert.equal(j.encoding, undefined, 'asked for: not marked');
});

test('a record that is not all UTF-8 comes whole in base64 in text mode, and says so', () => {
  const j = recordJson(record({ value: Buffer.from([0xff, 0xfe, 0x00]) }), 'utf8');
  assert.equal(j.encoding, 'base64');
  assert.equal(j.key, Buffer.from('clé').toString('base64'), 'the key too: one encoding per record');
  assert.equal(Buffer.from(j.value!, 'base64').toString('hex'), 'fffe00');
  const schemaKey = recordJson(record({ key: Buffer.from([0, 0, 0, 0, 7, 0x80]) }), 'utf8');
  assert.equal(schemaKey.encoding, 'base64');
});

test('tombstones have a null value, marked deleted only where asked (change streams)', () => {
  assert.equal(recordJson(record({ value: null }), 'utf8').value, null);
  assert.equal(recordJson(record({ value: null }), 'utf8').deleted, undefined);
  assert.equal(recordJson(record({ value: null }), 'utf8', { markDeleted: true }).deleted, true);
  assert.equal(recordJson(record(), 'utf8', { markDeleted: true }).deleted, undefined);
  assert.equal(recordJson(record({ headers: [{ key: 'n', value: null }] }), 'utf8').headers[0]!.value, null);
});

test('base64 input: standard and URL-safe, padded or not; anything else is a 400', () => {
  assert.equal(decodeBase64('aGk=', 'key').toString(), 'hi');
  assert.equal(decodeBase64('aGk', 'key').toString(), 'hi');
  assert.deepEqual([...decodeBase64('-_8', 'key')], [0xfb, 0xff]);
  assert.deepEqual([...decodeBase64('+/8=', 'key')], [0xfb, 0xff]);
  assert.equal(decodeBase64('', 'key').length, 0);
  for (const bad of ['a', 'aGk*', 'a b c', '====', 'aGk=x']) {
    assert.throws(
      () => decodeBase64(bad, 'body'),
      (err: unknown) => err instanceof ApiError && err.status === 400 && /the body is not base64/.test(err.message),
      bad,
    );
  }
});
