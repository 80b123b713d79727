import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { describe, test } from 'node:test';
import {
  Attributes,
  ControlRecordType,
  CorruptRecordError,
  TimestampType,
  decodeControlRecord,
  decodeRecordKeys,
  decodeRecords,
  encodeBatch,
  iterateBatches,
  readBatchHeader,
  verifyCrc,
  type BatchHeader,
} from '../../../src/protocol/records/batch.js';

// kafkajs's own CRC-32C (pure JavaScript): an implementation independent of ours.
const require = createRequire(import.meta.url);
const kafkajsCrc32c: (buf: Buffer) => number = require('kafkajs/src/protocol/recordBatch/crc32C');

/*
 * Records written byte by byte from the v2 record layout (zigzag varints):
 * r0: offsetDelta 0, timestampDelta 0, key "a", value "x", no headers
 * r1: offsetDelta 1, timestampDelta 300, null key, value "v", headers h="1" and n=null
 * r2: offsetDelta 3 (a gap), timestampDelta -3, empty key, value "e"
 * r3: offsetDelta 4, timestampDelta 30, key "k", null value (a tombstone)
 */
const RECORDS = Buffer.from([
  // r0: length 8, attributes, ts 0, offset 0, key len 1 "a", value len 1 "x", 0 headers
  0x10, 0x00, 0x00, 0x00, 0x02, 0x61, 0x02, 0x78, 0x00,
  // r1: length 15, attributes, ts 300 (zigzag 600), offset 1, key -1, value "v", 2 headers
  0x1e, 0x00, 0xd8, 0x04, 0x02, 0x01, 0x02, 0x76, 0x04, 0x02, 0x68, 0x02, 0x31, 0x02, 0x6e, 0x01,
  // r2: length 7, attributes, ts -3, offset 3, key len 0, value "e", 0 headers
  0x0e, 0x00, 0x05, 0x06, 0x00, 0x02, 0x65, 0x00,
  // r3: length 7, attributes, ts 30, offset 4, key "k", value -1, 0 headers
  0x0e, 0x00, 0x3c, 0x08, 0x02, 0x6b, 0x01, 0x00,
]);

const BASE_TIMESTAMP = 1_700_000_000_000n;

/** The batch header written field by field from the spec, with the CRC from kafkajs's code. */
function specBatch(records: Buffer = RECORDS, count = 4, attributes = 0): Buffer {
  const batch = Buffer.alloc(61 + records.length);
  batch.writeBigInt64BE(1000n, 0); // baseOffset
  batch.writeInt32BE(batch.length - 12, 8); // batchLength
  batch.writeInt32BE(5, 12); // partitionLeaderEpoch
  batch.writeInt8(2, 16); // magic
  batch.writeInt16BE(attributes, 21);
  batch.writeInt32BE(4, 23); // lastOffsetDelta
  batch.writeBigInt64BE(BASE_TIMESTAMP, 27);
  batch.writeBigInt64BE(BASE_TIMESTAMP + 300n, 35); // maxTimestamp
  batch.writeBigInt64BE(77n, 43); // producerId
  batch.writeInt16BE(2, 51); // producerEpoch
  batch.writeInt32BE(10, 53); // baseSequence
  batch.writeInt32BE(count, 57);
  records.copy(batch, 61);
  batch.writeUInt32BE(kafkajsCrc32c(batch.subarray(21)), 17);
  return batch;
}

