import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { batchPayload, encodeBatch, iterateBatches, RecordScan, scanRecordAt, type BatchFields } from '../../../../src/protocol/records/batch.js';
import { CopyBatches, emptyCopy, markerBatch, originalParts, originOf } from '../../../../src/compaction/carry/carried-batch.js';
import { emptyOrigin, encodePassEnd, encodePassStart } from '../../../../src/compaction/carry/carry-record.js';
import { cleanPartition } from '../../../../src/compaction/cleaner/clean-partition.js';
import { PartitionStore } from '../../../../src/compaction/index/partition-store.js';
import { RowBuffer } from '../../../../src/compaction/index/row-buffer.js';
import { collectRows } from '../../../../src/compaction/indexer/fetched-rows.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-carried-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
let files = 0;
const open = () => PartitionStore.open(path.join(dir, `p${files++}.sqlite`), { topic: 'table', partition: 0 }).store;
const ROLL = { segmentBytes: 1 << 30, maxSegmentMs: 1e15 };

const FIELDS: BatchFields = {
  baseOffset: 0n,
  partitionLeaderEpoch: 0,
  attributes: 0,
  lastOffsetDelta: 0,
  baseTimestamp: 1_700_000_000_000n,
  maxTimestamp: 1_700_000_000_000n,
  producerId: -1n,
  producerEpoch: -1,
  baseSequence: -1,
};

/** A store's log, as batches at the offsets the store gave them. */
class Log {
  readonly batches: Buffer[] = [];
  end = 0;

  append(batch: Buffer): number {
    const [h] = iterateBatches(batch).batches;
    const base = this.end;
    batch.writeBigInt64BE(BigInt(base), 0);
    this.batches.push(batch);
    this.end = base + h!.lastOffsetDelta + 1;
    return base;
  }

  /** Ten records per batch, key `k{o % keys}`; a value of null every `tombstoneEvery`. */
  async writeRecords(n: number, keys: number): Promise<void> {
    for (let i = 0; i < n; i += 10) {
      const count = Math.min(10, n - i);
      const records = Array.from({ length: count }, (_, j) => ({
        timestampDelta: j,
        offsetDelta: j,
        key: Buffer.from(`k${(this.end + j) % keys}`),
        value: Buffer.from(`v${this.end + j}`),
      }));
      this.append(await encodeBatch({ ...FIELDS, lastOffsetDelta: count - 1, baseTimestamp: BigInt(1_700_000_000_000 + this.end) }, records, 0));
    }
  }

  from(offset: number): Buffer {
    return Buffer.concat(
      this.batches.filter((b) => {
        const [h] = iterateBatches(b).batches;
        return Number(h!.baseOffset) + h!.lastOffsetDelta >= offset;
      }),
    );
  }

  /** A carry pass as the carrier writes it: a start marker, copies of `survivors`, an end marker. */
  async carry(survivors: Set<number>, releaseEnd: number): Promise<number> {
    const pass = this.append(await markerBatch(encodePassStart({ releaseEnd, topicStart: 0 }), 5));
    const copies = new CopyBatches(3);
    const scan = new RecordScan();
    for (const batch of [...this.batches]) {
      const [h] = iterateBatches(batch).batches;
      if (h!.producerId !== -1n || Number(h!.baseOffset) >= releaseEnd) continue;
      const payload = await batchPayload(batch, h!);
      for (let pos = 0; pos < payload.length;) {
        pos = scanRecordAt(payload, pos, scan);
        const o = Number(h!.baseOffset) + scan.offsetDelta;
        if (survivors.has(o)) copies.add(originOf(h!, scan, pass, -1, emptyOrigin()), originalParts(payload, scan, emptyCopy().parts));
      }
    }
    const count = copies.count;
    this.append((await copies.flush(6))!);
    this.append(await markerBatch(encodePassEnd({ pass, copies: count, releaseEnd }), 7));
    return pass;
  }
}

async function ingest(store: PartitionStore, log: Log): Promise<void> {
  const rows = new RowBuffer(16);
  const from = store.checkpoint.nextOffset;
  const got = await collectRows(log.from(from), [], from, log.end, store.openTransactions, rows);
  store.ingest(
    rows,
    { nextOffset: got.nextOffset, logStartOffset: store.checkpoint.logStartOffset, lastStableOffset: log.end, highWatermark: log.end },
    ROLL,
    false,
  );
}

function rowsOf(store: PartitionStore): [number, number | null][] {
  return store.db.prepare('SELECT offset, phys FROM records WHERE partition = 0 ORDER BY offset').raw().all() as [number, number | null][];
}

