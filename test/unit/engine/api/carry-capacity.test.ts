import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { carryCapacity, liveBytes, MIN_PASS_BYTES, rateRefusal, rewritableBytes, topicCapacities } from '../../../../src/engine/api/carry-capacity.js';
import type { PartitionStore } from '../../../../src/engine/store/partition-store.js';
import type { Segment } from '../../../../src/engine/store/segment-roller.js';
import { Log } from '../carry/store-log.js';

const DAY = 86_400_000;

/** What liveBytes reads of a partition index: its checkpoint and segments. */
function store(cleanBytes: number, firstDirty: number, segments: [base: number, bytes: number][]): PartitionStore {
  const segs: Segment[] = segments.map(([base, bytes]) => ({ base, bytes, rollingTimestamp: 0, maxTimestamp: 0 }));
  return { checkpoint: { cleanBytes, firstDirty }, segments: segs } as unknown as PartitionStore;
}

describe('carry capacity', () => {
  it("a partition's live bytes: what its cleaned part keeps, and its dirty part whole", () => {
    assert.equal(
      liveBytes(
        store(5_000, 300, [
          [0, 9_000],
          [100, 9_000],
          [300, 2_000],
          [400, 700],
        ]),
      ),
      7_700,
    );
    assert.equal(liveBytes(store(0, 0, [])), 0);
    assert.equal(liveBytes(store(0, 0, [[0, 1_234]])), 1_234, 'never cleaned: all of it');
  });

  it('each partition needs its live bytes over what the rate rewrites in its carry age; the replica, their sum', () => {
    // 1 MiB/s for 3.5 days rewrites 302,400 MiB.
    const rate = 1 << 20;
    assert.equal(rewritableBytes(rate, 3.5 * DAY), 302_400 * (1 << 20));
    const c = carryCapacity(
      [
        { topic: 'orders', partition: 0, liveBytes: 151_200 * (1 << 20), carryAfterMs: 3.5 * DAY },
        { topic: 'orders', partition: 1, liveBytes: 75_600 * (1 << 20), carryAfterMs: 3.5 * DAY },
        // A shorter carry age asks more of the rate for the same bytes.
        { topic: 'prices', partition: 0, liveBytes: 15_120 * (1 << 20), carryAfterMs: 30_240_000 },
      ],
      rate,
    );
    assert.deepEqual(
      c.partitions.map((p) => p.ratio),
      [0.5, 0.25, 0.5],
    );
    assert.equal(c.ratio, 1.25, 'together they need more than the rate: some pass cannot come round in time');
    assert.equal(c.bytesPerSecond, rate);
  });

  it('by topic: its partitions summed, the topic taking most of the rate first', () => {
    const c = carryCapacity(
      [
        { topic: 'a', partition: 0, liveBytes: 100, carryAfterMs: 10_000 },
        { topic: 'b', partition: 0, liveBytes: 300, carryAfterMs: 10_000 },
        { topic: 'a', partition: 1, liveBytes: 100, carryAfterMs: 10_000 },
      ],
      100,
    );
    assert.deepEqual(topicCapacities(c), [
      { topic: 'b', partitions: 1, liveBytes: 300, carryAfterMs: 10_000, ratio: 0.3 },
      { topic: 'a', partitions: 2, liveBytes: 200, carryAfterMs: 10_000, ratio: 0.2 },
    ]);
    assert.deepEqual(topicCapacities(carryCapacity([], 100)), []);
  });

  it('the smallest pass a carrier really writes is no smaller than MIN_PASS_BYTES', async () => {
    const log = new Log();
    await log.writeRecords(1, 1);
    const before = log.batches.length;
    await log.carry(new Set([0]), 1);
    const pass = log.batches.slice(before);
    assert.equal(pass.length, 3, 'a start marker, one copy, an end marker');
    const written = pass.reduce((n, b) => n + b.length, 0);
    assert.ok(written >= MIN_PASS_BYTES, `${written} bytes`);
  });
});

describe('rateRefusal', () => {
  it('refuses only a rate at which not even the smallest pass fits in the carry age, with the numbers', () => {
    assert.equal(rateRefusal('t', 7 * DAY, 0.5, 1), null, 'one byte a second still rewrites 302 KB in 3.5 days');
    assert.equal(rateRefusal('t', 300_000, 0.5, 0), null, 'no bound');
    assert.equal(rateRefusal('t', -1, 0.5, 1), null, 'kept for ever');
    assert.equal(rateRefusal('t', 2 * MIN_PASS_BYTES * 1000, 0.5, 1), null, 'exactly the smallest pass');
    assert.equal(
      rateRefusal('orders', 300_000, 0.5, 1),
      'the store keeps the records of topic orders for retention.ms=300000 and kcompact carries them at 0.5 of that (150000 ms), ' +
        'within which carryBytesPerSecond=1 lets a pass write 150 bytes, less than the 183 bytes of the smallest pass ' +
        "(a start marker, one copy, an end marker): not one record of the topic could be kept; raise carryBytesPerSecond or the store's retention",
    );
    assert.match(rateRefusal('t', 2 * MIN_PASS_BYTES * 1000 - 2, 0.5, 1)!, /write 182 bytes/, 'a byte short');
  });
});
