import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CopyRun, markerBatch } from '../../../../src/compaction/carry/carried-batch.js';
import { encodePassEnd, encodePassStart } from '../../../../src/compaction/carry/carry-record.js';
import { carriedRecords, readCopiesAhead } from '../../../../src/compaction/fetch-view/carried-records.js';
import type { PartitionRead, UpstreamRead, UpstreamReads } from '../../../../src/compaction/fetch-view/upstream-reads.js';
import { encodeBatch, iterateBatches } from '../../../../src/protocol/records/batch.js';
import { FakeIndex, readBatches, recordsFor } from './fake-log.js';

/**
 * The originals: 40 batches of 5 records at offsets 0-199 (every other one lz4), carried by one
 * pass as three copies of runs of batches; the store's log starts at the pass (offset 200).
 */
const BATCHES = 40;
const PER_BATCH = 5;
const RELEASE = BATCHES * PER_BATCH;

async function original(i: number): Promise<Buffer> {
  const base = i * PER_BATCH;
  const fields = {
    baseOffset: BigInt(base),
    partitionLeaderEpoch: 3,
    attributes: 0,
    lastOffsetDelta: PER_BATCH - 1,
    baseTimestamp: 1_700_000_000_000n + BigInt(base),
    maxTimestamp: 1_700_000_000_000n + BigInt(base + PER_BATCH - 1),
    producerId: 9n,
    producerEpoch: 0,
    baseSequence: base,
  };
  return encodeBatch(
    fields,
    recordsFor(
      base,
      Array.from({ length: PER_BATCH }, (_, d) => d),
      30,
    ),
    i % 2 === 0 ? 0 : 3,
  );
}

/** A store holding the pass: start marker at 200, copies at 201-203, end marker at 204. */
async function carriedStore(): Promise<{ log: Buffer[]; reads: UpstreamReads; requested: PartitionRead[] }> {
  const at = (offset: number, b: Buffer) => {
    b.writeBigInt64BE(BigInt(offset), 0);
    return b;
  };
  const originals = await Promise.all(Array.from({ length: BATCHES }, (_, i) => original(i)));
  const log: Buffer[] = [at(200, await markerBatch(encodePassStart({ releaseEnd: RELEASE, topicStart: 0 }), 1))];
  for (const [copy, [from, to]] of [
    [201, [0, 10]],
    [202, [10, 25]],
    [203, [25, 40]],
  ] as const) {
    const run = new CopyRun();
    for (let i = from; i < to; i++) run.add(originals[i]!, i * PER_BATCH);
    log.push(at(copy, (await run.flush(200, 2))!));
  }
  log.push(at(204, await markerBatch(encodePassEnd({ pass: 200, copies: RELEASE, releaseEnd: RELEASE }), 3)));
  const requested: PartitionRead[] = [];
  const reads: UpstreamReads = {
    async readPartition(read: PartitionRead): Promise<UpstreamRead> {
      requested.push(read);
      const held = log.filter((b) => Number(b.readBigInt64BE(0)) >= read.fetchOffset);
      const records = Buffer.concat(held);
      return {
        errorCode: 0,
        highWatermark: 205n,
        lastStableOffset: 205n,
        logStartOffset: 200n,
        abortedTransactions: [],
        records,
        release: () => records.fill(0),
      };
    },
    bounds: async () => ({ logStart: 200n, highWatermark: 205n, lastStable: 205n }),
    resolveTopicIds: async () => undefined,
  };
  return { log, reads, requested };
}

function indexOf(survivors: number[]): FakeIndex {
  const index = new FakeIndex(survivors, 205);
  index.carry = { copiesBelow: RELEASE, topicStart: 0, copiesFrom: 200, copiesTo: 204, passOnly: false, marks: new Float64Array([0, 201, 50, 202, 125, 203]) };
  return index;
}

const all = Array.from({ length: RELEASE }, (_, o) => o);
const UNLIMITED = { maxBytes: 64 * 1024 * 1024, oneAnyway: true };

