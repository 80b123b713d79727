import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { appendToSegment, rollPolicy, type Segment } from '../../../../src/compaction/index/segment-roller.js';
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

  it('never rolls on time when the first batch has no timestamp', () => {
    const roll = { segmentBytes: 1e9, maxSegmentMs: 10 };
    const a = appendToSegment(undefined, 0, 0, 10, -1, roll);
    assert.equal(appendToSegment(a, 1, 1, 10, 1e12, roll), a);
  });
});
