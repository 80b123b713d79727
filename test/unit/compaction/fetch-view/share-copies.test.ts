/**
 * What a share group gets from carried copies in a ShareFetch answer (share-copies.ts): by the
 * release records, a group new to the partition gets the survivors below the end let go before it
 * came, at their original offsets, with the acquired ranges saying so; a group that read the
 * range where it was gets nothing from them, nor does any group before a release.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { entitledEnd, entitledRange, sharedCopies, type AcquiredRange } from '../../../../src/compaction/fetch-view/share-copies.js';
import type { PassReleaseSeen } from '../../../../src/engine/api/index-view.js';
import { Log } from '../../engine/carry/store-log.js';
import { FakeIndex, readBatches } from './fake-log.js';

const SURVIVORS = [5, 30, 31, 32, 34, 35, 36, 37, 38, 39];
const RELEASE_END = 40;

/** Forty records in batches of ten, then a pass carrying the survivors: start marker at 40, the copy at 41, end marker at 42. */
async function carried(releases: PassReleaseSeen[] | undefined, survivors = SURVIVORS) {
  const log = new Log();
  await log.writeRecords(40, 10);
  const pass = await log.carry(new Set(SURVIVORS), RELEASE_END);
  const index = new FakeIndex(survivors, RELEASE_END);
  index.carry = {
    copiesBelow: RELEASE_END,
    topicStart: 0,
    copiesFrom: pass,
    copiesTo: log.end - 1,
    passOnly: true,
    marks: Float64Array.from([5, pass + 1]),
    ...(releases && { releases }),
  };
  return { records: log.from(RELEASE_END), index, pass };
}

const all: AcquiredRange[] = [{ firstOffset: 40n, lastOffset: 42n, deliveryCount: 3 }];
const release = (releasedEnd: number, ...groups: string[]): PassReleaseSeen => ({ at: 43, pass: 40, releasedEnd, groups });
/** The store let the whole range go. */
const STORE_START = async () => RELEASE_END;
const ranges = (a: AcquiredRange[]) => a.map((r) => [Number(r.firstOffset), Number(r.lastOffset), r.deliveryCount]);

describe('entitledEnd', () => {
  const releases = [release(20, 'a'), release(32, 'a', 'b'), release(40, 'a', 'b', 'c'), { ...release(99, 'x'), pass: 7 }];
  test('a group the first release names gets nothing; one a later release names first, up to the end before it; one none names, up to the last', () => {
    assert.equal(entitledEnd(releases, 40, 'a'), undefined);
    assert.equal(entitledEnd(releases, 40, 'b'), 20);
    assert.equal(entitledEnd(releases, 40, 'c'), 32);
    assert.equal(entitledEnd(releases, 40, 'new'), 40);
  });
  test('a pass with no release gives nothing; releases of another pass do not count', () => {
    assert.equal(entitledEnd([], 40, 'new'), undefined);
    assert.equal(entitledEnd(releases, 8, 'new'), undefined);
    assert.equal(entitledEnd(releases, 7, 'x'), undefined);
    assert.equal(entitledEnd(releases, 7, 'a'), 99);
  });
});

describe('entitledRange', () => {
  // Pass 100 let everything below 50 go; pass 200 is recorded as letting everything below 150 go.
  const releases = [
    { at: 120, pass: 100, releasedEnd: 50, groups: ['a'] },
    { at: 220, pass: 200, releasedEnd: 150, groups: ['a'] },
  ];
  test('up to the store log start: the store may not have let the recorded range go (yet)', () => {
    assert.deepEqual(entitledRange(releases, 100, 'new', 50), { from: 0, to: 50 });
    assert.equal(entitledRange(releases, 200, 'new', 50), undefined, "pass 100's copies, still in the store and read first, give it all");
  });
  test("from where an earlier pass's copies still in the store stop", () => {
    assert.deepEqual(entitledRange(releases, 200, 'new', 80), { from: 50, to: 80 }, 'the store let part of the range go, not yet pass 100');
    assert.deepEqual(entitledRange(releases, 200, 'new', 150), { from: 0, to: 150 }, "the store let pass 100's copies go too");
    assert.equal(entitledRange(releases, 200, 'a', 150), undefined);
  });
});