describe('carriedRecords', () => {
  test('copies whose records all survive come back as the original batches, byte for byte', async () => {
    const { reads } = await carriedStore();
    const view = indexOf(all);
    const seen = await carriedRecords(reads, { topic: 't', partition: 0, view, carried: view.carry! }, 0, UNLIMITED);
    const originals = await Promise.all(Array.from({ length: BATCHES }, (_, i) => original(i)));
    assert.deepEqual(Buffer.concat(seen.batches), Buffer.concat(originals));
    assert.equal(seen.progress, RELEASE);
    assert.equal(seen.end, RELEASE - 1);
    assert.equal(seen.full, false);
    assert.equal(seen.rebuiltBatches, 0);
  });

  test('records removed since the pass are left out, batch by batch, and the rest of the run stays whole', async () => {
    const { reads } = await carriedStore();
    const gone = new Set([3, 4, 50, 51, 52, 53, 54, 57, 199]);
    const view = indexOf(all.filter((o) => !gone.has(o)));
    const seen = await carriedRecords(reads, { topic: 't', partition: 0, view, carried: view.carry! }, 0, UNLIMITED);
    const out = await readBatches(Buffer.concat(seen.batches));
    assert.deepEqual(
      out.records.map((r) => r.offset),
      all.filter((o) => !gone.has(o)),
    );
    assert.ok(!out.batches.some((b) => b.base === 50), 'a batch that lost every record is not served');
    assert.equal(seen.removedRecords, gone.size);
    assert.equal(seen.end, RELEASE - 1);
  });

  test('a read from inside a batch gets that batch whole and the rest from there', async () => {
    const { reads } = await carriedStore();
    const view = indexOf(all);
    const seen = await carriedRecords(reads, { topic: 't', partition: 0, view, carried: view.carry! }, 127, UNLIMITED);
    const out = await readBatches(Buffer.concat(seen.batches));
    assert.equal(out.batches[0]!.base, 125);
    assert.deepEqual(
      out.records.map((r) => r.offset),
      all.filter((o) => o >= 125),
    );
    assert.equal(seen.progress, RELEASE - 127);
  });

  test('a budget stops the answer between batches, the first always coming', async () => {
    const { reads } = await carriedStore();
    const view = indexOf(all);
    const size = (await original(0)).length;
    const seen = await carriedRecords(reads, { topic: 't', partition: 0, view, carried: view.carry! }, 20, { maxBytes: size * 3 + 10, oneAnyway: false });
    const out = await readBatches(Buffer.concat(seen.batches));
    assert.deepEqual(
      out.batches.map((b) => b.base),
      [20, 25, 30],
    );
    assert.equal(seen.full, true);
    assert.equal(seen.end, 34);
    const tiny = await carriedRecords(reads, { topic: 't', partition: 0, view, carried: view.carry! }, 20, { maxBytes: 10, oneAnyway: true });
    assert.deepEqual(
      (await readBatches(Buffer.concat(tiny.batches))).batches.map((b) => b.base),
      [20],
    );
    const none = await carriedRecords(reads, { topic: 't', partition: 0, view, carried: view.carry! }, 20, { maxBytes: 10, oneAnyway: false });
    assert.deepEqual(none.batches, []);
    assert.equal(none.full, true);
  });

  test('a replica whose cleaner has not reached the whole pass serves every record there, as it would from the store', async () => {
    const { reads } = await carriedStore();
    const view = indexOf(all.filter((o) => o % 2 === 0));
    view.horizon = 100;
    const seen = await carriedRecords(reads, { topic: 't', partition: 0, view, carried: view.carry! }, 0, UNLIMITED);
    const out = await readBatches(Buffer.concat(seen.batches));
    assert.deepEqual(
      out.records.map((r) => r.offset),
      all.filter((o) => o >= 100 || o % 2 === 0),
    );
  });

  test('reads ask for about the room left, and the answer is whole once the read is released', async () => {
    const { reads, requested } = await carriedStore();
    const view = indexOf(all);
    const seen = await carriedRecords(reads, { topic: 't', partition: 0, view, carried: view.carry! }, 60, { maxBytes: 1000, oneAnyway: true });
    assert.ok(
      requested.every((r) => Number.isInteger(r.maxBytes) && r.maxBytes >= 1000),
      `whole read sizes: ${requested.map((r) => r.maxBytes)}`,
    );
    assert.equal(requested[0]!.fetchOffset, 202, 'from the mark at or before the offset');
    // The fake store zeroes a read's memory on release: served batches must have been copied out.
    for (const b of iterateBatches(Buffer.concat(seen.batches)).batches) assert.ok(b.baseOffset >= 60n);
  });

  test('a read begun ahead from the copy holding the offset is the first read; one from elsewhere is given back', async () => {
    const { reads, requested } = await carriedStore();
    const view = indexOf(all);
    const target = { topic: 't', partition: 0, view, carried: view.carry! };
    const ahead = readCopiesAhead(reads, target, 60, UNLIMITED);
    assert.equal(requested.length, 1);
    assert.equal(requested[0]!.fetchOffset, 202);
    const seen = await carriedRecords(reads, target, 60, UNLIMITED, ahead);
    assert.equal(requested.length, 1, 'no second read: the one begun ahead held everything');
    assert.equal((await readBatches(Buffer.concat(seen.batches))).records[0]!.offset, 60);

    let released = false;
    const elsewhere = { at: 203, read: ahead.read.then((r) => ({ ...r, release: () => (released = true) })) };
    const again = await carriedRecords(reads, target, 60, UNLIMITED, elsewhere);
    await elsewhere.read;
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(released, 'a read begun from another copy is given back');
    assert.equal(requested.at(-1)!.fetchOffset, 202);
    assert.equal(again.progress, RELEASE - 60);
  });
});
