import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SurvivorSet, snapshotOf } from '../../../../src/engine/api/survivor-set.js';
import { SurvivorIndex } from '../../../../src/compaction/engine-client/survivor-index.js';
import { caughtUpOrHeld } from '../../../../src/compaction/engine-client/caught-up.js';
import type { Clock } from '../../../../src/common/clock.js';

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
    assert.equal(snap.encoding, 'f64');
    const wide = new SurvivorSet(snap);
    assert.deepEqual([...wide.survivors(0, 2 ** 41)], far);
    assert.equal(wide.nextVisible(6), 2 ** 40);
    assert.equal(snapshotOf(10_000, Float64Array.from([3, 1000, 5000])).encoding, 'u32', 'sparse: sorted offsets');
    assert.equal(snapshotOf(100, Float64Array.from(offsets)).encoding, 'bitmap', '7 of 97 offsets: 16 bytes of bitmap, not 28');
  });

  it('keeps dense survivors as a bitmap, a bit per offset instead of 4 bytes per key', () => {
    const dense = Float64Array.from({ length: 1_000_000 }, (_, i) => 7 + i);
    const snap = snapshotOf(2_000_000, dense);
    assert.equal(snap.encoding, 'bitmap');
    assert.ok(snap.data.byteLength <= 1_000_000 / 8 + 4, `${snap.data.byteLength} bytes`);
    const set = new SurvivorSet(snap);
    assert.equal(set.size, 1_000_000);
    assert.deepEqual(
      [...set.survivors(999_990, 1_000_020)],
      Array.from({ length: 17 }, (_, i) => 999_990 + i),
    );
    assert.equal(set.nextVisible(1_000_007), 2_000_000, 'nothing survives from the last one to cleanedUpTo');
  });

  it('is empty before any clean', () => {
    const none = new SurvivorSet(snapshotOf(0, new Float64Array(0)));
    assert.equal(none.cleanedUpTo(), 0);
    assert.deepEqual([...none.survivors(0, 1000)], []);
    assert.equal(none.nextVisible(0), 0);
  });

  it('answers like a filter over the survivors in either encoding (random sets, dense and sparse)', () => {
    let seed = 42;
    const rand = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    for (let round = 0; round < 60; round++) {
      // From nearly every offset surviving to one in a hundred, with empty stretches of blocks.
      const keep = [0.97, 0.5, 0.1, 0.01][round % 4]!;
      const start = Math.floor(rand() * 5000);
      const all: number[] = [];
      for (let o = start; o < start + 20_000; o++) {
        const inGap = Math.floor(o / 3000) % 3 === 1;
        if (!inGap && rand() < keep) all.push(o);
      }
      const upTo = start + 20_000 + Math.floor(rand() * 100);
      const snap = snapshotOf(upTo, Float64Array.from(all));
      const set = new SurvivorSet(snap);
      for (let q = 0; q < 200; q++) {
        const from = Math.floor(rand() * (upTo + 200)) - 100;
        const to = from + Math.floor(rand() * 5000);
        assert.deepEqual([...set.survivors(from, to)], naiveSurvivors(all, upTo, from, to), `${snap.encoding} [${from}, ${to})`);
        const next = all.find((o) => o >= from);
        assert.equal(set.nextVisible(from), from >= upTo ? from : (next ?? upTo), `${snap.encoding} nextVisible(${from})`);
      }
    }
  });
});

describe('SurvivorIndex', () => {
  it('swaps whole snapshots in and forgets dropped partitions', () => {
    const index = new SurvivorIndex(async () => true);
    assert.equal(index.partition('t', 0), undefined);
    index.apply('t', 0, snapshotOf(10, Float64Array.from([1, 5])));
    assert.deepEqual([...index.partition('t', 0)!.survivors(0, 10)], [1, 5]);
    index.apply('t', 0, snapshotOf(20, Float64Array.from([5, 15])));
    assert.equal(index.partition('t', 0)!.cleanedUpTo(), 20);
    index.apply('t', 0, null);
    assert.equal(index.partition('t', 0), undefined);
  });

  it('wakes those waiting on a partition at its next snapshot or log end, and forgets those who stopped', async () => {
    const index = new SurvivorIndex(async () => true);
    const woken: string[] = [];
    const wait = (name: string, topic: string, partition: number, signal = new AbortController().signal) =>
      void index.changed(topic, partition, signal).then(() => woken.push(name));
    const stopped = new AbortController();
    wait('a', 't', 0);
    wait('b', 't', 1);
    wait('gone', 't', 0, stopped.signal);
    stopped.abort();
    index.apply('t', 0, snapshotOf(10, Float64Array.from([1])));
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(woken, ['a']);
    index.applyEnd('t', 1, { indexedTo: 5, visibleEnd: 5 });
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(woken, ['a', 'b']);
    // A waiter is woken once: the next snapshot finds nobody waiting.
    index.apply('t', 0, null);
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(woken, ['a', 'b']);
  });

  it('answers a wait for a pass found as soon as the snapshot shows it, not at the next poll', async () => {
    const index = new SurvivorIndex(() => new Promise<boolean>(() => undefined));
    // A clock whose sleeps end only when cut short: only the snapshot can wake the wait.
    const clock: Clock = { now: () => 0, sleep: (_ms, signal) => new Promise((resolve) => signal?.addEventListener('abort', () => resolve())) };
    let shown = false;
    const waited = caughtUpOrHeld(index, 't', 0, 10_000, () => shown, clock);
    await new Promise((resolve) => setImmediate(resolve));
    shown = true;
    index.apply('t', 0, snapshotOf(10, Float64Array.from([1])));
    const notWoken = new Promise((resolve) => setTimeout(() => resolve('not woken'), 2_000).unref());
    assert.equal(await Promise.race([waited, notWoken]), 'held');
  });
});
