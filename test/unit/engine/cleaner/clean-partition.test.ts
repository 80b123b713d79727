import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { cleanPartition } from '../../../../src/engine/cleaner/clean-partition.js';
import { PartitionStore } from '../../../../src/engine/store/partition-store.js';
import { FakeLog } from './fake-log.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-clean-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
let n = 0;
const ROLL = { segmentBytes: 1e9, maxSegmentMs: 1e12 };

function open(): PartitionStore {
  return PartitionStore.open(path.join(dir, `p${n++}.sqlite`), { topic: 't', partition: 0 }).store;
}

function offsets(store: PartitionStore): number[] {
  const held: number[] = [];
  store.eachOffsetBelow(Infinity, (offset) => held.push(offset));
  return held;
}

function horizon(store: PartitionStore, offset: number): number | null | undefined {
  return store.rowsIn(offset, offset + 1)[0]?.horizon;
}

describe('cleanPartition', () => {
  it('keeps the latest record of each key below the end, drops keyless ones, leaves the rest alone', async () => {
    const log = new FakeLog();
    const store = open();
    await log.append(
      [
        { key: 'a', value: '1' },
        { key: 'b', value: '1' },
        { key: null, value: 'x' },
        { key: 'a', value: '2' },
        { key: 'c', value: '1' },
      ],
      0,
    );
    await log.append(
      [
        { key: null, value: 'beyond' },
        { key: 'a', value: 'beyond' },
      ],
      0,
    );
    await log.feed(store, ROLL);
    const first = cleanPartition(store, 0, 5, 1000, 100);
    assert.deepEqual(offsets(store), [1, 3, 4, 5, 6]);
    assert.equal(first.removed, 2);
    assert.equal(store.checkpoint.firstDirty, 5);

    await log.append(
      [
        { key: 'b', value: '2' },
        { key: 'c', value: '2' },
      ],
      0,
    );
    await log.feed(store, ROLL);
    cleanPartition(store, 5, 9, 1000, 100);
    assert.deepEqual(offsets(store), [6, 7, 8], 'a@3 superseded by a@6, b@1 by b@7, c@4 by c@8, keyless @5 gone');
    assert.equal(store.keptKeys().length, 3);
    assert.equal(store.checkpoint.cleanBytes, store.bytesBelow(9));
    store.close();
  });

  it('keeps a tombstone until a clean at or past its horizon, set by the first clean that keeps it', async () => {
    const log = new FakeLog();
    const store = open();
    await log.append(
      [
        { key: 'a', value: '1' },
        { key: 'a', value: null },
        { key: 'b', value: '1' },
        { key: 'c', value: null },
      ],
      0,
    );
    await log.append([{ key: 'c', value: 'back' }], 0);
    await log.feed(store, ROLL);
    cleanPartition(store, 0, 4, 1000, 500);
    assert.deepEqual(offsets(store), [1, 2, 3, 4]);
    assert.equal(horizon(store, 1), 1500);
    assert.equal(horizon(store, 3), 1500);
    cleanPartition(store, 4, 5, 1499, 500);
    assert.deepEqual(offsets(store), [1, 2, 4], 'the tombstone of c went because c came back, not by time');
    assert.equal(horizon(store, 1), 1500, 'a later clean does not move the horizon');
    const expired = cleanPartition(store, 5, 5, 1500, 500);
    assert.deepEqual(offsets(store), [2, 4]);
    assert.equal(expired.tombstonesRemoved, 1);
    await log.append([{ key: 'a', value: 'again' }], 0);
    await log.feed(store, ROLL);
    cleanPartition(store, 5, 6, 1600, 500);
    assert.deepEqual(offsets(store), [2, 4, 5], 'nothing is left for the new a to supersede');
    store.close();
  });

  it('a zero delete.retention.ms tombstone lasts until the next clean', async () => {
    const log = new FakeLog();
    const store = open();
    await log.append([{ key: 'a', value: null }], 0);
    await log.feed(store, ROLL);
    cleanPartition(store, 0, 1, 1000, 0);
    assert.deepEqual(offsets(store), [0]);
    cleanPartition(store, 1, 1, 1000, 0);
    assert.deepEqual(offsets(store), []);
    store.close();
  });

  it('drops aborted data at once and its ABORT marker on the tombstone schedule after that', async () => {
    const log = new FakeLog();
    const store = open();
    await log.append(
      [
        { key: 'a', value: 'x' },
        { key: 'b', value: 'y' },
      ],
      0,
      5,
    );
    await log.endTransaction(5, false, 0);
    await log.append([{ key: 'a', value: '1' }], 0);
    await log.feed(store, ROLL);
    cleanPartition(store, 0, 4, 1000, 100);
    assert.deepEqual(offsets(store), [2, 3], 'the marker saw its aborted batch in this clean');
    assert.equal(horizon(store, 2), null);
    cleanPartition(store, 4, 4, 1010, 100);
    assert.equal(horizon(store, 2), 1110);
    cleanPartition(store, 4, 4, 1109, 100);
    assert.deepEqual(offsets(store), [2, 3]);
    const last = cleanPartition(store, 4, 4, 1110, 100);
    assert.deepEqual(offsets(store), [3]);
    assert.equal(last.markersRemoved, 1);
    store.close();
  });

  it('keeps a COMMIT marker while its transaction has data, then removes it on the tombstone schedule', async () => {
    const log = new FakeLog();
    const store = open();
    await log.append([{ key: 'a', value: '1' }], 0, 6);
    await log.append([{ key: 'z', value: '1' }], 0, 7);
    await log.endTransaction(6, true, 0);
    await log.endTransaction(7, true, 0);
    await log.append([{ key: 'a', value: '2' }], 0);
    await log.feed(store, ROLL);
    cleanPartition(store, 0, 5, 0, 100);
    assert.deepEqual(offsets(store), [1, 2, 3, 4], 'a@0 superseded; both markers read data of theirs in this clean');
    cleanPartition(store, 5, 5, 50, 100);
    assert.equal(horizon(store, 2), 150, "producer 6's transaction has no data left");
    assert.equal(horizon(store, 3), null, "producer 7's record z is still the latest");
    cleanPartition(store, 5, 5, 149, 100);
    assert.deepEqual(offsets(store), [1, 2, 3, 4]);
    cleanPartition(store, 5, 5, 150, 100);
    assert.deepEqual(offsets(store), [1, 3, 4]);
    cleanPartition(store, 5, 5, 1e9, 100);
    assert.deepEqual(offsets(store), [1, 3, 4]);
    store.close();
  });
});
