import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  Attributes,
  CorruptRecordError,
  decodeRecordKeys,
  decodeRecords,
  encodeBatch,
  iterateBatches,
  readBatchHeader,
  rebuildBatch,
  verifyCrc,
  type BatchFields,
  type RecordInput,
} from '../../../src/protocol/records/batch.js';

const FIELDS: BatchFields = {
  baseOffset: 7000n,
  partitionLeaderEpoch: 9,
  attributes: Attributes.transactional,
  lastOffsetDelta: 99,
  baseTimestamp: 1_650_000_000_000n,
  maxTimestamp: 1_650_000_000_000n + 49n * 13n,
  producerId: 31n,
  producerEpoch: 5,
  baseSequence: 1000,
};

function records(count: number): RecordInput[] {
  return Array.from({ length: count }, (_, i) => ({
    timestampDelta: i * 13,
    offsetDelta: i * 2,
    key: i % 10 === 9 ? null : Buffer.from(`key-${i}`),
    value: i % 6 === 5 ? null : Buffer.from(`value ${i} `.repeat(20)),
    headers: i % 3 === 0 ? [{ key: Buffer.from('h'), value: i % 2 ? null : Buffer.from(`v${i}`) }] : [],
  }));
}

const CODECS = [0, 1, 2, 3, 4];

