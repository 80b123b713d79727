import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pollUntil } from '../../support/index.js';
import { ReusedBuffers } from '../../../src/upstream/reused-buffers.js';

const MiB = 1 << 20;
const hour = 3_600_000;

test('a buffer given back is handed out again, for the same size or a smaller one', () => {
  const buffers = new ReusedBuffers({ keepBytes: 4 * MiB, idleMs: hour });
  const first = buffers.take(MiB);
  assert.equal(first.length, MiB);
  buffers.give(first.subarray(100, 200)); // any view of it gives the whole back
  assert.equal(buffers.keeping, MiB);
  const again = buffers.take(MiB / 2);
  assert.equal(again.length, MiB / 2);
  assert.equal(again.buffer, first.buffer);
  assert.equal(buffers.keeping, 0);
  const bigger = buffers.take(2 * MiB);
  assert.notEqual(bigger.buffer, first.buffer, 'a kept buffer too small for the size is not used');
});

test('the smallest kept buffer that holds the size is used', () => {
  const buffers = new ReusedBuffers({ keepBytes: 8 * MiB, idleMs: hour });
  const [a, b, c] = [3 * MiB, MiB, 2 * MiB].map((n) => buffers.take(n));
  for (const x of [a!, b!, c!]) buffers.give(x);
  assert.equal(buffers.take(MiB + 1).buffer, c!.buffer);
  assert.equal(buffers.take(100_000).buffer, b!.buffer);
});

test('only buffers it handed out are taken back, once each, up to the bytes it may keep', () => {
  const buffers = new ReusedBuffers({ keepBytes: 3 * MiB, idleMs: hour });
  buffers.give(Buffer.allocUnsafeSlow(MiB));
  assert.equal(buffers.keeping, 0, 'a buffer from elsewhere is not kept');
  const [a, b] = [2 * MiB, 2 * MiB].map((n) => buffers.take(n));
  buffers.give(a!);
  buffers.give(a!);
  assert.equal(buffers.keeping, 2 * MiB, 'given twice, kept once');
  buffers.give(b!);
  assert.equal(buffers.keeping, 2 * MiB, 'past the bytes it may keep, a buffer is let go');
});

test('small buffers are new each time and never kept', () => {
  const buffers = new ReusedBuffers({ keepBytes: 4 * MiB, idleMs: hour });
  const big = buffers.take(MiB);
  buffers.give(big);
  const small = buffers.take(1000);
  assert.notEqual(small.buffer, big.buffer, 'a small take does not tie up a kept buffer');
  buffers.give(small);
  assert.equal(buffers.keeping, MiB);
});

test('kept buffers are let go once unused for a while', async () => {
  const buffers = new ReusedBuffers({ keepBytes: 4 * MiB, idleMs: 20 });
  buffers.give(buffers.take(MiB));
  assert.equal(buffers.keeping, MiB);
  await pollUntil('kept buffers let go', 5_000, async () => (buffers.keeping === 0 ? true : undefined));
  // A buffer given back after the let-go is kept again, and let go again in turn.
  buffers.give(buffers.take(MiB));
  assert.equal(buffers.keeping, MiB);
  await pollUntil('let go again', 5_000, async () => (buffers.keeping === 0 ? true : undefined));
});
