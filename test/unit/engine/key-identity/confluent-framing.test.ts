import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FRAME_HEADER_BYTES, frameSchemaId, isFramed } from '../../../../src/engine/key-identity/confluent-framing.js';

describe('Confluent framing', () => {
  it('a framed key is magic byte 0 and a 4-byte schema id, with or without data after it', () => {
    assert.equal(FRAME_HEADER_BYTES, 5);
    assert.equal(isFramed(Buffer.from([0, 0, 0, 0, 7])), true);
    assert.equal(isFramed(Buffer.from([0, 0, 0, 0, 7, 2, 0x61])), true);
  });

  it('shorter keys and keys with another first byte are not framed', () => {
    for (const key of [Buffer.alloc(0), Buffer.from([0]), Buffer.from([0, 0, 0, 7]), Buffer.from('order-42'), Buffer.from([1, 0, 0, 0, 7, 9])]) {
      assert.equal(isFramed(key), false, key.toString('hex'));
    }
  });

  it('reads the schema id big-endian, as a signed int32 like the Java serializer writes it', () => {
    assert.equal(frameSchemaId(Buffer.from([0, 0, 0, 1, 0x2c, 9])), 300);
    assert.equal(frameSchemaId(Buffer.from([0, 0x12, 0x34, 0x56, 0x78])), 0x12345678);
    assert.equal(frameSchemaId(Buffer.from([0, 0xff, 0xff, 0xff, 0xff])), -1);
    const viaNode = Buffer.from([0, 0x80, 0, 0, 1]).readInt32BE(1);
    assert.equal(frameSchemaId(Buffer.from([0, 0x80, 0, 0, 1])), viaNode);
  });
});
