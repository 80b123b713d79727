import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crc32c } from '../../../src/protocol/records/crc32c.js';

test("CRC-32C check value of '123456789'", () => {
  assert.equal(crc32c(Buffer.from('123456789')), 0xe3069283);
});

test('CRC-32C vectors from RFC 3720 (iSCSI) B.4', () => {
  assert.equal(crc32c(Buffer.alloc(32, 0x00)), 0x8a9136aa);
  assert.equal(crc32c(Buffer.alloc(32, 0xff)), 0x62a8ab43);
  assert.equal(crc32c(Buffer.from(Array.from({ length: 32 }, (_, i) => i))), 0x46dd794e);
  assert.equal(crc32c(Buffer.from(Array.from({ length: 32 }, (_, i) => 31 - i))), 0x113fdb5c);
});

test('CRC-32C of an empty range is 0', () => {
  assert.equal(crc32c(Buffer.alloc(0)), 0);
  assert.equal(crc32c(Buffer.from('abc'), 2, 2), 0);
});

test('CRC-32C over [start, end) equals the CRC of that slice copied out', () => {
  const buf = Buffer.from('xx123456789yyy');
  assert.equal(crc32c(buf, 2, 11), 0xe3069283);
  assert.equal(crc32c(buf, 2), crc32c(Buffer.from(buf.subarray(2))));
});

test('CRC-32C results are unsigned', () => {
  const value = crc32c(Buffer.from('123456789'));
  assert.ok(value > 0x7fffffff);
});
