import { test } from 'node:test';
import assert from 'node:assert/strict';
import { backoffMs } from '../../../src/upstream/backoff.js';

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

test('over many draws the wait spans the upper half of its ceiling, in the order of the draws, and never passes the cap', () => {
  const DRAWS = 1_000;
  // Evenly spread draws from [0, 1): what any random source gives over many calls.
  const draws = Array.from({ length: DRAWS }, (_, i) => i / DRAWS);
  for (let failures = 1; failures <= 8; failures++) {
    const ceiling = Math.min(RULE.maxMs, RULE.baseMs * 2 ** (failures - 1));
    const waits = draws.map((r) => backoffMs(failures, RULE, () => r));
    assert.equal(waits[0], ceiling / 2, `${failures} failures: the smallest draw waits half the ceiling`);
    assert.equal(Math.max(...waits), Math.round(ceiling / 2 + ((ceiling / 2) * (DRAWS - 1)) / DRAWS), `${failures} failures: the largest draw`);
    assert.ok(
      waits.every((w, i) => Number.isInteger(w) && w >= ceiling / 2 && w <= ceiling && (i === 0 || w >= waits[i - 1]!)),
      `${failures} failures: whole milliseconds in [${ceiling / 2}, ${ceiling}], growing with the draw`,
    );
    // Jitter spreads the waits: the draws fill the half they may take, not one value.
    assert.ok(new Set(waits).size >= Math.min(DRAWS, ceiling / 2), `${failures} failures: ${new Set(waits).size} distinct waits`);
  }
  assert.equal(
    backoffMs(5, RULE, () => 1),
    RULE.maxMs,
    'the first ceiling past the cap is the cap',
  );
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
