import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  Attributes,
  batchPayload,
  decodeRecords,
  encodeBatch,
  iterateBatches,
  RecordScan,
  scanRecordAt,
  verifyCrc,
  type BatchFields,
  type BatchHeader,
  type RecordInput,
} from '../../../../src/protocol/records/batch.js';
import { CopyBatches, emptyCopy, markerBatch, originalParts, originOf, readCopyAt, RestoredBatches } from '../../../../src/compaction/carry/carried-batch.js';
import {
  CARRY_FORMAT,
  CarryFormatError,
  CarryKind,
  carryKindAt,
  emptyOrigin,
  encodeCopyValue,
  encodePassEnd,
  encodePassStart,
  readCopyValue,
  readPassEnd,
  readPassStart,
  type CopyOrigin,
} from '../../../../src/compaction/carry/carry-record.js';

const CODECS = [0, 1, 2, 3, 4];

function origin(over: Partial<CopyOrigin> = {}): CopyOrigin {
  return { ...emptyOrigin(), pass: 123_456, offset: 1000, timestamp: 1_700_000_000_123, batchBase: 990, batchLast: 1009, ...over };
}

describe('carry header values', () => {
  test('a copy round-trips every field, negative and absent ones included', () => {
    const cases: CopyOrigin[] = [
      origin(),
      origin({ leaderEpoch: 7, producerId: 2n ** 40n, producerEpoch: 3, transactional: true, codec: 4, horizon: 1_700_000_086_400_000 }),
      // Producer ids past 2^53, as kfake hands them out (random 63-bit numbers), stay exact.
      origin({ producerId: 0x7fff_ffff_ffff_fff1n, producerEpoch: 0 }),
      origin({ logAppendTime: true, codec: 3, offset: 990, batchBase: 990, batchLast: 990 }),
      origin({ offset: 2 ** 50, batchBase: 2 ** 50 - 5, batchLast: 2 ** 50 + 5, timestamp: -1 }),
    ];
    for (const o of cases) {
      const bytes = encodeCopyValue(o);
      const back = emptyOrigin();
      readCopyValue(bytes, 0, bytes.length, back);
      assert.deepEqual(back, o);
    }
  });

  test('pass markers round-trip', () => {
    const start = encodePassStart({ releaseEnd: 5000, topicStart: 0 });
    assert.deepEqual(readPassStart(start, 0, start.length), { releaseEnd: 5000, topicStart: 0 });
    const end = encodePassEnd({ pass: 4321, copies: 99_999, releaseEnd: 5000 });
    assert.deepEqual(readPassEnd(end, 0, end.length), { pass: 4321, copies: 99_999, releaseEnd: 5000 });
  });

  test('a later format, an unknown kind, a truncated or overlong value fail with CarryFormatError', () => {
    const good = encodeCopyValue(origin());
    const later = Buffer.from(good);
    later[1] = CARRY_FORMAT + 1;
    assert.throws(
      () => readCopyValue(later, 0, later.length, emptyOrigin()),
      (e: Error) => e instanceof CarryFormatError && /another kcompact version/.test(e.message),
    );
    const kind = Buffer.from(good);
    kind[0] = 9;
    assert.throws(() => readCopyValue(kind, 0, kind.length, emptyOrigin()), CarryFormatError);
    assert.throws(() => readCopyValue(good, 0, good.length - 1, emptyOrigin()), /ends inside|does not hold/);
    const long = Buffer.concat([good, Buffer.from([0])]);
    assert.throws(() => readCopyValue(long, 0, long.length, emptyOrigin()), CarryFormatError);
    assert.throws(() => readCopyValue(good, 0, 1, emptyOrigin()), CarryFormatError);
    const start = encodePassStart({ releaseEnd: 1, topicStart: 0 });
    assert.throws(() => readCopyValue(start, 0, start.length, emptyOrigin()), /marker where a copy/);
  });

  test('an offset outside its batch is refused when written', () => {
    assert.throws(() => encodeCopyValue(origin({ offset: 980 })), RangeError);
  });
});

const SOURCE: BatchFields = {
  baseOffset: 500n,
  partitionLeaderEpoch: 4,
  attributes: Attributes.transactional,
  lastOffsetDelta: 19,
  baseTimestamp: 1_650_000_000_000n,
  maxTimestamp: 1_650_000_000_000n + 19n * 7n,
  producerId: 77n,
  producerEpoch: 2,
  baseSequence: 40,
};

function sourceRecords(): RecordInput[] {
  return Array.from({ length: 20 }, (_, i) => ({
    timestampDelta: i * 7,
    offsetDelta: i,
    key: Buffer.from(`key-${i % 5}`),
    value: i % 4 === 3 ? null : Buffer.from(`value ${i} `.repeat(i + 1)),
    headers:
      i % 3 === 0
        ? [
            { key: Buffer.from('trace'), value: Buffer.from(`t${i}`) },
            { key: Buffer.from('nil'), value: null },
          ]
        : [],
  }));
}

async function onlyBatch(bytes: Buffer): Promise<{ header: BatchHeader; payload: Buffer }> {
  const [header] = iterateBatches(bytes).batches;
  assert.ok(header);
  assert.ok(verifyCrc(bytes, header), 'CRC valid');
  return { header, payload: await batchPayload(bytes, header) };
}

