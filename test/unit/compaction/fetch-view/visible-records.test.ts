import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type Visibility } from '../../../../src/protocol/carry/batch-view.js';
import { visibleRecords } from '../../../../src/compaction/fetch-view/visible-records.js';
import { BATCH_HEADER_SIZE, encodeBatch, iterateBatches, readBatchHeader } from '../../../../src/protocol/records/batch.js';
import { markerBatch } from '../../../../src/protocol/carry/carried-batch.js';
import { CARRY_HEADER_KEY, encodeCopyMark, encodePassStart } from '../../../../src/protocol/carry/carry-record.js';
import { FakeIndex, FakeLog, readBatches } from './fake-log.js';

const CODECS = [0, 1, 2, 3, 4];

function visibility(index: FakeIndex): Visibility {
  return { cleanedUpTo: index.cleanedUpTo(), survivors: (f, t) => index.survivors(f, t) };
}

async function logOf(...counts: number[]): Promise<FakeLog> {
  const log = new FakeLog();
  for (const count of counts) await log.append({ count });
  return log;
}

describe('visibleRecords', () => {
  for (const codec of CODECS) {
    test(`codec ${codec}: a batch keeps its survivors with their offsets, exact count and a valid CRC`, async () => {
      const log = new FakeLog();
      await log.append({ count: 20, codec });
      const data = log.read(0, 1 << 20, true);
      const survivors = [1, 4, 5, 13, 19];
      const seen = await visibleRecords(data, visibility(new FakeIndex(survivors, 20)), 0);
      const out = await readBatches(Buffer.concat(seen.batches));
      assert.deepEqual(
        out.records.map((r) => r.offset),
        survivors,
      );
      assert.deepEqual(
        out.records.map((r) => r.value),
        survivors.map((o) => `value-${o}-`.padEnd(40, 'x')),
      );
      assert.equal(out.batches.length, 1);
      assert.deepEqual(out.batches[0], { base: 0, last: 19, count: 5, attributes: codec });
      assert.equal(seen.progress, 5);
      assert.equal(seen.removedRecords, 15);
      assert.equal(seen.rebuiltBatches, 1);
      assert.equal(seen.changed, true);
    });
  }

  test('untouched batches are the upstream bytes; batches past the horizon are never looked at', async () => {
    const log = await logOf(5, 5, 5);
    const data = log.read(0, 1 << 20, true);
    const seen = await visibleRecords(data, visibility(new FakeIndex([0, 1, 2, 3, 4], 5)), 0);
    assert.equal(seen.batches.length, 3);
    assert.ok(Buffer.concat(seen.batches).equals(data));
    assert.equal(seen.batches[0]!.buffer, data.buffer, 'a view of the upstream data, not a copy');
    assert.equal(seen.changed, false);
    assert.equal(seen.end, 14);
  });

  test('a batch that loses every record is dropped, the last one is kept as an empty batch', async () => {
    const log = await logOf(5, 5, 5, 5);
    const data = log.read(0, 1 << 20, true);
    const seen = await visibleRecords(data, visibility(new FakeIndex([12], 20)), 0);
    assert.equal(seen.batches.length, 1);
    assert.ok(seen.trailingEmpty);
    assert.equal(seen.trailingEmpty!.length, BATCH_HEADER_SIZE);
    const empty = readBatchHeader(seen.trailingEmpty!, 0);
    assert.equal(empty.baseOffset, 15n);
    assert.equal(empty.lastOffsetDelta, 4);
    assert.equal(empty.recordCount, 0);
    assert.equal(seen.progress, 1);
    assert.equal(seen.removedRecords, 19);
  });

  test('a batch straddling the horizon keeps everything from the horizon on', async () => {
    const log = await logOf(10);
    const data = log.read(0, 1 << 20, true);
    const seen = await visibleRecords(data, visibility(new FakeIndex([2], 6)), 0);
    const out = await readBatches(Buffer.concat(seen.batches));
    assert.deepEqual(
      out.records.map((r) => r.offset),
      [2, 6, 7, 8, 9],
    );
  });

  test('a rebuilt batch drops records before the fetch offset; progress counts only records at or after it', async () => {
    const log = await logOf(10);
    const data = log.read(0, 1 << 20, true);
    const seen = await visibleRecords(data, visibility(new FakeIndex([1, 3, 8], 10)), 4);
    const out = await readBatches(Buffer.concat(seen.batches));
    assert.deepEqual(
      out.records.map((r) => r.offset),
      [8],
    );
    assert.equal(seen.progress, 1);
    const untouched = await visibleRecords(data, visibility(new FakeIndex([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], 10)), 4);
    assert.equal(untouched.progress, 6, 'an untouched batch counts its records from the fetch offset');
  });

  test('records before the fetch offset alone do not count: the batch goes out empty', async () => {
    const log = await logOf(10);
    const seen = await visibleRecords(log.read(9, 1 << 20, true), visibility(new FakeIndex([2], 10)), 9);
    assert.equal(seen.progress, 0);
    assert.equal(seen.batches.length, 0);
    assert.ok(seen.trailingEmpty);
  });

  test('batches with offset gaps (already compacted upstream) are filtered by their real offsets', async () => {
    const log = new FakeLog();
    await log.append({ count: 10, deltas: [0, 3, 4, 9], codec: 3 });
    const data = log.read(0, 1 << 20, true);
    const all = await visibleRecords(data, visibility(new FakeIndex([0, 3, 4, 9], 10)), 0);
    assert.equal(all.changed, false);
    assert.equal(all.progress, 4);
    const some = await visibleRecords(data, visibility(new FakeIndex([3, 9], 10)), 0);
    assert.deepEqual(
      (await readBatches(Buffer.concat(some.batches))).records.map((r) => r.offset),
      [3, 9],
    );
    const late = await visibleRecords(data, visibility(new FakeIndex([0, 3, 4, 9], 10)), 5);
    assert.equal(late.progress, 1, 'only offset 9 is at or after 5');
  });

  test('records whose deltas are out of place in a gapless batch are filtered by their real offsets', async () => {
    const log = new FakeLog();
    await log.append({ count: 4, deltas: [0, 2, 1, 3] });
    const seen = await visibleRecords(log.read(0, 1 << 20, true), visibility(new FakeIndex([2], 4)), 0);
    const out = await readBatches(Buffer.concat(seen.batches));
    assert.deepEqual(
      out.records.map((r) => [r.offset, r.value!.slice(0, 8)]),
      [[2, 'value-2-']],
    );
  });

  test('control and transactional batches keep their attributes; markers are reported with their visibility', async () => {
    const log = new FakeLog();
    await log.append({ count: 3, producerId: 7n, transactional: true, codec: 2 });
    await log.append({ count: 1, producerId: 7n, marker: 0 });
    await log.append({ count: 3, producerId: 8n, transactional: true });
    await log.append({ count: 1, producerId: 8n, marker: 1 });
    const data = log.read(0, 1 << 20, true);
    const seen = await visibleRecords(data, visibility(new FakeIndex([1, 5, 7], 8)), 0);
    const out = await readBatches(Buffer.concat([...seen.batches, seen.trailingEmpty ?? Buffer.alloc(0)]));
    assert.deepEqual(
      out.batches.map((b) => [b.base, b.last, b.count, b.attributes]),
      [
        [0, 2, 1, 0x10 | 2],
        [4, 6, 1, 0x10],
        [7, 7, 1, 0x30],
      ],
    );
    assert.deepEqual(seen.markers, [
      { producerId: 7n, offset: 3, visible: false },
      { producerId: 8n, offset: 7, visible: true },
    ]);
  });

  test('the cut-off tail follows the filtered batches unchanged', async () => {
    const log = await logOf(5, 5, 5);
    const full = log.read(0, 1 << 20, true);
    const cut = log.read(0, full.length - 20, true);
    const seen = await visibleRecords(cut, visibility(new FakeIndex([1, 7], 15)), 0);
    assert.equal(seen.batches.length, 2);
    assert.ok(seen.truncatedTail.equals(cut.subarray(log.batches[0]!.bytes.length + log.batches[1]!.bytes.length)));
    assert.equal(seen.end, 9);
    assert.equal(seen.trailingEmpty, null);
  });

  test('a byte budget keeps whole batches up to it and says the view is full', async () => {
    const log = await logOf(5, 5, 5, 5);
    const data = log.read(0, 1 << 20, true);
    const all = visibility(
      new FakeIndex(
        Array.from({ length: 20 }, (_, i) => i),
        20,
      ),
    );
    const size = log.batches[0]!.bytes.length;
    const two = await visibleRecords(data, all, 0, { maxBytes: size * 2 + size / 2, oneAnyway: false });
    assert.equal(two.batches.length, 2);
    assert.deepEqual([two.full, two.end, two.progress, two.truncatedTail.length, two.changed], [true, 9, 10, 0, true]);
    const none = await visibleRecords(data, all, 0, { maxBytes: size - 1, oneAnyway: false });
    assert.deepEqual([none.batches.length, none.full, none.end, none.progress], [0, true, -1, 0]);
    const one = await visibleRecords(data, all, 0, { maxBytes: size - 1, oneAnyway: true });
    assert.deepEqual([one.batches.length, one.full, one.end], [1, true, 4], 'the first batch comes anyway');
    const enough = await visibleRecords(data, all, 0, { maxBytes: data.length, oneAnyway: false });
    assert.deepEqual([enough.batches.length, enough.full, enough.changed], [4, false, false]);
  });

  test('under a budget, the emptied last batch counts and a cut-off tail that does not fit is left out', async () => {
    const log = await logOf(5, 5, 5);
    const full = log.read(0, 1 << 20, true);
    const cut = log.read(0, full.length - 20, true);
    const two = visibility(new FakeIndex([1, 7], 15));
    const both = (await visibleRecords(cut, two, 0)).batches.reduce((n, b) => n + b.length, 0);
    const noTail = await visibleRecords(cut, two, 0, { maxBytes: both + 10, oneAnyway: false });
    assert.deepEqual([noTail.batches.length, noTail.truncatedTail.length, noTail.full], [2, 0, false]);
    const withTail = await visibleRecords(cut, two, 0, { maxBytes: cut.length, oneAnyway: false });
    assert.equal(withTail.truncatedTail.length, cut.length - log.batches[0]!.bytes.length - log.batches[1]!.bytes.length);
    const index = visibility(new FakeIndex([1], 15));
    const kept = (await visibleRecords(full, index, 0)).batches[0]!.length;
    const noEmpty = await visibleRecords(full, index, 0, { maxBytes: kept + BATCH_HEADER_SIZE - 1, oneAnyway: false });
    assert.deepEqual([noEmpty.batches.length, noEmpty.trailingEmpty, noEmpty.full], [1, null, true]);
    const withEmpty = await visibleRecords(full, index, 0, { maxBytes: kept + BATCH_HEADER_SIZE, oneAnyway: false });
    assert.equal(withEmpty.trailingEmpty?.length, BATCH_HEADER_SIZE);
  });

  test('a batch whose records cannot be read goes out unfiltered with everything after it', async () => {
    const log = await logOf(5, 5, 5);
    const data = Buffer.from(log.read(0, 1 << 20, true));
    const second = log.batches[0]!.bytes.length;
    // The first record's length, as a varint far past the batch's end.
    data[second + BATCH_HEADER_SIZE]! = 0xfe;
    data[second + BATCH_HEADER_SIZE + 1]! = 0x7f;
    const seen = await visibleRecords(data, visibility(new FakeIndex([1, 7, 12], 15)), 0);
    assert.match(seen.corrupt ?? '', /does not fit its payload/);
    assert.equal(seen.batches.length, 2);
    assert.ok(seen.batches[1]!.equals(data.subarray(second)));
    assert.equal(iterateBatches(seen.batches[0]!).batches[0]!.recordCount, 1);
  });

  test('below the horizon a batch is rebuilt without a second CRC check: the indexer checked it', async () => {
    const log = await logOf(5);
    const data = Buffer.from(log.read(0, 1 << 20, true));
    // The last value byte of the last record: the records parse, only the CRC would tell.
    data[data.length - 1]! ^= 0xff;
    const seen = await visibleRecords(data, visibility(new FakeIndex([4], 5)), 0);
    assert.equal(seen.corrupt, null);
    assert.equal(iterateBatches(seen.batches[0]!).batches[0]!.recordCount, 1);
  });

  test('no records, or only a cut-off tail, is no progress and no end', async () => {
    const empty = await visibleRecords(Buffer.alloc(0), visibility(new FakeIndex([], 0)), 0);
    assert.equal(empty.end, -1);
    const log = await logOf(50);
    const onlyTail = await visibleRecords(log.read(0, 1 << 20, true).subarray(0, 100), visibility(new FakeIndex([], 50)), 0);
    assert.equal(onlyTail.end, -1);
    assert.equal(onlyTail.truncatedTail.length, 100);
  });
});

