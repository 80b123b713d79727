/**
 * A member's acknowledgements of records it got from carried copies become one acknowledgement
 * of each copy once every record of it is acknowledged (copy-acks.ts); everything else passes.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { AckType, CopyAcks, type AckBatch } from '../../../../src/compaction/fetch-view/copy-acks.js';

const { Gap, Accept, Release, Reject, Renew } = AckType;
const batch = (first: number, last: number, ...types: number[]): AckBatch => ({
  firstOffset: BigInt(first),
  lastOffset: BigInt(last),
  acknowledgeTypes: types,
});
const plain = (batches: AckBatch[]) => batches.map((b) => [Number(b.firstOffset), Number(b.lastOffset), ...b.acknowledgeTypes]);

/** A member that got offsets 3, 4, 7 from the copy at 100 and 8, 9 from the copy at 101. */
function ledger(now = () => 0): CopyAcks {
  const acks = new CopyAcks(now);
  acks.delivered('g', 'm', 'T', 0, 100, [3, 4, 7]);
  acks.delivered('g', 'm', 'T', 0, 101, [8, 9]);
  return acks;
}
const translate = (acks: CopyAcks, ...batches: AckBatch[]) => plain(acks.translate('g', 'm', 'T', 0, batches));

describe('CopyAcks', () => {
  test('a copy is accepted once every record of it is, and the broker’s own offsets pass as they came', () => {
    const acks = ledger();
    assert.deepEqual(translate(acks, batch(3, 4, Accept), batch(110, 112, Gap)), [[110, 112, Gap]], 'the copy waits for its last record');
    assert.deepEqual(translate(acks, batch(7, 9, Accept), batch(113, 114, Accept, Gap)), [
      [100, 100, Accept],
      [101, 101, Accept],
      [113, 114, Accept, Gap],
    ]);
    assert.equal(acks.size, 0, 'nothing is kept once every copy is acknowledged');
    assert.equal(acks.stats.copiesAcknowledged, 2);
  });

  test('a release of any record releases the copy; a reject with no release rejects it', () => {
    const acks = ledger();
    assert.deepEqual(translate(acks, batch(3, 9, Accept, Release, Accept, Accept, Accept, Reject, Accept)), [
      [5, 6, Accept],
      [100, 100, Release],
      [101, 101, Reject],
    ]);
  });

  test('offsets between the copied records, and a batch spanning both kinds, come apart into runs of their own types', () => {
    const acks = ledger();
    assert.deepEqual(translate(acks, batch(4, 7, Accept, Gap, Reject, Accept)), [[5, 6, Gap, Reject]]);
    assert.deepEqual(translate(acks, batch(3, 3, Accept)), [[100, 100, Accept]]);
  });

  test('a renewal goes on at once, once per copy, and settles nothing', () => {
    const acks = ledger();
    assert.deepEqual(translate(acks, batch(3, 4, Renew)), [[100, 100, Renew]]);
    assert.deepEqual(translate(acks, batch(3, 4, Accept), batch(7, 7, Accept)), [[100, 100, Accept]]);
  });

  test('a record acknowledged twice before its copy is settled counts once; other members, partitions and closed sessions are apart', () => {
    const acks = ledger();
    assert.deepEqual(translate(acks, batch(3, 3, Accept), batch(3, 3, Accept)), []);
    assert.deepEqual(plain(acks.translate('g', 'other', 'T', 0, [batch(4, 4, Accept)])), [[4, 4, Accept]]);
    assert.deepEqual(plain(acks.translate('g', 'm', 'T', 1, [batch(4, 4, Accept)])), [[4, 4, Accept]]);
    assert.equal(acks.holds('g', 'm', 'T', 0), true);
    acks.closed('g', 'm');
    assert.equal(acks.holds('g', 'm', 'T', 0), false);
  });

  test('a member that stopped acknowledging is forgotten after any acquisition lock has run out', () => {
    let now = 0;
    const acks = ledger(() => now);
    now = 3 * 60 * 60 * 1000;
    acks.delivered('g', 'n', 'T', 0, 200, [50]);
    assert.equal(acks.holds('g', 'm', 'T', 0), false);
    assert.equal(acks.holds('g', 'n', 'T', 0), true);
  });
});
