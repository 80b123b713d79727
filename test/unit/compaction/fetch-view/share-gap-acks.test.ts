/**
 * Gaps owed to share group members (share-gap-acks.ts): kept per connection and member, sent
 * once, only while the acquisition surely holds, one offset once, clear of the member's own
 * acknowledgements, and dropped with the partition or the session.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GapAcks, type AckTopic } from '../../../../src/compaction/fetch-view/share-gap-acks.js';

const T = 'AAAAAAAAAAAAAAAAAAAAAQ';
const range = (first: number, last: number) => ({ firstOffset: BigInt(first), lastOffset: BigInt(last) });
const shown = (topics: AckTopic[]) =>
  topics.map((t) => [
    t.topicId,
    t.partitions.map((p) => [p.partitionIndex, p.acknowledgementBatches.map((b) => [Number(b.firstOffset), Number(b.lastOffset), ...b.acknowledgeTypes])]),
  ]);

test('owed gaps go once, to the member on the connection they were owed on, for as long as half the lock', () => {
  let now = 1_000;
  const gaps = new GapAcks(() => now);
  const conn = {};
  gaps.owe(conn, 'g', 'm', T, 0, [range(10, 12)], 30_000);
  assert.deepEqual(gaps.take({}, 'g', 'm'), [], 'another connection');
  assert.deepEqual(gaps.take(conn, 'g', 'other'), [], 'another member');
  assert.equal(gaps.owesOn(conn), true);
  const taken = gaps.take(conn, 'g', 'm');
  assert.deepEqual(
    taken.map((o) => [o.topicId, o.partition, o.batches.map((b) => [Number(b.firstOffset), Number(b.lastOffset), ...b.acknowledgeTypes])]),
    [[T, 0, [[10, 12, 0]]]],
  );
  assert.deepEqual(gaps.take(conn, 'g', 'm'), []);
  assert.equal(gaps.owesOn(conn), false);

  gaps.owe(conn, 'g', 'm', T, 0, [range(13, 13)], 30_000);
  now += 15_001;
  assert.deepEqual(gaps.take(conn, 'g', 'm'), [], 'the lock may have run out: the broker delivers them again');
});

test('an offset owed twice goes once; the partition leaving the session or the session closing drops them', () => {
  const gaps = new GapAcks(() => 0);
  const conn = {};
  gaps.owe(conn, 'g', 'm', T, 0, [range(10, 12)], 30_000);
  gaps.owe(conn, 'g', 'm', T, 0, [range(11, 14), range(20, 20)], 30_000);
  gaps.owe(conn, 'g', 'm', T, 1, [range(5, 5)], 30_000);
  const topics: AckTopic[] = [];
  const sent = gaps.addTo(topics, gaps.take(conn, 'g', 'm'));
  assert.deepEqual(shown(topics), [
    [
      T,
      [
        [
          0,
          [
            [10, 14, 0],
            [20, 20, 0],
          ],
        ],
        [1, [[5, 5, 0]]],
      ],
    ],
  ]);
  assert.deepEqual(
    sent.map((s) => [s.partition, s.own]),
    [
      [0, false],
      [1, false],
    ],
  );
  assert.equal(gaps.stats.gapsAcknowledged, 7);

  gaps.owe(conn, 'g', 'm', T, 0, [range(30, 31)], 30_000);
  gaps.owe(conn, 'g', 'm', T, 1, [range(32, 32)], 30_000);
  gaps.forget(conn, 'g', 'm', T, 0);
  assert.deepEqual(
    gaps.take(conn, 'g', 'm').map((o) => o.partition),
    [1],
  );
  gaps.owe(conn, 'g', 'm', T, 0, [range(33, 33)], 30_000);
  gaps.closed(conn, 'g', 'm');
  assert.deepEqual(gaps.take(conn, 'g', 'm'), []);
});

test("they go around the member's own acknowledgements, in ascending order", () => {
  const gaps = new GapAcks(() => 0);
  const conn = {};
  gaps.owe(conn, 'g', 'm', T, 0, [range(10, 20)], 30_000);
  const topics: AckTopic[] = [
    {
      topicId: T,
      partitions: [
        {
          partitionIndex: 0,
          acknowledgementBatches: [
            { firstOffset: 2n, lastOffset: 4n, acknowledgeTypes: [1] },
            { firstOffset: 12n, lastOffset: 13n, acknowledgeTypes: [0] },
            { firstOffset: 20n, lastOffset: 25n, acknowledgeTypes: [1] },
          ],
        },
      ],
    },
  ];
  const sent = gaps.addTo(topics, gaps.take(conn, 'g', 'm'));
  assert.deepEqual(shown(topics), [
    [
      T,
      [
        [
          0,
          [
            [2, 4, 1],
            [10, 11, 0],
            [12, 13, 0],
            [14, 19, 0],
            [20, 25, 1],
          ],
        ],
      ],
    ],
  ]);
  assert.deepEqual(
    sent.map((s) => s.own),
    [true],
  );
});