describe('a batch built from the spec bytes', () => {
  const batch = specBatch();

  test('header fields', () => {
    const h = readBatchHeader(batch, 0);
    assert.equal(h.start, 0);
    assert.equal(h.end, batch.length);
    assert.equal(h.baseOffset, 1000n);
    assert.equal(h.batchLength, batch.length - 12);
    assert.equal(h.partitionLeaderEpoch, 5);
    assert.equal(h.magic, 2);
    assert.equal(h.crc, kafkajsCrc32c(batch.subarray(21)));
    assert.equal(h.attributes, 0);
    assert.equal(h.lastOffsetDelta, 4);
    assert.equal(h.baseTimestamp, BASE_TIMESTAMP);
    assert.equal(h.maxTimestamp, BASE_TIMESTAMP + 300n);
    assert.equal(h.producerId, 77n);
    assert.equal(h.producerEpoch, 2);
    assert.equal(h.baseSequence, 10);
    assert.equal(h.recordCount, 4);
    assert.equal(h.compression, 0);
    assert.equal(h.timestampType, TimestampType.CreateTime);
    assert.equal(h.isTransactional, false);
    assert.equal(h.isControl, false);
    assert.equal(h.hasDeleteHorizon, false);
    assert.equal(h.bytes.buffer, batch.buffer, 'bytes is a view, not a copy');
  });

  test('derived attribute flags', () => {
    const flagged = specBatch(RECORDS, 4, Attributes.timestampType | Attributes.transactional | Attributes.control | Attributes.deleteHorizon | 3);
    const h = readBatchHeader(flagged, 0);
    assert.equal(h.compression, 3);
    assert.equal(h.timestampType, TimestampType.LogAppendTime);
    assert.equal(h.isTransactional, true);
    assert.equal(h.isControl, true);
    assert.equal(h.hasDeleteHorizon, true);
  });

  test('CRC covers attributes to the end, not the leader epoch', () => {
    const h = readBatchHeader(batch, 0);
    assert.equal(verifyCrc(batch, h), true);
    const epochChanged = Buffer.from(batch);
    epochChanged.writeInt32BE(99, 12);
    assert.equal(verifyCrc(epochChanged, readBatchHeader(epochChanged, 0)), true);
    const recordChanged = Buffer.from(batch);
    recordChanged[70] ^= 0x01;
    assert.equal(verifyCrc(recordChanged, readBatchHeader(recordChanged, 0)), false);
  });

  test('records, field by field, as views of the payload', async () => {
    const h = readBatchHeader(batch, 0);
    const records = await decodeRecords(batch, h);
    assert.equal(records.length, 4);
    const [r0, r1, r2, r3] = records as [(typeof records)[0], (typeof records)[0], (typeof records)[0], (typeof records)[0]];

    assert.deepEqual([r0.start, r0.end, r1.start, r1.end, r2.start, r2.end, r3.start, r3.end], [0, 9, 9, 25, 25, 33, 33, 41]);
    assert.deepEqual(
      records.map((r) => [r.attributes, r.timestampDelta, r.offsetDelta]),
      [
        [0, 0, 0],
        [0, 300, 1],
        [0, -3, 3],
        [0, 30, 4],
      ],
    );
    assert.equal(r0.key?.toString(), 'a');
    assert.equal(r0.value?.toString(), 'x');
    assert.deepEqual(r0.headers, []);
    assert.equal(r1.key, null);
    assert.equal(r1.value?.toString(), 'v');
    assert.deepEqual(
      r1.headers.map((x) => [x.key.toString(), x.value?.toString() ?? null]),
      [
        ['h', '1'],
        ['n', null],
      ],
    );
    assert.ok(r2.key !== null && r2.key.length === 0, 'empty key is a key');
    assert.equal(r3.key?.toString(), 'k');
    assert.equal(r3.value, null, 'tombstone');

    for (const r of records) {
      assert.equal(r.payload.buffer, batch.buffer, 'uncompressed payload is a view of the batch');
      assert.ok(r.payload.subarray(r.start, r.end).equals(RECORDS.subarray(r.start, r.end)));
    }
    assert.equal(r0.key!.buffer, batch.buffer, 'keys are views, not copies');
    assert.equal(r0.key!.byteOffset, batch.byteOffset + 61 + 5);
  });

  test('the key index view', async () => {
    const keys = await decodeRecordKeys(batch, readBatchHeader(batch, 0));
    assert.deepEqual(
      keys.map((k) => [k.offsetDelta, k.timestamp - Number(BASE_TIMESTAMP), k.key?.toString() ?? null, k.valueIsNull, k.start, k.end]),
      [
        [0, 0, 'a', false, 0, 9],
        [1, 300, null, false, 9, 25],
        [3, -3, '', false, 25, 33],
        [4, 30, 'k', true, 33, 41],
      ],
    );
  });

  test("LogAppendTime batches give every record the batch's maxTimestamp", async () => {
    const logAppend = specBatch(RECORDS, 4, Attributes.timestampType);
    const keys = await decodeRecordKeys(logAppend, readBatchHeader(logAppend, 0));
    assert.deepEqual(
      keys.map((k) => k.timestamp),
      Array(4).fill(Number(BASE_TIMESTAMP + 300n)),
    );
  });

  test('re-encoding the decoded records is byte-identical', async () => {
    const h = readBatchHeader(batch, 0);
    const records = await decodeRecords(batch, h);
    assert.ok((await encodeBatch(h, records, 0)).equals(batch));
    assert.ok((await encodeBatch(h, { bytes: RECORDS, count: 4 }, 0)).equals(batch));
  });

  test('varlong timestamp deltas round-trip across every encoded length', async () => {
    const h = readBatchHeader(batch, 0);
    const deltas: number[] = [];
    for (let bits = 1; bits <= 53; bits++) {
      const below = 2 ** bits - 1;
      const at = Math.min(2 ** bits, Number.MAX_SAFE_INTEGER);
      deltas.push(below, -below, at, -at);
    }
    const encoded = await encodeBatch(
      h,
      deltas.map((timestampDelta, i) => ({ timestampDelta, offsetDelta: i, key: null, value: null })),
      0,
    );
    const decoded = await decodeRecords(encoded, readBatchHeader(encoded, 0));
    assert.deepEqual(
      decoded.map((r) => r.timestampDelta),
      deltas,
    );
    assert.deepEqual(
      decoded.map((r) => r.offsetDelta),
      deltas.map((_, i) => i),
    );
  });

  test('varint offset deltas round-trip at the int32 limits', async () => {
    const h = readBatchHeader(batch, 0);
    const offsets = [0, 63, 64, 8191, 8192, 2 ** 20, 2 ** 27, 2 ** 28, 2 ** 31 - 1, -1, -64, -65, -(2 ** 31)];
    const encoded = await encodeBatch(
      h,
      offsets.map((offsetDelta) => ({ timestampDelta: 0, offsetDelta, key: null, value: null })),
      0,
    );
    const decoded = await decodeRecords(encoded, readBatchHeader(encoded, 0));
    assert.deepEqual(
      decoded.map((r) => r.offsetDelta),
      offsets,
    );
  });

  test('encoding takes bigint timestamp deltas and 64-bit extremes', async () => {
    const h = readBatchHeader(batch, 0);
    const extremes = [2n ** 63n - 1n, -(2n ** 63n), 2n ** 53n + 1n, -1n];
    const encoded = await encodeBatch(
      h,
      extremes.map((timestampDelta, i) => ({ timestampDelta, offsetDelta: i, key: Buffer.from('k'), value: null })),
      0,
    );
    const decoded = await decodeRecords(encoded, readBatchHeader(encoded, 0));
    assert.deepEqual(
      decoded.map((r) => r.timestampDelta),
      extremes.map(Number),
    );
    assert.equal(decoded[2]!.timestampDelta, 2 ** 53, 'rounded to the nearest double past 2^53');
  });
});

