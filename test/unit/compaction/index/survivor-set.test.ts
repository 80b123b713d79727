import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SurvivorSet, snapshotOf } from '../../../../src/compaction/index/survivor-set.js';
import { SurvivorIndex } from '../../../../src/compaction/index/survivor-index.js';

function naiveSurvivors(all: number[], upTo: number, from: number, to: number): number[] {
  return all.filter((o) => o >= from && o < to && o < upTo);
}

describe('SurvivorSet', () => {
  const offsets = [3, 4, 10, 11, 12, 40, 99];
  const set = new SurvivorSet(snapshotOf(100, Float64Array.from(offsets)));

  it('answers ranges like a filter over the survivors, clipped at cleanedUpTo', () => {
    for (let from = 0; from < 110; from += 3) {
      for (let to = from; to < 120; to += 7) {
        assert.deepEqual([...set.survivors(from, to)], naiveSurvivors(offsets, 100, from, to), `[${from}, ${to})`);
      }
    }
  });

  it('finds the next visible offset, everything from cleanedUpTo on being visible', () => {
    assert.equal(set.nextVisible(0), 3);
    assert.equal(set.nextVisible(4), 4);
    assert.equal(set.nextVisible(5), 10);
    assert.equal(set.nextVisible(41), 99);
    assert.equal(set.nextVisible(100), 100);
    assert.equal(set.nextVisible(150), 150);
    const tail = new SurvivorSet(snapshotOf(200, Float64Array.from(offsets)));
    assert.equal(tail.nextVisible(100), 200, 'nothing survives in [100, 200)');
  });

  it('holds offsets far apart in 64 bits', () => {
    const far = [5, 2 ** 40, 2 ** 40 + 7];
    const snap = snapshotOf(2 ** 41, Float64Array.from(far));
    assert.equal(snap.wide, true);
    const wide = new SurvivorSet(snap);
    assert.deepEqual([...wide.survivors(0, 2 ** 41)], far);
    assert.equal(wide.nextVisible(6), 2 ** 40);
    assert.equal(snapshotOf(100, Float64Array.from(offsets)).wide, false);
  });

  it('is empty before any clean', () => {
    const none = new SurvivorSet(snapshotOf(0, new Float64Array(0)));
    assert.equal(none.cleanedUpTo(), 0);
    assert.deepEqual([...none.survivors(0, 1000)], []);
    assert.equal(none.nextVisible(0), 0);
  });

  it('answers a 1000-offset range in well under a millisecond', () => {
    const many = new Float64Array(1_000_000);
    for (let i = 0; i < many.length; i++) many[i] = i * 10;
    const big = new SurvivorSet(snapshotOf(10_000_000, many));
    const rounds = 10_000;
    const started = performance.now();
    let n = 0;
    for (let i = 0; i < rounds; i++) n += big.survivors((i * 997) % 9_000_000, ((i * 997) % 9_000_000) + 1000).length;
    const perCall = (performance.now() - started) / rounds;
    assert.equal(n, rounds * 100);
    assert.ok(perCall < 0.1, `survivors() took ${perCall} ms per call`);
  });
});

describe('SurvivorIndex', () => {
  it('swaps whole snapshots in and forgets dropped partitions', () => {
    const index = new SurvivorIndex();
    assert.equal(index.partition('t', 0), undefined);
    index.apply('t', 0, snapshotOf(10, Float64Array.from([1, 5])));
    assert.deepEqual([...index.partition('t', 0)!.survivors(0, 10)], [1, 5]);
    index.apply('t', 0, snapshotOf(20, Float64Array.from([5, 15])));
    assert.equal(index.partition('t', 0)!.cleanedUpTo(), 20);
    index.apply('t', 0, null);
    assert.equal(index.partition('t', 0), undefined);
  });
});
