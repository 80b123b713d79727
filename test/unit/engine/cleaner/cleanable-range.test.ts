import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cleanableRange, needsCleaning } from '../../../../src/engine/cleaner/cleanable-range.js';
import { retentionStart } from '../../../../src/engine/cleaner/retention.js';
import { cleanEnd, MAX_DIRTY_OFFSETS_PER_PASS } from '../../../../src/engine/cleaner/cleaner.js';
import type { Segment } from '../../../../src/engine/store/segment-roller.js';
import { DEFAULT_POLICY } from '../../../support/default-policy.js';

const POLICY = DEFAULT_POLICY;

/** Segments of 100 offsets each; timestamps t[i] are each segment's first and largest. */
function segments(...times: number[]): Segment[] {
  return times.map((t, i) => ({ base: i * 100, rollingTimestamp: t, maxTimestamp: t + 50, bytes: 1000 }));
}

const extent = (firstDirty: number, nextOffset: number, cleanBytes = 0, logStartOffset = 0) => ({ firstDirty, logStartOffset, nextOffset, cleanBytes });

describe('cleanableRange', () => {
  it('never reaches into the active (last) segment', () => {
    const r = cleanableRange(segments(1, 2, 3), extent(0, 250), POLICY, 1e6);
    assert.equal(r.firstUncleanable, 200);
    assert.equal(r.cleanableBytes, 2000);
    assert.equal(r.dirtyRatio, 1);
    assert.equal(cleanableRange(segments(1), extent(0, 50), POLICY, 1e6).firstUncleanable, 0);
  });

  it('on a store that caps retention, cleans an active segment older than half the carry age, and only then', () => {
    const capped = { ...POLICY, storeRetentionMs: 8000, carryAfterMs: 4000 };
    const segs = segments(0, 1000, 5000);
    assert.equal(cleanableRange(segs, extent(0, 250), capped, 7000).firstUncleanable, 200, 'the active segment is 2000 ms old: not yet');
    const aged = cleanableRange(segs, extent(0, 250), capped, 7001);
    assert.equal(aged.firstUncleanable, 250, 'past half the carry age: up to the index end');
    assert.equal(aged.cleanableBytes, 3000);
    assert.equal(cleanableRange(segs, extent(0, 250), POLICY, 1e9).firstUncleanable, 200, 'a store that keeps everything never cleans the active segment');
    assert.equal(cleanableRange(segs, extent(250, 250), capped, 1e9).firstUncleanable, 250, 'nothing past the index end');
    const lagged = { ...capped, minCompactionLagMs: 3000 };
    assert.equal(cleanableRange(segs, extent(0, 250), lagged, 7001).firstUncleanable, 200, 'min.compaction.lag.ms still holds the active segment');
  });

  it('on a store that caps retention, half the carry age bounds max.compaction.lag.ms', () => {
    const capped = { ...POLICY, storeRetentionMs: 8000, carryAfterMs: 4000, minCleanableDirtyRatio: 0.99 };
    const segs = segments(1, 100_000, 100_001);
    const r = cleanableRange(segs, extent(0, 250), capped, 2002);
    assert.equal(r.compactionDelayMs, 1, 'the first segment is 1 ms past 2000 ms');
    assert.ok(needsCleaning(r, capped));
    assert.equal(cleanableRange(segs, extent(0, 250), { ...capped, carryAfterMs: -1, storeRetentionMs: -1 }, 2002).compactionDelayMs, 0);
  });

  it('stops at the first dirty segment younger than min.compaction.lag.ms (by its largest timestamp)', () => {
    const policy = { ...POLICY, minCompactionLagMs: 1000 };
    const segs = segments(0, 5000, 9000, 9500);
    assert.equal(cleanableRange(segs, extent(0, 450), policy, 6049).firstUncleanable, 100);
    assert.equal(cleanableRange(segs, extent(0, 450), policy, 6050).firstUncleanable, 200, 'largest 5050 is exactly the lag old');
    assert.equal(cleanableRange(segs, extent(100, 450), policy, 6049).firstUncleanable, 100, 'nothing cleanable');
    assert.equal(cleanableRange(segs, extent(100, 450), policy, 6049).cleanableBytes, 0);
  });

  it('measures the dirty ratio by bytes against what the cleaned part kept', () => {
    const r = cleanableRange(segments(1, 2, 3, 4), extent(200, 350, 3000), POLICY, 1e6);
    assert.equal(r.firstDirty, 200);
    assert.equal(r.firstUncleanable, 300);
    assert.equal(r.cleanableBytes, 1000);
    assert.equal(r.dirtyRatio, 0.25);
    assert.equal(needsCleaning(r, POLICY), false);
    assert.equal(needsCleaning(r, { ...POLICY, minCleanableDirtyRatio: 0.2 }), true);
  });

  it('asks for a clean once the oldest dirty segment is past max.compaction.lag.ms', () => {
    const policy = { ...POLICY, maxCompactionLagMs: 10_000 };
    const segs = segments(1000, 2000, 3000);
    const early = cleanableRange(segs, extent(200, 250, 1e9), policy, 11_000);
    assert.equal(early.compactionDelayMs, 0, 'only the active segment is dirty');
    const dirty = cleanableRange(segs, extent(100, 250, 1e9), policy, 12_500);
    assert.equal(dirty.compactionDelayMs, 500);
    assert.ok(dirty.dirtyRatio < 0.001);
    assert.equal(needsCleaning(dirty, policy), true);
  });

  it('starts from the log start when the checkpoint is below it or past the end', () => {
    assert.equal(cleanableRange(segments(1, 2, 3), extent(50, 250, 0, 120), POLICY, 1e6).firstDirty, 120);
    assert.equal(cleanableRange(segments(1, 2, 3), extent(900, 250, 0, 30), POLICY, 1e6).firstDirty, 30);
  });

  it('finds nothing to do in an empty log', () => {
    const r = cleanableRange([], extent(0, 0), POLICY, 1e6);
    assert.equal(needsCleaning(r, { ...POLICY, minCleanableDirtyRatio: 0 }), false);
  });
});

