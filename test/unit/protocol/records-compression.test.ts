import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { compress as rawSnappy } from 'snappy';
import { Compression, compress, decompress } from '../../../src/protocol/records/compression.js';
import { CorruptRecordError } from '../../../src/protocol/records/errors.js';
import { seededRng } from './sample-body.js';

const fixtures = new URL('../../../../test/fixtures/batches/', import.meta.url);
const fixture = (name: string) => readFileSync(new URL(name, fixtures));
const plain = fixture('payload.bin');

const CODECS = [Compression.Gzip, Compression.Snappy, Compression.Lz4, Compression.Zstd] as const;
const NAMES: Record<number, string> = { 1: 'gzip', 2: 'snappy', 3: 'lz4', 4: 'zstd' };

function randomBytes(random: () => number, n: number): Buffer {
  const out = Buffer.allocUnsafe(n);
  for (let i = 0; i < n; i++) out[i] = Math.floor(random() * 256);
  return out;
}

/** Resolves, or rejects with CorruptRecordError; anything else fails the test. */
async function decodesOrCorrupt(codec: number, data: Buffer, maxBytes?: number): Promise<Buffer | undefined> {
  try {
    return await decompress(codec, data, maxBytes === undefined ? {} : { maxBytes });
  } catch (err) {
    assert.ok(err instanceof CorruptRecordError, `${NAMES[codec]}: expected CorruptRecordError, got ${String(err)}`);
    return undefined;
  }
}

describe('compression round trips', () => {
  const inputs: [string, Buffer][] = [
    ['empty', Buffer.alloc(0)],
    ['one byte', Buffer.from([42])],
    ['random 100 KiB', randomBytes(seededRng(1), 100 * 1024)],
    ['foreign payload (224 KiB)', plain],
    ['1 MiB of zeros', Buffer.alloc(1024 * 1024)],
  ];
  for (const codec of CODECS) {
    for (const [label, input] of inputs) {
      test(`${NAMES[codec]}: ${label}`, async () => {
        const packed = await compress(codec, input);
        assert.deepEqual(await decompress(codec, packed), input);
      });
    }
  }

  test('none passes data through untouched', async () => {
    assert.equal(await compress(Compression.None, plain), plain);
    assert.equal(await decompress(Compression.None, plain), plain);
  });
});

describe('data written by other implementations', () => {
  const vectors: [string, number][] = [
    ['payload.gzip-cli', Compression.Gzip],
    ['payload.snappy-raw', Compression.Snappy],
    ['payload.snappy-xerial', Compression.Snappy],
    ['payload.lz4-cli', Compression.Lz4],
    ['payload.lz4-linked', Compression.Lz4],
    ['payload.zstd-cli', Compression.Zstd],
    ['payload.zstd-py', Compression.Zstd],
  ];
  for (const [file, codec] of vectors) {
    test(`${file} decompresses to payload.bin`, async () => {
      assert.ok((await decompress(codec, fixture(file))).equals(plain));
    });
  }

  test('the foreign vectors really are the variants they are named for', () => {
    assert.equal(fixture('payload.snappy-xerial').subarray(0, 8).toString('latin1'), '\x82SNAPPY\x00');
    assert.notEqual(fixture('payload.snappy-raw')[0], 0x82);
    // FLG byte: bit 5 = independent blocks. The linked-block vector exercises the other mode.
    assert.equal(fixture('payload.lz4-linked')[4]! & 0x20, 0);
    assert.equal(fixture('payload.lz4-cli')[4]! & 0x20, 0x20);
    // Frame header descriptor: bits 6-7 = content size field, 0 without single segment = absent.
    assert.equal(fixture('payload.zstd-cli')[4]! & 0xe0, 0);
    assert.notEqual(fixture('payload.zstd-py')[4]! & 0xc0, 0);
  });
});

