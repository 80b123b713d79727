import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { beginCopies, begunFits, CopiesAhead, dropBegun } from '../../../../src/compaction/fetch-view/copies-ahead.js';
import { releaseHeld } from '../../../../src/compaction/fetch-view/visible-records.js';
import { carriedStore, indexOf, RELEASE } from './carried-store.js';
import { readBatches } from './fake-log.js';

const all = Array.from({ length: RELEASE }, (_, o) => o);
const BUDGET = { maxBytes: 4096, oneAnyway: true };
const settled = () => new Promise((resolve) => setImmediate(resolve));

describe('beginCopies', () => {
  test('reads at once, and fits only the same view, offset and budget', async () => {
    const { reads, requested, open } = await carriedStore();
    const view = indexOf(all);
    const begun = beginCopies(reads, { topic: 't', partition: 0, view, carried: view.carry! }, 60, BUDGET);
    assert.equal(requested.length, 1, 'the read starts before anyone awaits the answer');
    assert.ok(begunFits(begun, view, 60, { ...BUDGET }));
    assert.ok(!begunFits(begun, indexOf(all), 60, BUDGET), 'another snapshot of the index');
    assert.ok(!begunFits(begun, view, 61, BUDGET));
    assert.ok(!begunFits(begun, view, 60, { ...BUDGET, maxBytes: 4095 }));
    assert.ok(!begunFits(begun, view, 60, { ...BUDGET, oneAnyway: false }));
    const seen = await begun.records;
    assert.equal((await readBatches(Buffer.concat(seen.batches))).records[0]!.offset, 60);
    releaseHeld(seen.held);
    assert.equal(open(), 0);
  });

  test('an answer not used gives its reads back', async () => {
    const { reads, open } = await carriedStore();
    const view = indexOf(all);
    const begun = beginCopies(reads, { topic: 't', partition: 0, view, carried: view.carry! }, 60, BUDGET);
    dropBegun(begun);
    await begun.records;
    await settled();
    assert.equal(open(), 0);
  });
});

describe('CopiesAhead', () => {
  test('hands a begun answer to the fetch it was begun for, once', async () => {
    const { reads, open } = await carriedStore();
    const view = indexOf(all);
    const ahead = new CopiesAhead({ maxBytes: 1 << 20, waitMs: 60_000 });
    ahead.begin(reads, { topic: 't', partition: 0, view, carried: view.carry! }, 60, BUDGET);
    assert.equal(ahead.take('t', 0, 61, view, BUDGET), undefined, 'another offset');
    assert.equal(ahead.take('t', 1, 60, view, BUDGET), undefined, 'another partition');
    const begun = ahead.take('t', 0, 60, view, BUDGET);
    assert.ok(begun);
    assert.equal(ahead.take('t', 0, 60, view, BUDGET), undefined, 'taken out');
    assert.deepEqual({ begun: ahead.begun, used: ahead.used }, { begun: 1, used: 1 });
    releaseHeld((await begun.records).held);
    assert.equal(open(), 0);
  });

  test('gives back an answer begun under an index that has moved on, or for another budget', async () => {
    const { reads, open } = await carriedStore();
    const view = indexOf(all);
    const ahead = new CopiesAhead({ maxBytes: 1 << 20, waitMs: 60_000 });
    ahead.begin(reads, { topic: 't', partition: 0, view, carried: view.carry! }, 60, BUDGET);
    assert.equal(ahead.take('t', 0, 60, indexOf(all), BUDGET), undefined);
    ahead.begin(reads, { topic: 't', partition: 0, view, carried: view.carry! }, 60, BUDGET);
    assert.equal(ahead.take('t', 0, 60, view, { ...BUDGET, maxBytes: 1 << 20 }), undefined);
    assert.equal(ahead.used, 0);
    await settled();
    await settled();
    assert.equal(open(), 0);
  });

  test('lets an answer go when the next fetch does not come in time', async () => {
    const { reads, open } = await carriedStore();
    const view = indexOf(all);
    const ahead = new CopiesAhead({ maxBytes: 1 << 20, waitMs: 20 });
    ahead.begin(reads, { topic: 't', partition: 0, view, carried: view.carry! }, 60, BUDGET);
    const deadline = Date.now() + 10_000;
    while (open() > 0 || ahead.take('t', 0, 60, view, BUDGET) !== undefined) {
      assert.ok(Date.now() < deadline, 'the held answer was never given back');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert.equal(ahead.take('t', 0, 60, view, BUDGET), undefined);
  });

  test('holds no more than its bytes, and a new answer for the same fetch replaces the old', async () => {
    const { reads, requested, open } = await carriedStore();
    const view = indexOf(all);
    const target = { topic: 't', partition: 0, view, carried: view.carry! };
    const ahead = new CopiesAhead({ maxBytes: 2 * BUDGET.maxBytes, waitMs: 60_000 });
    ahead.begin(reads, target, 10, BUDGET);
    ahead.begin(reads, target, 10, BUDGET);
    ahead.begin(reads, target, 60, BUDGET);
    ahead.begin(reads, target, 100, BUDGET);
    assert.equal(ahead.begun, 3, 'the third offset is over the bytes held');
    assert.equal(requested.length, 3);
    assert.equal(ahead.take('t', 0, 100, view, BUDGET), undefined);
    ahead.clear();
    await settled();
    await settled();
    assert.equal(open(), 0);
  });
});
