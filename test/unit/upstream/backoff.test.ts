import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backoffMs, sleep } from '../../../src/upstream/backoff.js';

const RULE = { baseMs: 100, maxMs: 1_000 };

test('the wait doubles with each failure in a row, from the base, up to the cap', () => {
  const ceiling = (failures: number) => backoffMs(failures, RULE, () => 1);
  assert.deepEqual([1, 2, 3, 4, 5, 6, 50].map(ceiling), [100, 200, 400, 800, 1_000, 1_000, 1_000]);
});

test('jitter draws the upper half: a wait is never under half its ceiling', () => {
  assert.equal(
    backoffMs(1, RULE, () => 0),
    50,
  );
  assert.equal(
    backoffMs(3, RULE, () => 0),
    200,
  );
  assert.equal(
    backoffMs(3, RULE, () => 0.5),
    300,
  );
  for (let i = 0; i < 1_000; i++) {
    const wait = backoffMs(4, RULE);
    assert.ok(wait >= 400 && wait <= 800, `${wait}`);
  }
});

test('no failure, no wait; very many failures stay finite and capped', () => {
  assert.equal(backoffMs(0, RULE), 0);
  assert.equal(backoffMs(-1, RULE), 0);
  assert.equal(
    backoffMs(10_000, RULE, () => 1),
    1_000,
  );
  assert.equal(
    backoffMs(10_000, { baseMs: 1, maxMs: Number.MAX_SAFE_INTEGER }, () => 1),
    2 ** 20,
  );
});

test('sleep ends early when its signal aborts, and at once when already aborted', async () => {
  const aborted = new AbortController();
  aborted.abort();
  let started = Date.now();
  await sleep(10_000, aborted.signal);
  assert.ok(Date.now() - started < 100);
  const later = new AbortController();
  started = Date.now();
  setTimeout(() => later.abort(), 20);
  await sleep(10_000, later.signal);
  assert.ok(Date.now() - started < 1_000);
});