describe('kcompact carry records past the horizon', () => {
  const ownFields = (base: number, count: number) => ({
    baseOffset: BigInt(base),
    partitionLeaderEpoch: 0,
    attributes: 0,
    lastOffsetDelta: count - 1,
    baseTimestamp: 0n,
    maxTimestamp: 0n,
    producerId: -1n,
    producerEpoch: -1,
    baseSequence: -1,
  });
  const copyRecord = (i: number, valueSize: number) => ({
    timestampDelta: 0,
    offsetDelta: i,
    key: Buffer.from(`key-${i}`),
    value: Buffer.alloc(valueSize, 120),
    headers: [
      { key: CARRY_HEADER_KEY, value: encodeCopyMark({ pass: 3, horizons: [] }) },
      { key: Buffer.from('h'), value: Buffer.from('v') },
    ],
  });

  for (const codec of CODECS) {
    test(`codec ${codec}: copies and markers are dropped though no pass was seen, a client's batch without a producer is not`, async () => {
      const start = await markerBatch(encodePassStart({ releaseEnd: 0, topicStart: 0 }), 0);
      const copies = await encodeBatch(ownFields(1, 3), [copyRecord(0, 200_000), copyRecord(1, 10), copyRecord(2, 10)], codec);
      // A client's batch whose first record is plain and whose second carries the header is the client's.
      const client = await encodeBatch(ownFields(4, 2), [{ ...copyRecord(0, 10), headers: [] }, copyRecord(1, 10)], codec);
      const data = Buffer.concat([start, copies, client]);
      const seen = await visibleRecords(data, { cleanedUpTo: 0, survivors: () => new Float64Array(0) }, 0);
      const out = await readBatches(Buffer.concat(seen.batches));
      assert.deepEqual(
        out.records.map((r) => r.offset),
        [4, 5],
      );
      assert.ok(seen.batches.at(-1)!.equals(client), "the client's batch goes out as the upstream sent it");
      assert.equal(seen.end, 5);
    });
  }
});