describe('rebuildBatch', () => {
  for (const codec of CODECS) {
    test(`codec ${codec}: keeping half the records`, async () => {
      const batch = await encodeBatch(FIELDS, records(50), codec);
      const h = readBatchHeader(batch, 0);
      const all = await decodeRecords(batch, h);
      const kept = all.filter((_, i) => i % 2 === 1);
      const rebuilt = await rebuildBatch(h, all[0]!.payload, kept);

      const r = readBatchHeader(rebuilt, 0);
      assert.equal(verifyCrc(rebuilt, r), true);
      assert.equal(r.recordCount, 25);
      assert.equal(r.batchLength, rebuilt.length - 12);
      for (const field of [
        'baseOffset',
        'partitionLeaderEpoch',
        'attributes',
        'lastOffsetDelta',
        'baseTimestamp',
        'maxTimestamp',
        'producerId',
        'producerEpoch',
        'baseSequence',
      ] as const) {
        assert.equal(r[field], h[field], field);
      }
      assert.equal(r.compression, codec);

      const decoded = await decodeRecords(rebuilt, r);
      assert.deepEqual(
        decoded.map((d) => d.offsetDelta),
        kept.map((k) => k.offsetDelta),
      );
      decoded.forEach((d, i) => {
        const original = kept[i]!;
        assert.ok(d.payload.subarray(d.start, d.end).equals(original.payload.subarray(original.start, original.end)), 'record bytes unchanged');
        assert.equal(d.timestampDelta, original.timestampDelta);
        assert.deepEqual(d.headers, original.headers);
      });
      if (codec === 0) assert.ok(rebuilt.length < batch.length);
    });

    test(`codec ${codec}: spans from the key scan rebuild the same batch`, async () => {
      const batch = await encodeBatch(FIELDS, records(30), codec);
      const h = readBatchHeader(batch, 0);
      const keys = await decodeRecordKeys(batch, h);
      const survivors = keys.filter((k) => k.key !== null && k.offsetDelta % 4 === 0);
      const fromKeys = await rebuildBatch(h, keys[0]!.payload, survivors);
      const all = await decodeRecords(batch, h);
      const fromRecords = await rebuildBatch(
        h,
        all[0]!.payload,
        all.filter((r) => r.key !== null && r.offsetDelta % 4 === 0),
      );
      assert.deepEqual(
        (await decodeRecords(fromKeys, readBatchHeader(fromKeys, 0))).map((r) => r.offsetDelta),
        (await decodeRecords(fromRecords, readBatchHeader(fromRecords, 0))).map((r) => r.offsetDelta),
      );
    });

    test(`codec ${codec}: keeping every record returns the original bytes`, async () => {
      const batch = await encodeBatch(FIELDS, records(10), codec);
      const h = readBatchHeader(batch, 0);
      const all = await decodeRecords(batch, h);
      const same = await rebuildBatch(h, all[0]!.payload, all);
      assert.equal(same, h.bytes);
      assert.equal(same.buffer, batch.buffer);
      assert.equal(same.byteOffset, batch.byteOffset);
    });

    test(`codec ${codec}: losing every record gives Kafka's 61-byte empty batch`, async () => {
      const batch = await encodeBatch(FIELDS, records(10), codec);
      const h = readBatchHeader(batch, 0);
      const all = await decodeRecords(batch, h);
      const empty = await rebuildBatch(h, all[0]!.payload, []);
      assert.equal(empty.length, 61);
      const e = readBatchHeader(empty, 0);
      assert.equal(verifyCrc(empty, e), true);
      assert.equal(e.recordCount, 0);
      assert.equal(e.baseOffset, FIELDS.baseOffset);
      assert.equal(e.lastOffsetDelta, FIELDS.lastOffsetDelta);
      assert.equal(e.partitionLeaderEpoch, FIELDS.partitionLeaderEpoch);
      assert.equal(e.producerId, FIELDS.producerId);
      assert.equal(e.producerEpoch, FIELDS.producerEpoch);
      assert.equal(e.baseSequence, FIELDS.baseSequence);
      assert.equal(e.maxTimestamp, FIELDS.maxTimestamp);
      assert.equal(e.baseTimestamp, -1n);
      assert.equal(e.compression, 0);
      assert.equal(e.isTransactional, true);
      assert.deepEqual(await decodeRecords(empty, e), []);
    });
  }

  test('encodeBatch writes a batch without records uncompressed', async () => {
    for (const codec of CODECS) {
      const empty = await encodeBatch({ ...FIELDS, attributes: Attributes.transactional }, [], codec);
      assert.equal(empty.length, 61);
      const h = readBatchHeader(empty, 0);
      assert.equal(h.compression, 0);
      assert.equal(h.isTransactional, true);
      assert.equal(h.recordCount, 0);
      assert.equal(verifyCrc(empty, h), true);
    }
  });

  test('encodeBatch refuses codecs Kafka does not define', async () => {
    for (const codec of [-1, 5, 8, 1.5]) {
      await assert.rejects(encodeBatch(FIELDS, records(2), codec), RangeError);
    }
  });

  test('a batch in the middle of a fetch blob', async () => {
    const first = await encodeBatch(FIELDS, records(5), 0);
    const second = await encodeBatch({ ...FIELDS, baseOffset: 8000n }, records(5), 3);
    const blob = Buffer.concat([first, second, second.subarray(0, 30)]);
    const walk = iterateBatches(blob);
    const h = walk.batches[1]!;
    assert.equal(h.start, first.length);
    const all = await decodeRecords(blob, h);
    const rebuilt = await rebuildBatch(h, all[0]!.payload, all.slice(2));
    const r = readBatchHeader(rebuilt, 0);
    assert.equal(r.baseOffset, 8000n);
    assert.equal(verifyCrc(rebuilt, r), true);
    assert.deepEqual(
      (await decodeRecords(rebuilt, r)).map((x) => x.offsetDelta),
      [4, 6, 8],
    );
  });

  test('LogAppendTime, control and delete-horizon attributes survive a rebuild', async () => {
    const attributes = Attributes.timestampType | Attributes.deleteHorizon | Attributes.transactional;
    const batch = await encodeBatch({ ...FIELDS, attributes }, records(6), 4);
    const h = readBatchHeader(batch, 0);
    const all = await decodeRecords(batch, h);
    const rebuilt = await rebuildBatch(h, all[0]!.payload, all.slice(0, 1));
    assert.equal(readBatchHeader(rebuilt, 0).attributes, attributes | 4);
  });

  test('a batch failing its CRC is not laundered into a valid one', async () => {
    const batch = Buffer.from(await encodeBatch(FIELDS, records(6), 0));
    const h = readBatchHeader(batch, 0);
    const all = await decodeRecords(batch, h);
    // Damage a value byte: the records still parse, only the CRC can tell.
    all[0]!.value![3] ^= 0xff;
    await assert.rejects(rebuildBatch(h, all[0]!.payload, all.slice(1)), CorruptRecordError);
    await assert.rejects(rebuildBatch(h, all[0]!.payload, []), CorruptRecordError);
  });

  test('spans that are not ordered ranges of the payload are a programming error', async () => {
    const batch = await encodeBatch(FIELDS, records(6), 0);
    const h = readBatchHeader(batch, 0);
    const all = await decodeRecords(batch, h);
    const payload = all[0]!.payload;
    await assert.rejects(rebuildBatch(h, payload, [all[2]!, all[1]!]), RangeError);
    await assert.rejects(rebuildBatch(h, payload, [{ start: 0, end: payload.length + 1 }]), RangeError);
    await assert.rejects(rebuildBatch(h, payload, [...all, all[0]!]), RangeError);
  });
});
