import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { appendToSegment, rollPolicy, type Segment } from '../../../../src/engine/store/segment-roller.js';
import { DEFAULT_POLICY } from '../../../support/default-policy.js';

const POLICY = DEFAULT_POLICY;

describe('virtual segments', () => {
  it('roll interval is min(segment.ms, max.compaction.lag.ms) for compacted topics', () => {
    assert.equal(rollPolicy({ ...POLICY, segmentMs: 1000, maxCompactionLagMs: 500 }).maxSegmentMs, 500);
    assert.equal(rollPolicy({ ...POLICY, segmentMs: 1000, maxCompactionLagMs: 5000 }).maxSegmentMs, 1000);
    assert.equal(rollPolicy({ ...POLICY, compact: false, segmentMs: 1000, maxCompactionLagMs: 500 }).maxSegmentMs, 1000);
  });

  it('rolls before a batch that would pass segment.bytes', () => {
    const roll = { segmentBytes: 100, maxSegmentMs: 1e12 };
    let seg: Segment | undefined;
    const bases: number[] = [];
    for (const [first, bytes] of [
      [0, 60],
      [1, 40],
      [2, 1],
      [3, 99],
      [4, 200],
      [5, 10],
    ] as const) {
      const next = appendToSegment(seg, first, first, bytes, 0, roll);
      if (next !== seg) bases.push(next.base);
      seg = next;
    }
    assert.deepEqual(bases, [0, 2, 4, 5]);
  });

  it('rolls when a batch is more than the interval past the first batch, and tracks timestamps', () => {
    const roll = { segmentBytes: 1e9, maxSegmentMs: 1000 };
    const a = appendToSegment(undefined, 0, 9, 10, 5000, roll);
    const b = appendToSegment(a, 10, 19, 10, 6000, roll);
    assert.equal(b, a, 'exactly the interval: no roll');
    const c = appendToSegment(b, 20, 29, 10, 4000, roll);
    assert.equal(c, a, 'an older timestamp does not roll');
    assert.deepEqual(c, { base: 0, rollingTimestamp: 5000, maxTimestamp: 6000, bytes: 30 });
    const d = appendToSegment(c, 30, 39, 10, 6001, roll);
    assert.deepEqual(d, { base: 30, rollingTimestamp: 6001, maxTimestamp: 6001, bytes: 10 });
  });

  it("kcompact's own batches join the open segment and never roll it, unless the store caps retention", () => {
    const roll = { segmentBytes: 1e9, maxSegmentMs: 1000 };
    const a = appendToSegment(undefined, 0, 9, 10, 5000, roll);
    // A pass long after the last client batch: in Kafka no client append, no roll.
    const pass = appendToSegment(a, 10, 13, 0, 60_000, roll);
    assert.equal(pass, a);
    assert.deepEqual(pass, { base: 0, rollingTimestamp: 5000, maxTimestamp: 5000, bytes: 10 }, 'the time of carrying is no client time');
    assert.notEqual(appendToSegment(pass, 14, 14, 10, 60_000, roll), a, "the next client batch rolls, as Kafka's append would");
    const capped = { ...roll, ownBatchesRoll: true };
    assert.notEqual(appendToSegment({ ...a }, 10, 13, 0, 60_000, capped).base, 0, 'a capped store: the pass rolls it, so an idle topic is carried');
    assert.equal(rollPolicy({ ...POLICY, carryAfterMs: -1 }).ownBatchesRoll, false);
    assert.equal(rollPolicy({ ...POLICY, carryAfterMs: 30_000 }).ownBatchesRoll, true);
  });

  it('a segment begun by own batches takes its rolling time from the first client batch', () => {
    const roll = { segmentBytes: 1e9, maxSegmentMs: 1000 };
    const own = appendToSegment(undefined, 100, 103, 0, 9_000, roll);
    const client = appendToSegment(own, 104, 104, 10, 5000, roll);
    assert.equal(client, own);
    assert.deepEqual(client, { base: 100, rollingTimestamp: 5000, maxTimestamp: 9_000, bytes: 10 });
  });

  it('never rolls on time when the first batch has no timestamp', () => {
    const roll = { segmentBytes: 1e9, maxSegmentMs: 10 };
    const a = appendToSegment(undefined, 0, 0, 10, -1, roll);
    assert.equal(appendToSegment(a, 1, 1, 10, 1e12, roll), a);
  });
});