describe('snappy framing', () => {
  test("compress writes Xerial framing in 32 KiB blocks, as Java's producer does", async () => {
    const packed = await compress(Compression.Snappy, plain);
    assert.deepEqual([...packed.subarray(0, 16)], [0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0, 0, 0, 0, 1, 0, 0, 0, 1]);
    let blocks = 0;
    for (let pos = 16; pos < packed.length; blocks++) pos += 4 + packed.readInt32BE(pos);
    assert.equal(blocks, Math.ceil(plain.length / 32768));
  });

  test('decompress accepts raw snappy as librdkafka, franz-go and kafkajs write it', async () => {
    const raw = await rawSnappy(plain);
    assert.ok((await decompress(Compression.Snappy, raw)).equals(plain));
  });

  test('a Xerial stream of just the header is empty', async () => {
    const headerOnly = (await compress(Compression.Snappy, plain)).subarray(0, 16);
    assert.equal((await decompress(Compression.Snappy, headerOnly)).length, 0);
  });

  test('a Xerial block length running past the end is corrupt', async () => {
    const packed = Buffer.from(await compress(Compression.Snappy, plain));
    packed.writeInt32BE(0x7fffffff, 16);
    await assert.rejects(decompress(Compression.Snappy, packed), CorruptRecordError);
  });
});

describe('lz4 framing', () => {
  test('compress writes one frame of independent blocks without a dictionary (what Java reads)', async () => {
    const packed = await compress(Compression.Lz4, plain);
    assert.equal(packed.readUInt32LE(0), 0x184d2204);
    const flg = packed[4]!;
    assert.equal(flg >> 6, 1, 'frame version 1');
    assert.equal(flg & 0x20, 0x20, 'independent blocks');
    assert.equal(flg & 0x01, 0, 'no dictionary id');
  });

  test('a second frame or trailing bytes after the frame are corrupt', async () => {
    const one = await compress(Compression.Lz4, Buffer.from('first'));
    await assert.rejects(decompress(Compression.Lz4, Buffer.concat([one, one])), CorruptRecordError);
    await assert.rejects(decompress(Compression.Lz4, Buffer.concat([one, Buffer.from([0])])), CorruptRecordError);
  });

  test('a bad content checksum is corrupt', async () => {
    const bad = Buffer.from(fixture('payload.lz4-cli'));
    bad[bad.length - 1] ^= 1;
    await assert.rejects(decompress(Compression.Lz4, bad), CorruptRecordError);
  });
});

describe('zstd framing', () => {
  test("concatenated frames and skippable frames decode like zstd's own tools", async () => {
    const a = await compress(Compression.Zstd, Buffer.from('hello '));
    const b = await compress(Compression.Zstd, Buffer.from('world'));
    const skippable = Buffer.from([0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 9, 9, 9]);
    const out = await decompress(Compression.Zstd, Buffer.concat([a, skippable, b]));
    assert.equal(out.toString(), 'hello world');
  });

  test('a bad content checksum is corrupt', async () => {
    const bad = Buffer.from(fixture('payload.zstd-py'));
    bad[bad.length - 1] ^= 1;
    await assert.rejects(decompress(Compression.Zstd, bad), CorruptRecordError);
  });
});