describe('iterateBatches', () => {
  const a = specBatch();
  const b = specBatch(RECORDS.subarray(0, 9), 1);
  const blob = Buffer.concat([a, b, a]);

  test('splits a fetch blob into batches', () => {
    const walk = iterateBatches(blob);
    assert.deepEqual(
      walk.batches.map((h) => [h.start, h.end, h.recordCount]),
      [
        [0, a.length, 4],
        [a.length, a.length + b.length, 1],
        [a.length + b.length, blob.length, 4],
      ],
    );
    assert.equal(walk.truncatedTail.length, 0);
  });

  test('a last batch cut anywhere is reported as the truncated tail', () => {
    for (const cut of [1, 11, 12, 16, 60, 61, a.length - 1]) {
      const data = Buffer.concat([a, b, a.subarray(0, cut)]);
      const walk = iterateBatches(data);
      assert.equal(walk.batches.length, 2, `cut at ${cut}`);
      assert.ok(walk.truncatedTail.equals(a.subarray(0, cut)));
      assert.equal(walk.truncatedTail.buffer, data.buffer, 'the tail is a view');
    }
  });

  test('empty data has no batches and no tail', () => {
    const walk = iterateBatches(Buffer.alloc(0));
    assert.equal(walk.batches.length, 0);
    assert.equal(walk.truncatedTail.length, 0);
  });

  test('a complete batch with magic other than 2 is corrupt', () => {
    for (const magic of [0, 1, 3]) {
      const old = Buffer.from(a);
      old.writeInt8(magic, 16);
      assert.throws(() => iterateBatches(Buffer.concat([b, old])), /magic/);
      assert.throws(() => iterateBatches(old), CorruptRecordError);
    }
  });

  test('a batch length smaller than a header is corrupt, a larger one a tail', () => {
    for (const length of [-1, 0, 48]) {
      const bad = Buffer.from(a);
      bad.writeInt32BE(length, 8);
      assert.throws(() => iterateBatches(bad), CorruptRecordError);
      assert.throws(() => readBatchHeader(bad, 0), CorruptRecordError);
    }
    const long = Buffer.from(a);
    long.writeInt32BE(0x7fffffff, 8);
    assert.equal(iterateBatches(long).truncatedTail.length, a.length);
    assert.throws(() => readBatchHeader(long, 0), CorruptRecordError);
  });

  test('readBatchHeader needs a whole header at the offset', () => {
    assert.throws(() => readBatchHeader(a, 1), CorruptRecordError);
    assert.throws(() => readBatchHeader(a.subarray(0, 60), 0), CorruptRecordError);
    const negative = Buffer.from(a);
    negative.writeInt32BE(-1, 57);
    assert.throws(() => readBatchHeader(negative, 0), /negative record count/);
  });
});

