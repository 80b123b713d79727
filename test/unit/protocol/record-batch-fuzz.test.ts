import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  CorruptRecordError,
  batchPayload,
  decodeRecordKeys,
  decodeRecords,
  encodeBatch,
  iterateBatches,
  readBatchHeader,
  rebuildBatch,
  RecordScan,
  RecordWalk,
  verifyCrc,
  type RecordInput,
} from '../../../src/protocol/records/batch.js';
import { seededRng } from './sample-body.js';

const MAX_BYTES = 4 * 1024 * 1024;

const sampleRecords: RecordInput[] = Array.from({ length: 24 }, (_, i) => ({
  timestampDelta: i * 1000 - 5000,
  offsetDelta: i + (i >> 2),
  key: i % 5 === 4 ? null : Buffer.from(`k${i}`.repeat(1 + (i % 3))),
  value: i % 7 === 6 ? null : Buffer.from(`v${i}-`.repeat(3 + (i % 11))),
  headers: i % 2 ? [{ key: Buffer.from('hdr'), value: i % 4 === 1 ? null : Buffer.from([i]) }] : [],
}));

const FIELDS = {
  baseOffset: 900n,
  partitionLeaderEpoch: 2,
  attributes: 0,
  lastOffsetDelta: 29,
  baseTimestamp: 1_600_000_000_000n,
  maxTimestamp: 1_600_000_023_000n,
  producerId: -1n,
  producerEpoch: -1,
  baseSequence: -1,
};

/** Runs every reader on the data: each must succeed or throw CorruptRecordError. */
async function readEverything(data: Buffer, label: string): Promise<void> {
  try {
    const walk = iterateBatches(data);
    for (const h of walk.batches) {
      const crcOk = verifyCrc(data, h);
      const payload = await batchPayload(data, h, { maxBytes: MAX_BYTES });
      const records = await decodeRecords(data, h, { maxBytes: MAX_BYTES });
      const keys = await decodeRecordKeys(data, h, { maxBytes: MAX_BYTES });
      assert.equal(records.length, h.recordCount);
      assert.equal(keys.length, h.recordCount);
      // The index's walk reads what scanRecordKeys does, record for record.
      const walk = new RecordWalk(payload, h);
      const s = new RecordScan();
      let n = 0;
      while (walk.next(s)) {
        const k = keys[n++]!;
        assert.deepEqual(
          [
            s.start,
            s.end,
            s.offsetDelta,
            walk.timestampOf(s),
            s.keyLength < 0 ? null : payload.subarray(s.keyStart, s.keyStart + s.keyLength),
            s.valueLength < 0,
            s.headerCount,
            s.headersStart,
          ],
          [k.start, k.end, k.offsetDelta, k.timestamp, k.key, k.valueIsNull, k.headerCount, k.headersStart],
        );
      }
      assert.equal(n, h.recordCount);
      if (crcOk && records.length > 1) {
        const rebuilt = await rebuildBatch(h, payload, records.slice(1));
        assert.equal(readBatchHeader(rebuilt, 0).recordCount, records.length - 1);
      }
    }
  } catch (err) {
    if (!(err instanceof CorruptRecordError)) {
      assert.fail(`${label}: expected CorruptRecordError, got ${err instanceof Error ? err.stack : String(err)}`);
    }
  }
}

function mutate(original: Buffer, random: () => number): Buffer {
  const pick = () => Math.floor(random() * original.length);
  switch (Math.floor(random() * 6)) {
    case 0: {
      const out = Buffer.from(original);
      for (let i = 1 + Math.floor(random() * 8); i > 0; i--) out[pick()] ^= 1 << Math.floor(random() * 8);
      return out;
    }
    case 1: {
      const out = Buffer.from(original);
      out[pick()] = Math.floor(random() * 256);
      return out;
    }
    case 2:
      return original.subarray(0, pick());
    case 3: {
      const at = pick();
      return Buffer.concat([original.subarray(0, at), Buffer.from([Math.floor(random() * 256)]), original.subarray(at)]);
    }
    case 4: {
      const at = pick();
      return Buffer.concat([original.subarray(0, at), original.subarray(at + 1)]);
    }
    default: {
      // An extreme value in one of the header's int32 fields (length, count, deltas...).
      const out = Buffer.from(original);
      const field = [8, 23, 53, 57][Math.floor(random() * 4)]!;
      if (field + 4 <= out.length) out.writeInt32BE([0, -1, 1, 0x7fffffff, -0x80000000, 48, 49][Math.floor(random() * 7)]!, field);
      return out;
    }
  }
}

describe('random mutations decode or throw CorruptRecordError, never anything else', () => {
  for (const codec of [0, 1, 2, 3, 4]) {
    test(`codec ${codec}: mutated batches and fetch blobs`, async () => {
      const batch = await encodeBatch(FIELDS, sampleRecords, codec);
      const blob = Buffer.concat([batch, batch]);
      const random = seededRng(7 + codec);
      for (let run = 0; run < 1500; run++) {
        await readEverything(mutate(random() < 0.5 ? batch : blob, random), `codec ${codec} run ${run}`);
      }
    });

    test(`codec ${codec}: mutated records inside a valid (re-compressed, CRC-correct) batch`, async () => {
      const batch = await encodeBatch(FIELDS, sampleRecords, 0);
      const plainRecords = batch.subarray(61);
      const random = seededRng(1000 + codec);
      for (let run = 0; run < 600; run++) {
        const mutated = mutate(plainRecords, random);
        const count = random() < 0.8 ? sampleRecords.length : Math.floor(random() * 40);
        const rebuilt = await encodeBatch(FIELDS, { bytes: mutated, count }, codec);
        await readEverything(rebuilt, `codec ${codec} record run ${run}`);
      }
    });
  }

  test('random bytes', async () => {
    const random = seededRng(99);
    for (let i = 0; i < 2000; i++) {
      const data = Buffer.allocUnsafe(Math.floor(random() * 200));
      for (let j = 0; j < data.length; j++) data[j] = Math.floor(random() * 256);
      if (data.length > 20 && random() < 0.5) {
        // Plausible framing so the walk gets past the first checks.
        data.writeInt32BE(data.length - 12, 8);
        data[16] = 2;
      }
      await readEverything(data, `random ${i}`);
    }
  });
});
