import assert from 'node:assert/strict';
import { test } from 'node:test';
import { amongPassRecords, nextReadable, planRead } from '../../../../src/compaction/fetch-view/read-plan.js';
import { FakeIndex } from './fake-log.js';

const index = new FakeIndex([3, 10, 11, 40], 50);

test('a fetch on a removed offset moves to the next survivor', () => {
  assert.deepEqual(planRead(index, 0, undefined), { fetchOffset: 3 });
  assert.deepEqual(planRead(index, 4, undefined), { fetchOffset: 10 });
  assert.deepEqual(planRead(index, 12, undefined), { fetchOffset: 40 });
});

test('a fetch on a survivor, or at or past the horizon, stays where it is', () => {
  assert.deepEqual(planRead(index, 10, undefined), { fetchOffset: 10 });
  assert.deepEqual(planRead(index, 50, undefined), { fetchOffset: 50 });
  assert.deepEqual(planRead(index, 77, undefined), { fetchOffset: 77 });
});

test('with nothing left before the horizon it reads the last removed offset, which answers at once', () => {
  assert.deepEqual(planRead(index, 41, undefined), { fetchOffset: 49 });
  assert.equal(nextReadable(index, 41, false), 50);
});

test('a fetch already answered with an empty batch reads on past it and remembers it', () => {
  assert.deepEqual(planRead(index, 41, 49), { fetchOffset: 50, emptyUpTo: 49 });
  assert.deepEqual(planRead(index, 4, 8), { fetchOffset: 10, emptyUpTo: 8 });
  assert.deepEqual(planRead(index, 20, 8), { fetchOffset: 40 }, 'an answer behind the fetch offset is stale');
});

test('an empty answer the index no longer backs is ignored', () => {
  assert.deepEqual(planRead(index, 4, 12), { fetchOffset: 10 }, 'survivor 10 lies inside the remembered range');
  const recreated = new FakeIndex([], 0);
  assert.deepEqual(planRead(recreated, 41, 49), { fetchOffset: 41 }, 'a new topic of the same name starts clean');
});

test('an index that moved (nextVisible behind the offset) never moves a fetch backwards', () => {
  const odd = {
    cleanedUpTo: () => 50,
    survivors: () => new Float64Array(),
    survivorCount: () => 0,
    nextVisible: () => 5,
    carried: () => undefined,
    end: () => undefined,
  };
  assert.equal(nextReadable(odd, 20, true), 20);
});

test('the last pass\u2019s own records are passed over when no client wrote among them, to its end marker when probing', () => {
  const carried = new FakeIndex([3, 10, 11, 40], 50);
  carried.carry = { copiesBelow: 50, topicStart: 0, copiesFrom: 60, copiesTo: 90, passOnly: true, marks: new Float64Array(0) };
  assert.equal(nextReadable(carried, 55, true), 55, 'the tail before the pass is read');
  assert.equal(nextReadable(carried, 60, true), 90);
  assert.equal(nextReadable(carried, 75, false), 91);
  assert.equal(nextReadable(carried, 90, false), 90, 'the end marker itself is read when asked for');
  assert.equal(nextReadable(carried, 91, true), 91);
  carried.carry = { ...carried.carry, passOnly: false };
  assert.equal(nextReadable(carried, 75, true), 75, 'a client wrote among the copies: everything there is read');
});

test('the pass\u2019s own records run from its start marker to its end marker, inclusive, where no client wrote', () => {
  const carried = new FakeIndex([3], 50);
  assert.equal(amongPassRecords(carried, 60), false, 'no pass known');
  carried.carry = { copiesBelow: 50, topicStart: 0, copiesFrom: 60, copiesTo: 90, passOnly: true, marks: new Float64Array(0) };
  assert.deepEqual(
    [59, 60, 75, 90, 91].map((o) => amongPassRecords(carried, o)),
    [false, true, true, true, false],
  );
  carried.carry = { ...carried.carry, passOnly: false };
  assert.equal(amongPassRecords(carried, 75), false);
});
