/**
 * Decoding only the start of compressed data (lz4-prefix.ts, snappy-prefix.ts, gzip flushed):
 * every prefix is the start of what a whole decode gives, for data of our encoders and of other
 * implementations (linked lz4 blocks, raw and Xerial snappy, the gzip tool), and a batch's first
 * record is whole in what firstRecordPayload returns.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { Compression, compress, decompress, decompressPrefix } from '../../../src/protocol/records/compression.js';
import { batchPayload, encodeBatch, firstRecordPayload, iterateBatches, parseRecords } from '../../../src/protocol/records/batch.js';
import { CorruptRecordError } from '../../../src/protocol/records/errors.js';
import { seededRng } from './sample-body.js';

const fixtures = new URL('../../../../test/fixtures/batches/', import.meta.url);
const fixture = (name: string) => readFileSync(new URL(name, fixtures));
const plain = fixture('payload.bin');
const CODECS = [Compression.Gzip, Compression.Snappy, Compression.Lz4, Compression.Zstd] as const;

async function assertPrefix(codec: number, data: Buffer, label: string): Promise<void> {
  const whole = await decompress(codec, data);
  for (const want of [0, 1, 7, 255, 256, 4096, 65535, 65536, 65537, 100_000, whole.length - 1, whole.length, whole.length + 10]) {
    if (want < 0) continue;
    const head = await decompressPrefix(codec, data, want);
    assert.ok(head.length >= Math.min(want, whole.length), `${label}: ${head.length} bytes for ${want} wanted`);
    assert.ok(head.equals(whole.subarray(0, head.length)), `${label}: the first ${want} bytes differ from a whole decode`);
  }
}

describe('decompressPrefix', () => {
  const random = seededRng(5);
  const noise = Buffer.allocUnsafe(150_000);
  for (let i = 0; i < noise.length; i++) noise[i] = random() < 0.5 ? Math.floor(random() * 256) : 97;
  const inputs: [string, Buffer][] = [
    ['empty', Buffer.alloc(0)],
    ['one byte', Buffer.from([1])],
    ['half noise, half runs (150 KB)', noise],
    ['foreign payload (224 KiB)', plain],
    ['1 MiB of zeros (long overlapping matches)', Buffer.alloc(1 << 20)],
  ];
  for (const codec of CODECS) {
    for (const [label, input] of inputs) {
      test(`codec ${codec}: ${label}`, async () => assertPrefix(codec, await compress(codec, input), `codec ${codec} ${label}`));
    }
  }
  const foreign: [string, number][] = [
    ['payload.gzip-cli', Compression.Gzip],
    ['payload.snappy-raw', Compression.Snappy],
    ['payload.snappy-xerial', Compression.Snappy],
    ['payload.lz4-cli', Compression.Lz4],
    ['payload.lz4-linked', Compression.Lz4],
    ['payload.zstd-cli', Compression.Zstd],
  ];
  for (const [name, codec] of foreign) test(`written by another implementation: ${name}`, async () => assertPrefix(codec, fixture(name), name));

  test('damaged data is a CorruptRecordError, never another error or a hang', async () => {
    const rng = seededRng(11);
    for (const codec of [Compression.Gzip, Compression.Snappy, Compression.Lz4]) {
      const good = await compress(codec, plain);
      for (let round = 0; round < 300; round++) {
        const bad = Buffer.from(good.subarray(0, Math.max(1, Math.floor(rng() * good.length))));
        for (let flips = 0; flips < 3; flips++) bad[Math.floor(rng() * bad.length)] = Math.floor(rng() * 256);
        try {
          await decompressPrefix(codec, bad, Math.floor(rng() * 300_000));
        } catch (err) {
          assert.ok(err instanceof CorruptRecordError, `codec ${codec}: ${String(err)}`);
        }
      }
    }
  });
});

describe('firstRecordPayload', () => {
  for (const codec of [0, ...CODECS]) {
    for (const firstValue of [10, 300, 70_000, 400_000]) {
      test(`codec ${codec}: a first record of ${firstValue} B value is whole`, async () => {
        const records = [firstValue, 50, 50].map((size, i) => ({
          timestampDelta: i,
          offsetDelta: i,
          key: Buffer.from(`k${i}`),
          value: Buffer.alloc(size, 48 + i),
          headers: [{ key: Buffer.from('h'), value: Buffer.from('v') }],
        }));
        const fields = {
          baseOffset: 0n,
          partitionLeaderEpoch: 0,
          attributes: 0,
          lastOffsetDelta: 2,
          baseTimestamp: 0n,
          maxTimestamp: 2n,
          producerId: -1n,
          producerEpoch: -1,
          baseSequence: -1,
        };
        const bytes = await encodeBatch(fields, records, codec);
        const batch = iterateBatches(bytes).batches[0]!;
        const whole = await batchPayload(bytes, batch);
        const head = await firstRecordPayload(bytes, batch);
        const firstEnd = parseRecords(whole, batch)[0]!.end;
        assert.ok(head.length >= firstEnd, `${head.length} bytes, the first record ends at ${firstEnd}`);
        assert.ok(head.equals(whole.subarray(0, head.length)));
      });
    }
  }

  test('the batches other clients wrote: the first record is whole', async () => {
    for (const name of ['none', 'gzip', 'snappy', 'lz4', 'zstd']) {
      const bytes = fixture(`batch-${name}.bin`);
      const batch = iterateBatches(bytes).batches[0]!;
      const whole = await batchPayload(bytes, batch);
      const head = await firstRecordPayload(bytes, batch);
      assert.ok(head.length >= parseRecords(whole, batch)[0]!.end, name);
      assert.ok(head.equals(whole.subarray(0, head.length)), name);
    }
  });
});
