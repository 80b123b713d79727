import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { carriedRecords } from '../../../../src/compaction/fetch-view/carried-records.js';
import { releaseHeld } from '../../../../src/compaction/fetch-view/visible-records.js';
import { iterateBatches } from '../../../../src/protocol/records/batch.js';
import { BATCHES, carriedStore, indexOf, original, RELEASE } from './carried-store.js';
import { readBatches } from './fake-log.js';

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

  test('reads ask for about the room left, and the answer holds the reads its batches lie in until it gives them back', async () => {
    const { reads, requested, open } = await carriedStore();
    const view = indexOf(all);
    const seen = await carriedRecords(reads, { topic: 't', partition: 0, view, carried: view.carry! }, 60, { maxBytes: 1000, oneAnyway: true });
    assert.ok(
      requested.every((r) => Number.isInteger(r.maxBytes) && r.maxBytes >= 1000),
      `whole read sizes: ${requested.map((r) => r.maxBytes)}`,
    );
    assert.equal(requested[0]!.fetchOffset, 202, 'from the mark at or before the offset');
    assert.equal(open(), seen.held?.length, 'every read is given back or held by the answer');
    assert.ok(open() > 0);
    // The fake store zeroes a read's memory on release: the batches are the reads' own bytes.
    const served = Buffer.concat(seen.batches);
    releaseHeld(seen.held);
    assert.equal(open(), 0);
    for (const b of iterateBatches(served).batches) assert.ok(b.baseOffset >= 60n);
  });

  test('reads none of whose bytes went into the answer are given back at once', async () => {
    const { reads, open } = await carriedStore();
    const view = indexOf(all.filter((o) => o < 5));
    const seen = await carriedRecords(reads, { topic: 't', partition: 0, view, carried: view.carry! }, 60, UNLIMITED);
    assert.deepEqual(seen.batches, []);
    assert.equal(seen.end, RELEASE - 1);
    assert.equal(open(), 0);
  });
});
