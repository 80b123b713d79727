import assert from 'node:assert/strict';
import { test } from 'node:test';
import { collections, FLAT_BYTES_PER_10_MIN, slope, trend, type Point } from '../../../bench/soak-trend.js';

const MiB = 2 ** 20;

/** A sample every 5 s over `seconds`, from f(at). */
function series(seconds: number, f: (at: number) => number): Point[] {
  const out: Point[] = [];
  for (let at = 0; at <= seconds; at += 5) out.push({ at, value: f(at) });
  return out;
}

/** A garbage-collected heap: climbs 40 MiB over each period, back to its floor at a full collection. */
const saw = (at: number, period: number) => ((at % period) / period) * 40 * MiB;

/** 20 minutes of warm-up, 30 judged. */
const SOAK = { from: 1200, to: 3000 };

test('slope is the least-squares fit, in units per second', () => {
  assert.equal(slope(series(600, (at) => 100 + 3 * at)), 3);
  assert.equal(slope([{ at: 0, value: 5 }]), 0);
  assert.equal(
    slope([
      { at: 1, value: 5 },
      { at: 1, value: 9 },
    ]),
    0,
  );
});

test('full collections are where the heap shrinks by a quarter or more', () => {
  const heap = series(1000, (at) => 20 * MiB + saw(at, 250));
  assert.deepEqual(collections(heap), [250, 500, 750, 1000]);
});

test("a steady figure is flat whatever the collector's saw makes of its slope", () => {
  // Ends high in a tooth: the raw slope rises, what is left after each collection does not.
  const heap = series(3000, (at) => 20 * MiB + saw(at, 600));
  const t = trend(
    series(3000, (at) => 200 * MiB + saw(at, 600)),
    SOAK,
    collections(heap),
  );
  assert.ok(t.slopePer10Min > FLAT_BYTES_PER_10_MIN, `raw slope ${t.slopePer10Min / MiB} MiB per 10 min`);
  assert.equal(t.floorSlopePer10Min, 0);
  assert.equal(t.flat, true);
  assert.ok(t.max - t.min > 39 * MiB);
});

test('a figure that keeps more after each collection is not flat', () => {
  // 3 MiB per 10 minutes kept on a 200 MiB figure: past both 2 MiB and 1% of the mean.
  const heap = series(3000, (at) => 20 * MiB + saw(at, 170));
  const t = trend(
    series(3000, (at) => 200 * MiB + (3 * MiB * at) / 600 + saw(at, 170)),
    SOAK,
    collections(heap),
  );
  assert.ok(Math.abs(t.floorSlopePer10Min - 3 * MiB) < 0.3 * MiB, `${t.floorSlopePer10Min / MiB} MiB per 10 min`);
  assert.equal(t.flat, false);
});

test('one low floor does not make a verdict: the slope weighs every floor sample', () => {
  // Steady floors, but the lowest of them early in the soak: 10 MiB under the rest.
  const heap = series(3000, (at) => 20 * MiB + saw(at, 120));
  const t = trend(
    series(3000, (at) => (at === 1320 ? 190 : 200) * MiB + saw(at, 120)),
    SOAK,
    collections(heap),
  );
  assert.ok(Math.abs(t.floorSlopePer10Min) < 1 * MiB, `${t.floorSlopePer10Min / MiB} MiB per 10 min`);
  assert.equal(t.flat, true);
});

test('without a full collection in each half there is no verdict', () => {
  // One collection, early in the judged stretch: garbage piles up for the rest of it.
  const heap = series(2400, (at) => (at < 1600 ? 20 * MiB + saw(at, 200) : 30 * MiB + (at - 1600) * 0.05 * MiB));
  const t = trend(heap, { from: 1200, to: 2400 }, collections(heap));
  assert.deepEqual(
    collections(heap).filter((at) => at >= 1200),
    [1200, 1400, 1600],
  );
  assert.equal(t.flat, undefined);
});

test('the warm-up is left out of the verdict but not out of the spread', () => {
  // Climbs through the warm-up (heaps growing to their working size), then stays.
  const t = trend(
    series(3000, (at) => (at < 1200 ? 100 * MiB + (at / 6) * MiB : 300 * MiB)),
    SOAK,
  );
  assert.equal(t.floorSlopePer10Min, 0);
  assert.equal(t.flat, true);
  assert.equal(t.min, 100 * MiB);
  assert.equal(t.max, 300 * MiB);
  assert.equal(t.samples, 361);
});

test('a large figure may grow by 1% of its mean per 10 minutes', () => {
  const big = 1024 * MiB;
  const growth = 0.009 * big; // more than 2 MiB, less than 1%
  assert.ok(growth > FLAT_BYTES_PER_10_MIN);
  assert.equal(
    trend(
      series(3000, (at) => big + (growth * at) / 600),
      SOAK,
    ).flat,
    true,
  );
});

test('a soak under ten minutes gets no verdict', () => {
  assert.equal(
    trend(
      series(1740, () => MiB),
      { from: 1200, to: 1740 },
    ).flat,
    undefined,
  );
  assert.equal(
    trend(
      series(1800, () => MiB),
      { from: 1200, to: 1800 },
    ).flat,
    true,
  );
});