function keysOf(store: PartitionStore): number[] {
  return (store.db.prepare('SELECT offset FROM keys WHERE partition = 0 ORDER BY offset').pluck().all() as number[]).sort((a, b) => a - b);
}

/** The index as a fresh open sees it: its consistency check must not discard it. */
function reopened(store: PartitionStore): PartitionStore {
  const file = store.file;
  store.close();
  const again = PartitionStore.open(file, { topic: 'table', partition: 0 });
  assert.equal(again.rebuiltBecause, undefined);
  return again.store;
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

describe('carried copies in the index', () => {
  it('the carrier: its survivors move to their copies and stay when the store lets the old range go', async () => {
    const log = new Log();
    await log.writeRecords(100, 10);
    let store = open();
    await ingest(store, log);
    cleanPartition(store, 0, 100, 1, 0);
    const pass = await log.carry(new Set(range(90, 100)), 100);
    await ingest(store, log);
    assert.deepEqual(
      rowsOf(store),
      range(90, 100).map((o, i) => [o, 101 + i]),
    );
    assert.deepEqual(store.carry, { topicStart: 0, openPass: -1, openRelease: -1, openTime: -1, pass, passEnd: 111, passRelease: 100, passTime: 5 });
    assert.equal(store.dropBelow(100), false, 'the survivors are still there, in their copies');
    assert.equal(store.rowCount, 10);
    assert.equal(store.checkpoint.logStartOffset, 100);
    store = reopened(store);
    assert.deepEqual(keysOf(store), range(90, 100));
    assert.equal(store.topicStart, 0);
    // compact,delete retention moves the topic's own log start: copies below it go too.
    assert.equal(store.dropBelow(95, true), true);
    assert.deepEqual(
      rowsOf(store).map(([o]) => o),
      range(95, 100),
    );
    assert.deepEqual(keysOf(store), range(95, 100));
    assert.equal(store.topicStart, 95);
    assert.equal(store.checkpoint.logStartOffset, 100, 'the store itself still starts where the pass let it');
    reopened(store).close();
  });

  it('a replica started from the let-go store rebuilds the same rows from the copies', async () => {
    const log = new Log();
    await log.writeRecords(100, 10);
    await log.carry(new Set(range(90, 100)), 100);
    let store = open();
    store.dropBelow(100);
    await ingest(store, log);
    assert.deepEqual(
      rowsOf(store),
      range(90, 100).map((o, i) => [o, 101 + i]),
    );
    assert.equal(store.checkpoint.firstDirty, 100);
    store = reopened(store);
    assert.deepEqual(keysOf(store), range(90, 100));
  });

  it('a replica whose cleaner lags ends with the carrier\u2019s survivors once the pass ends', async () => {
    const log = new Log();
    await log.writeRecords(100, 10);
    await log.carry(new Set(range(90, 100)), 100);
    await log.writeRecords(20, 10);
    let store = open();
    await ingest(store, log);
    assert.deepEqual(
      rowsOf(store).filter(([o]) => o < 100),
      range(90, 100).map((o, i) => [o, 101 + i]),
    );
    assert.equal(store.checkpoint.firstDirty, 100);
    store = reopened(store);
    // The records after the pass supersede their copies at the next clean, as any newer record does.
    cleanPartition(store, 100, store.checkpoint.nextOffset, 1, 0);
    assert.deepEqual(
      rowsOf(store).map(([o]) => o),
      range(122, 132),
    );
  });

  it('an older copy of a key the index holds newer is not taken back; a copy of a row it let go is', async () => {
    const log = new Log();
    await log.writeRecords(20, 10);
    const first = await log.carry(new Set(range(10, 20)), 20);
    await log.writeRecords(10, 10);
    const store = open();
    store.dropBelow(20);
    await ingest(store, log);
    cleanPartition(store, store.checkpoint.firstDirty, store.checkpoint.nextOffset, 1, 0);
    assert.deepEqual(
      rowsOf(store).map(([o]) => o),
      range(32, 42),
    );
    // A second pass copies the newer survivors; a replica reading both passes keeps the newer.
    await log.carry(new Set(range(32, 42)), 42);
    const fresh = open();
    fresh.dropBelow(first);
    await ingest(fresh, log);
    assert.deepEqual(
      rowsOf(fresh).map(([o]) => o),
      range(32, 42),
    );
    assert.deepEqual(keysOf(fresh), range(32, 42));
  });
});
