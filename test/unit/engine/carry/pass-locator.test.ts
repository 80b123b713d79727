/**
 * Finding the last whole carry pass by reading the store, without an index (pass-locator.ts): it
 * must say what an index that read the same store says (PartitionStore.carriedSnapshot), so a
 * replica serves the same copies before its index has caught up as after.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { locateLastPass, PassLocator } from '../../../../src/engine/carry/pass-locator.js';
import { PartitionStore } from '../../../../src/engine/store/partition-store.js';
import { RowBuffer } from '../../../../src/engine/store/row-buffer.js';
import { type CarriedSnapshot } from '../../../../src/engine/api/index-view.js';
import { copiesReadFrom } from '../../../../src/engine/api/survivor-set.js';
import { collectRows } from '../../../../src/engine/indexer/fetched-rows.js';
import { iterateBatches } from '../../../../src/protocol/records/batch.js';
import { Log } from './store-log.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-locator-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
let files = 0;

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
/** The latest offset of each of `keys` keys below `end`, as Log.writeRecords writes them. */
const latest = (end: number, keys: number) => new Set(range(end - keys, end));

/** What an index that read the store from its log start makes of its passes. */
async function indexed(log: Log, logStart: number): Promise<CarriedSnapshot | undefined> {
  const store = PartitionStore.open(path.join(dir, `p${files++}.sqlite`), { topic: 't', partition: 0 }).store;
  store.dropBelow(logStart);
  const rows = new RowBuffer(16);
  const got = await collectRows(log.from(logStart), [], logStart, log.end, store.openTransactions, rows);
  store.ingest(
    rows,
    { nextOffset: got.nextOffset, logStartOffset: logStart, lastStableOffset: log.end, highWatermark: log.end },
    { segmentBytes: 1 << 30, maxSegmentMs: 1e15 },
    false,
  );
  const snapshot = store.carriedSnapshot();
  store.close();
  return snapshot;
}

/** Reads of the store `batchesPerRead` batches at a time from `offset`, as a Fetch would give them. */
function reader(log: Log, batchesPerRead: number) {
  let reads = 0;
  const read = async (offset: number) => {
    reads++;
    const batches = iterateBatches(log.from(offset)).batches.slice(0, batchesPerRead);
    return { records: batches.length > 0 ? Buffer.concat(batches.map((b) => b.bytes)) : null, highWatermark: log.end };
  };
  return { read, reads: () => reads };
}

/** Both say the same pass, and a read of the copies from any offset starts at the same copy or an earlier one holding it. */
function assertAgrees(located: CarriedSnapshot, index: CarriedSnapshot): void {
  const { marks: lm, asStored, ...l } = located;
  const { marks: im, ...i } = index;
  assert.equal(asStored, true);
  assert.deepEqual(l, i);
  const lPhys = lm.filter((_, k) => k % 2 === 1);
  const iPhys = im.filter((_, k) => k % 2 === 1);
  assert.deepEqual([...lPhys], [...iPhys], 'one mark per copy of the pass');
  for (let o = index.topicStart; o < index.copiesBelow; o++) {
    assert.ok(copiesReadFrom(located, o) <= copiesReadFrom(index, o), `a read from ${o} starts no later than the index would`);
  }
}

describe('PassLocator', () => {
  it('finds the last whole pass as the index does, whatever the reads give at a time', async () => {
    const log = new Log();
    await log.writeRecords(100, 10);
    await log.carry(latest(100, 10), 100, 5); // clients wrote between its markers
    await log.writeRecords(150, 10); // 108-257: batches from 108 on, ten records each
    await log.carry(latest(248, 10), 248);
    await log.writeRecords(30, 10);
    const logStart = 100;
    const index = await indexed(log, logStart);
    assert.ok(index && index.copiesFrom > 248);
    for (const perRead of [1, 3, 1000]) {
      const r = reader(log, perRead);
      const found = await locateLastPass(r.read, logStart);
      assert.equal(found.next, log.end, 'read to the end of the log');
      assertAgrees(found.carried!, index);
      if (perRead === 1) assert.ok(r.reads() > 20, 'one batch a read');
    }
  });

  it('says whether clients wrote between the markers, and ignores a pass that has not ended', async () => {
    const log = new Log();
    await log.writeRecords(60, 10);
    await log.carry(latest(60, 10), 60, 7);
    const written = new PassLocator(0);
    written.add(log.from(0));
    assert.equal(written.located(0)!.passOnly, false);
    assertAgrees(written.located(60)!, (await indexed(log, 60))!);

    const quiet = new Log();
    await quiet.writeRecords(60, 10);
    await quiet.carry(latest(60, 10), 60);
    const pass = quiet.end;
    await quiet.writeRecords(37, 10); // 63-99
    await quiet.carry(latest(100, 10), 100);
    const open = new PassLocator(60);
    // The second pass without its end marker: the first is the last whole one.
    const batches = iterateBatches(quiet.from(60)).batches;
    open.add(Buffer.concat(batches.slice(0, -1).map((b) => b.bytes)));
    const located = open.located(60)!;
    assert.equal(located.passOnly, true);
    assert.equal(located.copiesFrom, pass - 3, "the first pass's start marker");
    assert.equal(located.copiesBelow, 60);
  });

  it('finds nothing in a store without a whole pass, and reads it to its end', async () => {
    const log = new Log();
    await log.writeRecords(50, 10);
    const found = await locateLastPass(reader(log, 2).read, 0);
    assert.equal(found.carried, undefined);
    assert.equal(found.next, 50);
    assert.ok(found.bytesRead > 0);
  });

  it('of two passes whole side by side, takes the one holding the most (the higher release end)', async () => {
    const log = new Log();
    await log.writeRecords(100, 10);
    const stale = await log.carry(latest(80, 10), 80);
    const current = await log.carry(latest(100, 10), 100);
    const locator = new PassLocator(0);
    locator.add(log.from(0));
    assert.equal(locator.located(0)!.copiesFrom, current);
    assert.notEqual(stale, current);
  });
});
