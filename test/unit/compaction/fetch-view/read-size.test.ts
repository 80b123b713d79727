import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_READ_BYTES, rawBytesFor } from '../../../../src/compaction/fetch-view/read-size.js';
import { FakeIndex } from './fake-log.js';

// Batches of 100 offsets at 100 bytes an offset.
const walked = { bytes: 100_000, offsets: 1000, batches: 10 };
const twoBatches = 2 * 10_000;

test('reads up to the survivor that fills the room, wherever the survivors lie', () => {
  // Sparse at first, then every offset survives: 50 survivors of 100 bytes fill 5000 bytes.
  const survivors = [10, 500, ...Array.from({ length: 1000 }, (_, i) => 5000 + i)];
  const view = new FakeIndex(survivors, 100_000);
  const bytes = rawBytesFor(view, 10, 5000, walked);
  const last = survivors[49]!;
  assert.equal(bytes, (last - 10 + 1) * 100 + twoBatches);
});

test('past the horizon every offset counts', () => {
  const view = new FakeIndex([100, 200], 300);
  // 50 records wanted: the 2 survivors, then 48 offsets from the horizon on.
  assert.equal(rawBytesFor(view, 100, 5000, walked), (300 + 48 - 1 - 100 + 1) * 100 + twoBatches);
  assert.equal(rawBytesFor(view, 400, 5000, walked), 50 * 100 + twoBatches);
});

test('without a known cost, past the horizon, the room', () => {
  const view = new FakeIndex([1, 2, 3], 100);
  assert.equal(rawBytesFor(view, 100, 5000, { bytes: 0, offsets: 0, batches: 0 }), 5000);
});

test('without a known cost, or for a room far away, the most one read asks for', () => {
  const view = new FakeIndex([1, 2, 3], 1_000_000_000);
  assert.equal(rawBytesFor(view, 0, 5000, { bytes: 0, offsets: 0, batches: 0 }), MAX_READ_BYTES);
  assert.equal(rawBytesFor(view, 4, 5000, walked), MAX_READ_BYTES);
});

test('never less than the room, even past the most one read asks for', () => {
  const view = new FakeIndex([0, 1, 2, 3, 4], 1000);
  const room = MAX_READ_BYTES + 1000;
  assert.equal(rawBytesFor(view, 0, room, walked), room);
});