describe('malformed records throw CorruptRecordError', () => {
  async function decodeBoth(records: Buffer, count: number): Promise<void> {
    const batch = specBatch(records, count);
    const h: BatchHeader = readBatchHeader(batch, 0);
    await assert.rejects(decodeRecords(batch, h), CorruptRecordError);
    await assert.rejects(decodeRecordKeys(batch, h), CorruptRecordError);
  }

  const cases: [string, number[], number][] = [
    ['record length past the end', [0x12, 0x00, 0x00, 0x00, 0x02, 0x61, 0x02, 0x78, 0x00], 1],
    ['record length shorter than its fields', [0x0e, 0x00, 0x00, 0x00, 0x02, 0x61, 0x02, 0x78, 0x00], 1],
    ['record length longer than its fields', [0x12, 0x00, 0x00, 0x00, 0x02, 0x61, 0x02, 0x78, 0x00, 0x00], 1],
    ['key length past the record', [0x10, 0x00, 0x00, 0x00, 0x0a, 0x61, 0x02, 0x78, 0x00], 1],
    ['key length below -1', [0x10, 0x00, 0x00, 0x00, 0x03, 0x61, 0x02, 0x78, 0x00], 1],
    ['value length past the record', [0x10, 0x00, 0x00, 0x00, 0x02, 0x61, 0x08, 0x78, 0x00], 1],
    ['negative header count', [0x10, 0x00, 0x00, 0x00, 0x02, 0x61, 0x02, 0x78, 0x01], 1],
    ['header count larger than the bytes', [0x10, 0x00, 0x00, 0x00, 0x02, 0x61, 0x02, 0x78, 0x20], 1],
    ['null header key', [0x0e, 0x00, 0x00, 0x00, 0x01, 0x01, 0x02, 0x01, 0x01], 1],
    ['varint longer than 5 bytes', [0x10, 0x00, 0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00], 1],
    ['varlong running past the record', [0x0c, 0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80], 1],
    ['record length varint running past the end', [0x80, 0x80], 1],
    ['count larger than the records', [...RECORDS], 5],
    ['count smaller than the records', [...RECORDS], 3],
    ['count larger than the bytes could hold', [...RECORDS], 1_000_000],
  ];
  for (const [label, bytes, count] of cases) {
    test(label, () => decodeBoth(Buffer.from(bytes), count));
  }

  test('unknown codec in the attributes', async () => {
    for (const codec of [5, 6, 7]) {
      const batch = specBatch(RECORDS, 4, codec);
      await assert.rejects(decodeRecords(batch, readBatchHeader(batch, 0)), /unknown compression codec/);
    }
  });

  test('a declared-empty batch is not decoded further, as in Java', async () => {
    const batch = specBatch(RECORDS, 0, 5);
    assert.deepEqual(await decodeRecords(batch, readBatchHeader(batch, 0)), []);
  });
});