describe('sharedCopies', () => {
  test('a group new to the partition gets every survivor of the copy at its original offset, with the copy’s delivery count', async () => {
    const { records, index } = await carried([release(RELEASE_END, 'old')]);
    const got = (await sharedCopies(records, all, 'new', index, true, STORE_START))!;
    assert.deepEqual(got.unpacked, [{ copy: 41, offsets: SURVIVORS }]);
    const seen = await readBatches(Buffer.concat(got.batches));
    assert.deepEqual(
      seen.records,
      SURVIVORS.map((o) => ({ offset: o, key: `k${o % 10}`, value: `v${o}` })),
    );
    assert.deepEqual(ranges(got.acquired), [
      [5, 5, 3],
      [30, 32, 3],
      [34, 39, 3],
      [40, 40, 3],
      [42, 42, 3],
    ]);
    assert.equal(got.unknownPass, false);
  });

  test('a group that read the range where it was, or any group before a release, gets nothing', async () => {
    const named = await carried([release(RELEASE_END, 'old')]);
    assert.equal(await sharedCopies(named.records, all, 'old', named.index, true, STORE_START), undefined);
    const before = await carried(undefined);
    const got = (await sharedCopies(before.records, all, 'new', before.index, true, STORE_START))!;
    assert.deepEqual(got.unpacked, []);
    assert.deepEqual(got.withheld, [], 'an index that has read the store knows nothing was let go');
    assert.equal(got.unknownPass, true, 'the caller learns the index may not have read the release yet');
  });

  test('a copy this replica cannot judge yet is withheld: out of the acquired ranges, so the broker delivers it again', async () => {
    const before = await carried(undefined);
    for (const view of [before.index, undefined]) {
      const got = (await sharedCopies(before.records, all, 'new', view, false, STORE_START))!;
      assert.deepEqual(got.withheld, [41]);
      assert.deepEqual(got.unpacked, []);
      assert.deepEqual(ranges(got.acquired), [
        [40, 40, 3],
        [42, 42, 3],
      ]);
    }
    const unindexed = (await sharedCopies(before.records, all, 'new', undefined, true, STORE_START))!;
    assert.deepEqual(unindexed.withheld, [41], 'nor can a replica whose index of the partition is not there');
  });

  test('a group that came between two releases gets what the first let go, a batch cut at its end', async () => {
    const { records, index } = await carried([release(32, 'a'), release(RELEASE_END, 'a', 'b')]);
    const got = (await sharedCopies(records, all, 'b', index, true, STORE_START))!;
    assert.deepEqual(got.unpacked, [{ copy: 41, offsets: [5, 30, 31] }]);
    assert.deepEqual(
      (await readBatches(Buffer.concat(got.batches))).records.map((r) => r.offset),
      [5, 30, 31],
    );
  });

  test('survivors the store still holds come from the store, not the copy', async () => {
    const { records, index } = await carried([release(RELEASE_END)]);
    const got = (await sharedCopies(records, all, 'new', index, true, async () => 32))!;
    assert.deepEqual(got.unpacked, [{ copy: 41, offsets: [5, 30, 31] }]);
    const failing = (await sharedCopies(records, all, 'new', index, true, () => Promise.reject(new Error('no leader'))))!;
    assert.deepEqual(failing.withheld, [41], 'a store that cannot say withholds the copy');
  });

  test('records the index removed since the pass are left out; a copy not acquired gives nothing', async () => {
    const { records, index } = await carried(
      [release(RELEASE_END)],
      SURVIVORS.filter((o) => o !== 35),
    );
    const got = (await sharedCopies(records, all, 'new', index, true, STORE_START))!;
    assert.deepEqual(got.unpacked[0]!.offsets, [5, 30, 31, 32, 34, 36, 37, 38, 39]);
    assert.equal(await sharedCopies(records, [{ firstOffset: 42n, lastOffset: 42n, deliveryCount: 1 }], 'new', index, true, STORE_START), undefined);
  });
});
