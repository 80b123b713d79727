import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  Attributes,
  batchPayload,
  decodeRecords,
  encodeBatch,
  iterateBatches,
  RecordScan,
  verifyCrc,
  type BatchFields,
  type BatchHeader,
  type RecordInput,
} from '../../../../src/protocol/records/batch.js';
import { batchesIn, carryValueAt, copyOf, CopyRun, emptyCopy, HorizonCursor, markerBatch } from '../../../../src/protocol/carry/carried-batch.js';
import {
  CARRY_FORMAT,
  CarryFormatError,
  CarryKind,
  carryKindAt,
  emptyMark,
  encodeCopyMark,
  encodePassEnd,
  encodePassStart,
  encodeRelease,
  readCopyMark,
  readPassEnd,
  readPassStart,
  readRelease,
  type CopyMark,
} from '../../../../src/protocol/carry/carry-record.js';
import { SourceGroup } from '../../../../src/engine/carry/source-group.js';
import { viewBatch } from '../../../../src/protocol/carry/batch-view.js';

const CODECS = [0, 1, 2, 3, 4];

describe('carry header values', () => {
  test('a copy mark round-trips, with no, one and many horizons, and large values', () => {
    const cases: CopyMark[] = [
      { pass: 123_456, horizons: [] },
      { pass: 0, horizons: [0, 1_700_000_086_400_000] },
      { pass: 2 ** 50, horizons: [1, 5, 2, 1_700_000_000_000, 2 ** 31 - 1, 2 ** 52] },
    ];
    for (const m of cases) {
      const bytes = encodeCopyMark(m);
      const back = emptyMark();
      back.horizons.push(9, 9);
      readCopyMark(bytes, 0, bytes.length, back);
      assert.deepEqual(back, m);
    }
  });

  test('pass markers round-trip', () => {
    const start = encodePassStart({ releaseEnd: 5000, topicStart: 0 });
    assert.deepEqual(readPassStart(start, 0, start.length), { releaseEnd: 5000, topicStart: 0 });
    const end = encodePassEnd({ pass: 4321, copies: 99_999, releaseEnd: 5000 });
    assert.deepEqual(readPassEnd(end, 0, end.length), { pass: 4321, copies: 99_999, releaseEnd: 5000 });
  });

  test('a release round-trips with no, one and many share groups, names in any script; a damaged one fails with CarryFormatError', () => {
    for (const groups of [[], ['g'], ['share-early', 'グループ', 'a'.repeat(300), '']]) {
      const r = { pass: 123_456_789_012, releasedEnd: 123_456_789_000, groups };
      const bytes = encodeRelease(r);
      assert.deepEqual(readRelease(bytes, 0, bytes.length), r);
    }
    const good = encodeRelease({ pass: 4, releasedEnd: 3, groups: ['abc'] });
    assert.throws(() => readRelease(good, 0, good.length - 1), CarryFormatError);
    assert.throws(() => readRelease(Buffer.concat([good, Buffer.from([0])]), 0, good.length + 1), CarryFormatError);
    const start = encodePassStart({ releaseEnd: 1, topicStart: 0 });
    assert.throws(() => readRelease(start, 0, start.length), /not a release/);
    const unknown = Buffer.from(good);
    unknown[0] = 5;
    assert.throws(() => readRelease(unknown, 0, unknown.length), /unknown carried record kind 5/);
  });

  test('another format, an unknown kind, a truncated or overlong value, unordered horizons fail with CarryFormatError', () => {
    const good = encodeCopyMark({ pass: 77, horizons: [3, 1000, 9, 2000] });
    for (const format of [CARRY_FORMAT - 1, CARRY_FORMAT + 1]) {
      const other = Buffer.from(good);
      other[1] = format;
      assert.throws(
        () => readCopyMark(other, 0, other.length, emptyMark()),
        (e: Error) => e instanceof CarryFormatError && /another kcompact version/.test(e.message),
      );
    }
    const kind = Buffer.from(good);
    kind[0] = 9;
    assert.throws(() => readCopyMark(kind, 0, kind.length, emptyMark()), CarryFormatError);
    assert.throws(() => readCopyMark(good, 0, good.length - 1, emptyMark()), /ends inside|does not hold/);
    const long = Buffer.concat([good, Buffer.from([0])]);
    assert.throws(() => readCopyMark(long, 0, long.length, emptyMark()), CarryFormatError);
    assert.throws(() => readCopyMark(good, 0, 1, emptyMark()), CarryFormatError);
    const unordered = encodeCopyMark({ pass: 1, horizons: [9, 1000, 3, 2000] });
    assert.throws(() => readCopyMark(unordered, 0, unordered.length, emptyMark()), /not in offset order/);
    const start = encodePassStart({ releaseEnd: 1, topicStart: 0 });
    assert.throws(() => readCopyMark(start, 0, start.length, emptyMark()), /marker where a copy/);
  });

  test('a horizon cursor finds the horizons of ascending deltas', () => {
    const c = new HorizonCursor([2, 200, 5, 500]);
    assert.deepEqual(
      [0, 1, 2, 3, 5, 6].map((d) => c.at(d)),
      [-1, -1, 200, -1, 500, -1],
    );
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

/** The source batch as a carry pass finds it in the store. */
async function sourceOf(bytes: Buffer): Promise<{ batch: BatchHeader; records: Buffer; mark: null; runBase: number }> {
  const { header } = await onlyBatch(bytes);
  return { batch: header, records: bytes, mark: null, runBase: 0 };
}

/** What a pass copies of `source` keeping the records at the deltas `keep` holds, horizons for its tombstones. */
async function copyOfSource(source: Buffer, keep: (delta: number) => boolean, horizon: number | null): Promise<{ copy: Buffer; horizons: number[] }> {
  const group = new SourceGroup(10_000);
  const from = await sourceOf(source);
  group.start(from, null);
  const base = Number(from.batch.baseOffset);
  for (const r of await decodeRecords(source, from.batch)) if (keep(r.offsetDelta)) group.add(base + r.offsetDelta, r.value === null ? horizon : null);
  const copy = await group.copy();
  assert.ok(copy);
  return { copy: Buffer.from(copy), horizons: [...group.horizons] };
}

/** A visibility whose survivors are the records at the deltas `keep` holds, all below the horizon. */
function survivorsOf(base: number, count: number, keep: (delta: number) => boolean) {
  const kept = Array.from({ length: count }, (_, d) => d)
    .filter(keep)
    .map((d) => base + d);
  return { cleanedUpTo: 1e12, survivors: (a: number, b: number) => Float64Array.from(kept.filter((o) => o >= a && o < b)) };
}

describe('carried batches', () => {
  for (const codec of CODECS) {
    test(`the copy of a codec ${codec} batch is what the view serves of it, and every copy reads back byte for byte`, async () => {
      const source = await encodeBatch(SOURCE, sourceRecords(), codec);
      for (const keep of [(d: number) => d % 3 !== 1, () => true, (d: number) => d === 19]) {
        const { copy, horizons } = await copyOfSource(source, keep, 1_800_000_086_400_000);
        const { header } = await onlyBatch(source);
        const viewed = await viewBatch(source, header, survivorsOf(500, 20, keep), 0);
        assert.deepEqual(copy, Buffer.from(viewed.bytes), 'the copy holds the batch the view serves');
        const { header: ch } = await onlyBatch(copy);
        assert.equal(ch.compression, codec);
        assert.equal(ch.baseOffset, SOURCE.baseOffset);
        assert.equal(ch.lastOffsetDelta, SOURCE.lastOffsetDelta);
        const tombstones = (await decodeRecords(source, header)).filter((r) => keep(r.offsetDelta) && r.value === null).map((r) => r.offsetDelta);
        assert.deepEqual(
          horizons,
          tombstones.flatMap((d) => [500 + d, 1_800_000_086_400_000]),
        );
      }
    });
  }

  test('a run of batches goes into one copy, in an uncompressed carry batch stamped with the time of carrying, and reads back in place', async () => {
    const sources = [
      await encodeBatch({ ...SOURCE, attributes: 0, producerId: -1n, producerEpoch: -1, baseSequence: -1 }, sourceRecords(), 0),
      await encodeBatch({ ...SOURCE, baseOffset: 520n }, sourceRecords(), 2),
      await encodeBatch({ ...SOURCE, baseOffset: 540n }, sourceRecords(), 4),
    ];
    const run = new CopyRun();
    sources.forEach((b, i) => run.add(b, 500 + 20 * i));
    run.addHorizon(523, 1234);
    run.addHorizon(541, 5678);
    assert.equal(run.count, 3);
    assert.equal(
      run.bytes,
      sources.reduce((n, b) => n + b.length, 0),
    );
    const now = 1_800_000_000_000;
    const carried = await run.flush(7, now);
    assert.ok(carried);
    assert.equal(await run.flush(7, now), null, 'nothing left after a flush');
    const { header: ch, payload } = await onlyBatch(carried);
    assert.equal(ch.producerId, -1n);
    assert.equal(ch.maxTimestamp, BigInt(now));
    assert.equal(ch.compression, 0);
    assert.equal(ch.recordCount, 1);
    assert.equal(carryKindAt(payload, 0), CarryKind.Copy);
    const scan = new RecordScan();
    const v = carryValueAt(payload, 0, scan);
    assert.equal(v.kind, CarryKind.Copy);
    assert.equal(v.next, payload.length);
    const copy = copyOf(payload, v, scan, emptyCopy());
    assert.deepEqual(copy.mark, { pass: 7, horizons: [23, 1234, 41, 5678] }, 'horizons count from the run\u2019s first base');
    const runBytes = payload.subarray(copy.runStart, copy.runEnd);
    assert.deepEqual(runBytes, Buffer.concat(sources), 'the batches come back byte for byte, back to back');
    const batches = batchesIn(runBytes);
    assert.deepEqual(
      batches.map((b) => [b.baseOffset, verifyCrc(runBytes, b)]),
      [
        [500n, true],
        [520n, true],
        [540n, true],
      ],
    );
    // The next run starts afresh: its horizons count from its own first base.
    run.add(sources[2]!, 540);
    run.addHorizon(545, 9);
    const next = (await onlyBatch((await run.flush(8, now))!)).payload;
    const second = copyOf(next, carryValueAt(next, 0, scan), scan, emptyCopy());
    assert.deepEqual(second.mark, { pass: 8, horizons: [5, 9] });
    assert.deepEqual(next.subarray(second.runStart, second.runEnd), sources[2]);
  });

  test('a copy value that is not whole data batches is refused', async () => {
    const one = await encodeBatch(SOURCE, sourceRecords(), 0);
    assert.throws(() => batchesIn(one.subarray(0, 40)), CarryFormatError);
    assert.throws(() => batchesIn(one.subarray(0, one.length - 1)), /not whole batches/);
    const empty = await encodeBatch(SOURCE, [], 0);
    assert.throws(() => batchesIn(Buffer.concat([one, empty])), /without data records/);
    assert.equal(batchesIn(Buffer.concat([one, one])).length, 2);
  });

  test('a pass refuses rows outside their batch and a batch reaching past its release end', async () => {
    const source = await sourceOf(await encodeBatch(SOURCE, sourceRecords(), 0));
    const group = new SourceGroup(600);
    group.start(source, null);
    assert.throws(() => group.add(499, null), /not in the batch/);
    assert.ok(group.holds(519, null));
    assert.ok(!group.holds(520, null));
    assert.ok(!group.holds(510, 3000), 'a row whose bytes are in a copy is not in an original');
    assert.throws(() => new SourceGroup(510).start(source, null), /reaches past the pass's release end/);
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