describe('control records', () => {
  const marker = (type: number, epoch: number) =>
    encodeBatch(
      {
        baseOffset: 42n,
        partitionLeaderEpoch: 1,
        attributes: Attributes.transactional | Attributes.control,
        lastOffsetDelta: 0,
        baseTimestamp: BASE_TIMESTAMP,
        maxTimestamp: BASE_TIMESTAMP,
        producerId: 9n,
        producerEpoch: 0,
        baseSequence: -1,
      },
      [{ timestampDelta: 0, offsetDelta: 0, key: Buffer.from([0, 0, 0, type]), value: Buffer.from([0, 0, 0, 0, 0, epoch]) }],
      0,
    );

  test('commit and abort markers', async () => {
    for (const [type, name] of [
      [ControlRecordType.Commit, 'commit'],
      [ControlRecordType.Abort, 'abort'],
    ] as const) {
      const batch = await marker(type, 7);
      const h = readBatchHeader(batch, 0);
      assert.equal(h.isControl, true, name);
      const [record] = await decodeRecords(batch, h);
      assert.deepEqual(decodeControlRecord(record!.key, record!.value), {
        keyVersion: 0,
        type,
        marker: { version: 0, coordinatorEpoch: 7 },
      });
    }
  });

  test('other control types carry no marker', () => {
    assert.deepEqual(decodeControlRecord(Buffer.from([0, 0, 0, 2]), Buffer.from([1, 2, 3])), { keyVersion: 0, type: 2 });
  });

  test('newer versions are read with the version 0 layout', () => {
    const record = decodeControlRecord(Buffer.from([0, 1, 0, 1, 0xff]), Buffer.from([0, 1, 0, 0, 1, 0, 9]));
    assert.deepEqual(record, { keyVersion: 1, type: 1, marker: { version: 1, coordinatorEpoch: 256 } });
  });

  test('short, null or negative-version keys and values are corrupt', () => {
    assert.throws(() => decodeControlRecord(null, null), CorruptRecordError);
    assert.throws(() => decodeControlRecord(Buffer.from([0, 0, 0]), null), CorruptRecordError);
    assert.throws(() => decodeControlRecord(Buffer.from([0xff, 0xff, 0, 1]), null), CorruptRecordError);
    assert.throws(() => decodeControlRecord(Buffer.from([0, 0, 0, 1]), null), CorruptRecordError);
    assert.throws(() => decodeControlRecord(Buffer.from([0, 0, 0, 0]), Buffer.from([0, 0, 0, 0, 0])), CorruptRecordError);
    assert.throws(() => decodeControlRecord(Buffer.from([0, 0, 0, 0]), Buffer.from([0x80, 0, 0, 0, 0, 0])), CorruptRecordError);
  });
});
