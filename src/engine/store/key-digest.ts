/**
 * The 128-bit digest that stands for a record key in the index: MurmurHash3 (x86, 128-bit
 * variant, seed 0), written big-endian. The index compares keys only by digest, so a collision
 * would let one key's record supersede another's: at 128 bits that is as unlikely as with the
 * MD5 Kafka's cleaner uses, and like MD5 it gives no protection against crafted keys, which a
 * producer that can write them could simply tombstone anyway. It runs several times faster than
 * node's MD5 (docs/performance.md), which is what lets ingest keep up with the upstream.
 */
export const KEY_DIGEST_BYTES = 16;

const C1 = 0x239b961b;
const C2 = 0xab0e9789;
const C3 = 0x38b34ae5;
const C4 = 0xa1e38b93;

function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h;
}

function word(b: Uint8Array, i: number): number {
  return b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24);
}

/**
 * Writes the digest of src[start, end) into out[at, at + 16). A non-zero seed gives an
 * independent digest: identities of another kind (decoded keys, key-identity/) use one, so that
 * they cannot equal the digest of some key's exact bytes.
 */
export function keyDigestInto(src: Uint8Array, start: number, end: number, out: Uint8Array, at: number, seed = 0): void {
  const len = end - start;
  let h1 = seed;
  let h2 = seed;
  let h3 = seed;
  let h4 = seed;
  let i = start;
  const blocksEnd = start + (len & ~15);
  for (; i < blocksEnd; i += 16) {
    h1 ^= Math.imul(rotl(Math.imul(word(src, i), C1), 15), C2);
    h1 = rotl(h1, 19);
    h1 = (h1 + h2) | 0;
    h1 = (Math.imul(h1, 5) + 0x561ccd1b) | 0;
    h2 ^= Math.imul(rotl(Math.imul(word(src, i + 4), C2), 16), C3);
    h2 = rotl(h2, 17);
    h2 = (h2 + h3) | 0;
    h2 = (Math.imul(h2, 5) + 0x0bcaa747) | 0;
    h3 ^= Math.imul(rotl(Math.imul(word(src, i + 8), C3), 17), C4);
    h3 = rotl(h3, 15);
    h3 = (h3 + h4) | 0;
    h3 = (Math.imul(h3, 5) + 0x96cd1c35) | 0;
    h4 ^= Math.imul(rotl(Math.imul(word(src, i + 12), C4), 18), C1);
    h4 = rotl(h4, 13);
    h4 = (h4 + h1) | 0;
    h4 = (Math.imul(h4, 5) + 0x32ac3b17) | 0;
  }
  // The tail: up to 15 bytes, little-endian into four lanes, each mixed only if it got bytes.
  const rest = len & 15;
  if (rest > 12) {
    let k4 = 0;
    for (let j = rest - 1; j >= 12; j--) k4 = (k4 << 8) | src[i + j]!;
    h4 ^= Math.imul(rotl(Math.imul(k4, C4), 18), C1);
  }
  if (rest > 8) {
    let k3 = 0;
    for (let j = Math.min(rest, 12) - 1; j >= 8; j--) k3 = (k3 << 8) | src[i + j]!;
    h3 ^= Math.imul(rotl(Math.imul(k3, C3), 17), C4);
  }
  if (rest > 4) {
    let k2 = 0;
    for (let j = Math.min(rest, 8) - 1; j >= 4; j--) k2 = (k2 << 8) | src[i + j]!;
    h2 ^= Math.imul(rotl(Math.imul(k2, C2), 16), C3);
  }
  if (rest > 0) {
    let k1 = 0;
    for (let j = Math.min(rest, 4) - 1; j >= 0; j--) k1 = (k1 << 8) | src[i + j]!;
    h1 ^= Math.imul(rotl(Math.imul(k1, C1), 15), C2);
  }
  h1 ^= len;
  h2 ^= len;
  h3 ^= len;
  h4 ^= len;
  h1 = (h1 + h2 + h3 + h4) | 0;
  h2 = (h2 + h1) | 0;
  h3 = (h3 + h1) | 0;
  h4 = (h4 + h1) | 0;
  h1 = fmix(h1);
  h2 = fmix(h2);
  h3 = fmix(h3);
  h4 = fmix(h4);
  h1 = (h1 + h2 + h3 + h4) | 0;
  h2 = (h2 + h1) | 0;
  h3 = (h3 + h1) | 0;
  h4 = (h4 + h1) | 0;
  writeWord(out, at, h1);
  writeWord(out, at + 4, h2);
  writeWord(out, at + 8, h3);
  writeWord(out, at + 12, h4);
}

function writeWord(out: Uint8Array, at: number, v: number): void {
  out[at] = v >>> 24;
  out[at + 1] = v >>> 16;
  out[at + 2] = v >>> 8;
  out[at + 3] = v;
}

/** The digest of a whole key as a new buffer (tests and tools; ingest uses keyDigestInto). */
export function keyDigest(key: Uint8Array): Buffer {
  const out = Buffer.alloc(KEY_DIGEST_BYTES);
  keyDigestInto(key, 0, key.length, out, 0);
  return out;
}