describe('visibleRecords of a partition with conditional records (docs/tables.md)', () => {
  for (const codec of [0, 1]) {
    test(`codec ${codec}: void records past the horizon are hidden, the rest of their batch kept`, async () => {
      const log = await logOf(5);
      await log.append({ count: 10, codec });
      const data = log.read(0, 1 << 20, true);
      const seen = await visibleRecords(data, { ...visibility(new FakeIndex([0, 1, 2, 3, 4], 5)), voids: [6, 9, 14], judgedTo: 15 }, 0);
      const out = await readBatches(Buffer.concat(seen.batches));
      assert.deepEqual(
        out.records.map((r) => r.offset),
        [0, 1, 2, 3, 4, 5, 7, 8, 10, 11, 12, 13],
      );
      assert.equal(seen.withheld, false);
      assert.equal(seen.removedRecords, 3);
    });
  }

  test('batches reaching past what the index judged are withheld, with everything after them', async () => {
    const log = await logOf(5, 5, 5);
    const data = log.read(0, 1 << 20, true);
    const seen = await visibleRecords(data, { cleanedUpTo: 0, survivors: () => new Float64Array(0), voids: [], judgedTo: 7 }, 0);
    const out = await readBatches(Buffer.concat(seen.batches));
    assert.deepEqual(
      out.records.map((r) => r.offset),
      [0, 1, 2, 3, 4],
    );
    assert.equal(seen.withheld, true);
    assert.equal(seen.end, 4);
    assert.equal(seen.truncatedTail.length, 0);
  });
});

