import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { keyDigest, keyDigestInto } from '../../../../src/engine/store/key-digest.js';

// MurmurHash3_x86_128, seed 0, from Python's mmh3 5.3.1 (hash_bytes, x64arch=False), each
// 32-bit word written big-endian.
const VECTORS: [string, string][] = [
  ['', '00000000000000000000000000000000'],
  ['61', 'a794933c5556b01b5556b01b5556b01b'],
  ['6b65792d303030303031', 'b0a25ba816c59eda5736f9c4b70a8812'],
  ['30313233343536373839616263646566', 'fb7d440936aed30a48ad1d9b572b3bfd'],
  ['3031323334353637383961626364656658595a', '639b7bcf4aa7a92efaec1e0f691e504f'],
  ['000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f2021222324', '217f288ecc2dcabebd9af5c3a2dd66c0'],
  ['68656c6c6f20776f726c642121', 'e838d88ec43ebbb314b99fb0d3877b32'],
];

describe('keyDigest', () => {
  for (const [key, digest] of VECTORS) {
    it(`matches the reference MurmurHash3 x86_128 for ${key.length / 2} bytes`, () => {
      assert.equal(keyDigest(Buffer.from(key, 'hex')).toString('hex'), digest);
    });
  }

  it('hashes a range of a larger buffer in place', () => {
    const src = Buffer.concat([Buffer.from('xx'), Buffer.from('hello world!!'), Buffer.from('yyy')]);
    const out = Buffer.alloc(20);
    keyDigestInto(src, 2, 2 + 13, out, 4);
    assert.equal(out.subarray(4).toString('hex'), 'e838d88ec43ebbb314b99fb0d3877b32');
  });

  it('tells apart keys that differ in one byte at every tail length', () => {
    const seen = new Set<string>();
    for (let len = 1; len <= 40; len++) {
      for (let pos = 0; pos < len; pos++) {
        const k = Buffer.alloc(len, 0x41);
        k[pos] = 0x42;
        seen.add(keyDigest(k).toString('hex'));
      }
      seen.add(keyDigest(Buffer.alloc(len, 0x41)).toString('hex'));
    }
    assert.equal(seen.size, (40 * 41) / 2 + 40);
  });
});