describe('decompression bombs', () => {
  const big = Buffer.alloc(4 * 1024 * 1024, 7);
  for (const codec of CODECS) {
    test(`${NAMES[codec]}: output past maxBytes is refused, output at maxBytes accepted`, async () => {
      const packed = await compress(codec, big);
      assert.ok(packed.length < big.length / 10, 'the input is a bomb of sorts');
      await assert.rejects(decompress(codec, packed, { maxBytes: big.length - 1 }), CorruptRecordError);
      await assert.rejects(decompress(codec, packed, { maxBytes: 1000 }), CorruptRecordError);
      assert.equal((await decompress(codec, packed, { maxBytes: big.length })).length, big.length);
    });
  }

  test('gzip: a 64 MiB bomb stops at the limit', async () => {
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024));
    await assert.rejects(decompress(Compression.Gzip, bomb, { maxBytes: 1024 * 1024 }), /more than the 1048576 bytes allowed/);
  });

  test('snappy: a raw block claiming 4 GiB is refused before decoding', async () => {
    const claim = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f, 0x00]);
    await assert.rejects(decompress(Compression.Snappy, claim), /decompresses to 4294967295 bytes/);
  });

  test('lz4: a frame declaring a huge content size is refused before decoding', async () => {
    // FLG: version 1, independent blocks, content size present; BD: 64 KiB blocks.
    const frame = Buffer.alloc(4 + 2 + 8 + 1 + 4);
    frame.writeUInt32LE(0x184d2204, 0);
    frame[4] = 0x68;
    frame[5] = 0x40;
    frame.writeUInt32LE(0xffffffff, 6);
    frame.writeUInt32LE(0x7f, 10);
    await assert.rejects(decompress(Compression.Lz4, frame), /lz4 data decompresses to \d+ bytes/);
  });

  test('zstd: RLE blocks that expand 32768x are counted before decoding', async () => {
    // Frame: magic, FHD 0 (no content size, window descriptor follows), window 128 KiB,
    // then 200 RLE blocks of 128 KiB each (4 bytes each on the wire): 25 MiB from 806 bytes.
    const blocks = 200;
    const frame = Buffer.alloc(4 + 1 + 1 + blocks * 4);
    frame.writeUInt32LE(0xfd2fb528, 0);
    frame[4] = 0x00;
    frame[5] = 7 << 3; // window 2^(10+7) = 128 KiB
    for (let i = 0; i < blocks; i++) {
      const header = ((128 * 1024) << 3) | (1 << 1) | (i === blocks - 1 ? 1 : 0);
      frame.writeUIntLE(header, 6 + i * 4, 3);
      frame[6 + i * 4 + 3] = 0x61;
    }
    await assert.rejects(decompress(Compression.Zstd, frame, { maxBytes: 8 * 1024 * 1024 }), /zstd data decompresses to/);
    const small = await decompress(Compression.Zstd, frame, { maxBytes: blocks * 128 * 1024 });
    assert.equal(small.length, blocks * 128 * 1024);
  });
});

describe('bad input', () => {
  for (const codec of [5, 6, 7]) {
    test(`codec ${codec} is unknown: CorruptRecordError`, async () => {
      await assert.rejects(decompress(codec, plain), (err: Error) => err instanceof CorruptRecordError && /unknown compression codec/.test(err.message));
      await assert.rejects(compress(codec, plain), CorruptRecordError);
    });
  }

  for (const codec of CODECS) {
    test(`${NAMES[codec]}: empty and garbage input throw CorruptRecordError`, async () => {
      await assert.rejects(decompress(codec, Buffer.alloc(0)), CorruptRecordError);
      const random = seededRng(codec);
      for (let i = 0; i < 200; i++) {
        assert.equal(await decodesOrCorrupt(codec, randomBytes(random, 1 + Math.floor(random() * 300))), undefined);
      }
    });

    test(`${NAMES[codec]}: every truncation is rejected, bit flips decode or throw CorruptRecordError`, async () => {
      const original = await compress(codec, plain.subarray(0, 70000));
      for (let cut = 0; cut < original.length; cut += Math.max(1, Math.floor(original.length / 300))) {
        const result = await decodesOrCorrupt(codec, original.subarray(0, cut));
        // A truncated stream may only "succeed" if it still yields a prefix (snappy/gzip never do).
        if (result !== undefined) assert.ok(plain.subarray(0, result.length).equals(result));
      }
      const random = seededRng(100 + codec);
      for (let i = 0; i < 300; i++) {
        const mutated = Buffer.from(original);
        const flips = 1 + Math.floor(random() * 4);
        for (let f = 0; f < flips; f++) mutated[Math.floor(random() * mutated.length)] ^= 1 << Math.floor(random() * 8);
        await decodesOrCorrupt(codec, mutated, 1024 * 1024);
      }
    });
  }
});