describe('visibleRecords past the index of a partition with no conditional record yet', () => {
  async function conditionalBatch(base: number, codec: number): Promise<Buffer> {
    return encodeBatch(
      {
        baseOffset: BigInt(base),
        partitionLeaderEpoch: 0,
        attributes: 0,
        lastOffsetDelta: 1,
        baseTimestamp: 1n,
        maxTimestamp: 2n,
        producerId: -1n,
        producerEpoch: -1,
        baseSequence: -1,
      },
      [
        { timestampDelta: 0, offsetDelta: 0, key: Buffer.from('k'), value: Buffer.from('plain') },
        {
          timestampDelta: 1,
          offsetDelta: 1,
          key: Buffer.from('k'),
          value: Buffer.from('cas'),
          headers: [{ key: Buffer.from('kcompact.if-match'), value: Buffer.from('0') }],
        },
      ],
      codec,
    );
  }

  for (const codec of [0, 1, 3]) {
    test(`codec ${codec}: a batch past the index holding a conditional record is withheld, plain ones are not`, async () => {
      const log = await logOf(5);
      const data = Buffer.concat([log.read(0, 1 << 20, true), await conditionalBatch(5, codec)]);
      const none = { cleanedUpTo: 0, survivors: () => new Float64Array(0) };
      const pastIndex = await visibleRecords(data, { ...none, indexedTo: 3 }, 0);
      assert.equal(pastIndex.withheld, true);
      assert.deepEqual(
        (await readBatches(Buffer.concat(pastIndex.batches))).records.map((r) => r.offset),
        [0, 1, 2, 3, 4],
      );
      const indexed = await visibleRecords(data, { ...none, indexedTo: 7 }, 0);
      assert.equal(indexed.withheld, false, 'what the index has read it judged');
      assert.equal((await readBatches(Buffer.concat(indexed.batches))).records.length, 7);
    });
  }
});