describe('retentionStart', () => {
  const segs: Segment[] = [
    { base: 0, rollingTimestamp: 100, maxTimestamp: 1000, bytes: 400 },
    { base: 100, rollingTimestamp: 1100, maxTimestamp: 2000, bytes: 400 },
    { base: 200, rollingTimestamp: 2100, maxTimestamp: 3000, bytes: 400 },
  ];
  const input = (now: number, highWatermark = 300) => ({ segments: segs, sizeOf: () => 400, totalBytes: 1200, endOffset: 300, highWatermark, now });

  it('deletes whole segments older than retention.ms, oldest first', () => {
    const policy = { ...POLICY, delete: true, retentionMs: 5000 };
    assert.equal(retentionStart(input(6000), policy), undefined);
    assert.equal(retentionStart(input(6001), policy), 100);
    assert.equal(retentionStart(input(7001), policy), 200);
    assert.equal(retentionStart(input(8001), policy), 300, 'the active segment too once every record is old');
    assert.equal(retentionStart(input(8001, 250), policy), 200, 'never past the high watermark');
  });

  it('deletes the oldest segments while the log exceeds retention.bytes by a whole segment', () => {
    const policy = { ...POLICY, delete: true, retentionBytes: 400 };
    assert.equal(retentionStart(input(0), policy), 200);
    assert.equal(retentionStart(input(0), { ...policy, retentionBytes: 1200 }), undefined);
    assert.equal(retentionStart(input(0), { ...policy, retentionBytes: 799 }), 100);
  });

  it('never deletes an empty last segment', () => {
    const empty: Segment[] = [{ base: 0, rollingTimestamp: 1, maxTimestamp: 1, bytes: 0 }];
    const r = retentionStart({ segments: empty, sizeOf: () => 0, totalBytes: 0, endOffset: 0, highWatermark: 0, now: 1e9 }, { ...POLICY, retentionMs: 1 });
    assert.equal(r, undefined);
  });
});

describe('cleanEnd', () => {
  const M = MAX_DIRTY_OFFSETS_PER_PASS;
  const at = (...bases: number[]): Segment[] => bases.map((base) => ({ base, rollingTimestamp: 1, maxTimestamp: 1, bytes: 1 }));
  const range = (firstDirty: number, firstUncleanable: number) => ({
    firstDirty,
    firstUncleanable,
    cleanBytes: 0,
    cleanableBytes: 1,
    dirtyRatio: 1,
    compactionDelayMs: 0,
  });

  it('takes the whole cleanable range when it is within one pass', () => {
    assert.equal(cleanEnd(at(0, 10, M), range(0, M)), M);
    assert.equal(cleanEnd(at(0), range(5, 5)), 5);
  });

  it('stops a long range at the last segment boundary within the pass', () => {
    assert.equal(cleanEnd(at(0, M / 2, M - 1, M + 5, 3 * M), range(0, 3 * M)), M - 1);
    assert.equal(cleanEnd(at(0, M / 2, M - 1, M + 5, 3 * M), range(M - 1, 3 * M)), M + 5);
  });

  it('still moves on when one segment is longer than a pass', () => {
    assert.equal(cleanEnd(at(0, 5 * M, 9 * M), range(0, 9 * M)), 5 * M);
  });
});