/** Copies of the records of `source` at the given deltas, as a carry pass writes them. */
async function carry(source: Buffer, keep: (delta: number) => boolean, codec: number, now: number): Promise<Buffer> {
  const { header, payload } = await onlyBatch(source);
  const copies = new CopyBatches(codec);
  const scan = new RecordScan();
  const parts = emptyCopy().parts;
  const o = emptyOrigin();
  for (let pos = 0; pos < payload.length;) {
    pos = scanRecordAt(payload, pos, scan);
    if (keep(scan.offsetDelta)) copies.add(originOf(header, scan, 9000, scan.valueLength < 0 ? now + 1000 : -1, o), originalParts(payload, scan, parts));
  }
  const out = await copies.flush(now);
  assert.ok(out);
  return out;
}

describe('carried batches', () => {
  for (const sourceCodec of CODECS) {
    for (const carryCodec of [0, 3]) {
      test(`survivors of a codec ${sourceCodec} batch, carried with codec ${carryCodec}, come back byte for byte at their offsets`, async () => {
        const source = await encodeBatch(SOURCE, sourceRecords(), sourceCodec);
        const kept = (d: number) => d % 3 !== 1;
        const now = 1_800_000_000_000;
        const carried = await carry(source, kept, carryCodec, now);

        // As the store sees them: no producer, stamped with the time of carrying, marked.
        const { header: ch, payload: cp } = await onlyBatch(carried);
        assert.equal(ch.producerId, -1n);
        assert.equal(ch.maxTimestamp, BigInt(now));
        assert.equal(ch.compression, carryCodec);
        assert.equal(carryKindAt(cp, 0), CarryKind.Copy);
        for (const r of await decodeRecords(carried, ch)) assert.equal(r.timestampDelta, 0);

        const restored = new RestoredBatches();
        const copy = emptyCopy();
        for (let pos = 0; pos < cp.length; pos = copy.next) {
          readCopyAt(cp, pos, copy);
          await restored.add(copy);
        }
        const [batch, ...more] = await restored.finish();
        assert.equal(more.length, 0);
        const { header: rh } = await onlyBatch(batch!);
        assert.equal(rh.baseOffset, SOURCE.baseOffset);
        assert.equal(rh.lastOffsetDelta, SOURCE.lastOffsetDelta);
        assert.equal(rh.partitionLeaderEpoch, SOURCE.partitionLeaderEpoch);
        assert.equal(rh.producerId, SOURCE.producerId);
        assert.equal(rh.producerEpoch, SOURCE.producerEpoch);
        assert.equal(rh.isTransactional, true);
        assert.equal(rh.compression, sourceCodec);

        const want = (await decodeRecords(source, (await onlyBatch(source)).header)).filter((r) => kept(r.offsetDelta));
        const got = await decodeRecords(batch!, rh);
        assert.equal(got.length, want.length);
        const abs = (h: BatchHeader, r: { timestampDelta: number }) => Number(h.baseTimestamp) + r.timestampDelta;
        const srcHeader = (await onlyBatch(source)).header;
        for (let i = 0; i < want.length; i++) {
          const [g, w] = [got[i]!, want[i]!];
          assert.equal(g.offsetDelta, w.offsetDelta);
          assert.equal(abs(rh, g), abs(srcHeader, w));
          assert.deepEqual(g.key, w.key);
          assert.deepEqual(g.value, w.value);
          assert.deepEqual(g.headers, w.headers);
        }
      });
    }
  }

  test('copies of several original batches come back as one batch each, in order', async () => {
    const a = await encodeBatch({ ...SOURCE, attributes: 0, producerId: -1n, producerEpoch: -1, baseSequence: -1 }, sourceRecords(), 0);
    const b = await encodeBatch({ ...SOURCE, baseOffset: 520n }, sourceRecords(), 2);
    const copies = new CopyBatches(0);
    const scan = new RecordScan();
    for (const source of [a, b]) {
      const { header, payload } = await onlyBatch(source);
      for (let pos = 0; pos < payload.length;) {
        pos = scanRecordAt(payload, pos, scan);
        if (scan.offsetDelta % 5 === 0) copies.add(originOf(header, scan, 1, -1, emptyOrigin()), originalParts(payload, scan, emptyCopy().parts));
      }
    }
    const { payload } = await onlyBatch((await copies.flush(1))!);
    const restored = new RestoredBatches();
    const copy = emptyCopy();
    for (let pos = 0; pos < payload.length; pos = copy.next) await restored.add(readCopyAt(payload, pos, copy));
    const batches = await restored.finish();
    assert.deepEqual(
      batches.map((x) => {
        const h = iterateBatches(x).batches[0]!;
        return [h.baseOffset, h.recordCount, h.compression, h.producerId];
      }),
      [
        [500n, 4, 0, -1n],
        [520n, 4, 2, 77n],
      ],
    );
  });

  test('pass markers are one-record batches the kind check recognises; client records are not', async () => {
    for (const [value, kind] of [
      [encodePassStart({ releaseEnd: 10, topicStart: 0 }), CarryKind.PassStart],
      [encodePassEnd({ pass: 3, copies: 4, releaseEnd: 10 }), CarryKind.PassEnd],
    ] as const) {
      const { header, payload } = await onlyBatch(await markerBatch(value, 5));
      assert.equal(header.recordCount, 1);
      assert.equal(carryKindAt(payload, 0), kind);
    }
    const { payload } = await onlyBatch(await encodeBatch(SOURCE, sourceRecords(), 0));
    assert.equal(carryKindAt(payload, 0), CarryKind.None);
    const lookalike = await encodeBatch(
      SOURCE,
      [
        {
          timestampDelta: 0,
          offsetDelta: 0,
          key: Buffer.from('k'),
          value: null,
          headers: [{ key: Buffer.from('kcompact.carrx'), value: Buffer.from([1, 1]) }],
        },
      ],
      0,
    );
    assert.equal(carryKindAt((await onlyBatch(lookalike)).payload, 0), CarryKind.None);
  });
});
