import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { cleanPartition } from '../../../../src/engine/cleaner/clean-partition.js';
import { applyCopies, buildKeys } from '../../../../src/engine/store/carried-rows.js';
import { applyCopiesOneByOne } from '../../../../src/engine/store/copies-one-by-one.js';
import { KEY_DIGEST_BYTES } from '../../../../src/engine/store/key-digest.js';
import { PartitionStore } from '../../../../src/engine/store/partition-store.js';
import { RecordFlag } from '../../../../src/engine/store/record-flags.js';
import { RowBuffer } from '../../../../src/engine/store/row-buffer.js';
import { CREATE_SCHEMA } from '../../../../src/engine/store/schema.js';
import { collectRows } from '../../../../src/engine/indexer/fetched-rows.js';
import { seededRng } from '../../protocol/sample-body.js';
import { Log } from './store-log.js';
import { indexConnection } from '../../../support/index-connection.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-carried-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
let files = 0;
const open = () => PartitionStore.open(path.join(dir, `p${files++}.sqlite`), { topic: 'table', partition: 0 }).store;
const ROLL = { segmentBytes: 1 << 30, maxSegmentMs: 1e15 };

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
  return store.rowsIn(0, Infinity).map((r) => [r.offset, r.phys]);
}

function keysOf(store: PartitionStore): number[] {
  return store
    .keptKeys()
    .map((k) => k.offset)
    .sort((a, b) => a - b);
}

/** The index as a fresh open sees it: its consistency check must not discard it. */
function reopened(store: PartitionStore): PartitionStore {
  const file = store.file;
  store.close();
  const again = PartitionStore.open(file, { topic: 'table', partition: 0 });
  assert.equal(again.rebuiltBecause, undefined);
  return again.store;
}

/** The log without its last batch (a pass's end marker not written yet). */
function upToLast(log: Log): Log {
  const partial = new Log();
  for (const b of log.batches.slice(0, -1)) partial.append(Buffer.from(b));
  return partial;
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
      range(90, 100).map((o) => [o, 101]),
    );
    assert.deepEqual(store.carry, { topicStart: 0, openPass: -1, openRelease: -1, openTime: -1, pass, passEnd: 102, passRelease: 100, passTime: 5 });
    assert.equal(store.carriedSnapshot()!.passOnly, true, 'reads may pass over the pass\u2019s own records');
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
      range(90, 100).map((o) => [o, 101]),
    );
    assert.equal(store.checkpoint.firstDirty, 100);
    store = reopened(store);
    assert.deepEqual(keysOf(store), range(90, 100));
  });

  /** A store whose pass carried 90-99 with 20 client writes among its copies, and a new index that read it all but the end marker. */
  async function newIndexMidPass(): Promise<{ log: Log; store: PartitionStore }> {
    const log = new Log();
    await log.writeRecords(100, 10);
    await log.carry(new Set(range(90, 100)), 100, 20);
    const store = open();
    store.dropBelow(100);
    await ingest(store, upToLast(log));
    return { log, store };
  }

  it('a new index owes its copies\u2019 key entries until the pass ends, through a restart, and makes them in one go', async () => {
    const made = await newIndexMidPass();
    const log = made.log;
    let store = made.store;
    assert.equal(store.keysOwed, true);
    assert.deepEqual(keysOf(store), [], 'no entry while the pass is read');
    assert.deepEqual(
      rowsOf(store).filter(([o]) => o < 100),
      range(90, 100).map((o) => [o, 101]),
    );
    store = reopened(store);
    assert.equal(store.keysOwed, true, 'the file says so');
    await ingest(store, log);
    assert.equal(store.keysOwed, false);
    assert.deepEqual(keysOf(store), range(90, 100));
    // The client's records written during the pass supersede the copies, as any newer record does.
    cleanPartition(store, store.checkpoint.firstDirty, store.checkpoint.nextOffset, 1, 0);
    assert.deepEqual(
      rowsOf(store).map(([o]) => o),
      range(112, 122),
    );
    reopened(store).close();
  });

  it('a clean of an index that owes key entries makes them first (a pass stopped halfway)', async () => {
    const { store } = await newIndexMidPass();
    cleanPartition(store, store.checkpoint.firstDirty, store.checkpoint.nextOffset, 1, 0);
    assert.equal(store.keysOwed, false);
    assert.deepEqual(
      rowsOf(store).map(([o]) => o),
      range(112, 122),
    );
    assert.deepEqual(keysOf(store), range(112, 122));
    reopened(store).close();
  });

  it('a pass that clients wrote among is read through', async () => {
    const log = new Log();
    await log.writeRecords(100, 10);
    const store = open();
    await ingest(store, log);
    cleanPartition(store, 0, 100, 1, 0);
    await log.carry(new Set(range(90, 100)), 100, 3);
    await ingest(store, log);
    assert.deepEqual(store.carriedSnapshot(), {
      copiesBelow: 100,
      topicStart: 0,
      copiesFrom: 100,
      copiesTo: 105,
      passOnly: false,
      marks: new Float64Array([90, 101]),
    });
    // A fenced carrier's last copy (at 102) landed among the pass's and holds rows 93 and 94:
    // a read of 95 on starts at the pass's copy again.
    indexConnection(store).prepare('UPDATE records SET phys = 102 WHERE partition = 0 AND offset IN (93, 94)').run();
    assert.deepEqual(store.carriedSnapshot()!.marks, new Float64Array([90, 101, 93, 102, 95, 101]));
    store.close();
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
      range(90, 100).map((o) => [o, 101]),
    );
    assert.equal(store.checkpoint.firstDirty, 100);
    store = reopened(store);
    // The records after the pass supersede their copies at the next clean, as any newer record does.
    cleanPartition(store, 100, store.checkpoint.nextOffset, 1, 0);
    assert.deepEqual(
      rowsOf(store).map(([o]) => o),
      range(113, 123),
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
      range(23, 33),
    );
    // A second pass copies the newer survivors; a replica reading both passes keeps the newer.
    await log.carry(new Set(range(23, 33)), 33);
    const fresh = open();
    fresh.dropBelow(first);
    await ingest(fresh, log);
    assert.deepEqual(
      rowsOf(fresh).map(([o]) => o),
      range(23, 33),
    );
    assert.deepEqual(keysOf(fresh), range(23, 33));
  });
});

/**
 * carried-rows.ts's statements themselves, against the copies applied one at a time as the index
 * did before applyCopies (copies-one-by-one.ts), on two files of the schema: raw SQL sets up
 * states the store's own operations would take long to reach (random phys, horizons and key
 * entries, a neighbour partition holding the same rows), and every column of both tables is
 * compared, the neighbour's too.
 */
describe('copies applied by runs', () => {
  const memoryIndex = () => {
    const db = new Database(':memory:');
    db.exec(CREATE_SCHEMA);
    return db;
  };
  const records = (db: Database.Database, p?: number) =>
    p === undefined
      ? db.prepare('SELECT * FROM records ORDER BY partition, offset').all()
      : db.prepare('SELECT * FROM records WHERE partition = ? ORDER BY offset').all(p);
  const keys = (db: Database.Database, p?: number) =>
    p === undefined ? db.prepare('SELECT * FROM keys ORDER BY partition, key').all() : db.prepare('SELECT * FROM keys WHERE partition = ? ORDER BY key').all(p);

  it('agree with the copies applied one by one, over random partitions and runs', () => {
    // Every trial has a partition of its own in the same two files: the earlier ones must stay as they were.
    const reference = memoryIndex();
    const subject = memoryIndex();
    let copies = 0;
    let gainedSome = 0;
    let owedTrials = 0;
    for (let trial = 0; trial < 600; trial++) {
      const random = seededRng(20261200 + trial);
      const int = (n: number) => Math.floor(random() * n);
      const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)]!;
      const partition = trial;
      // A neighbour holding the same rows: nothing must reach it.
      const neighbour = 1_000_000 + trial;
      // Offsets [0, span); the cleaned part below firstDirty: none, all of it, or some.
      const span = pick([8, 40, 150, 400]);
      const firstDirty = pick([0, span, int(span + 1), int(span + 1)]);
      // Few keys, so that copies share keys with each other and with the rows held.
      const keySpace = 1 + int(pick([3, 12, 200]));
      const digest = (k: number) => {
        const d = Buffer.alloc(KEY_DIGEST_BYTES);
        d.writeUInt32BE(k, 0);
        d.writeUInt32BE(Math.imul(k, 2654435761) >>> 0, 8);
        return d;
      };
      // The partition as a consistent index holds it: below firstDirty one row per key (its entry in keys) and markers; above, anything.
      const held = new Map<number, number | null>();
      const insert = (offset: number, key: number | null, flags: number) => {
        const phys = random() < 0.3 ? span + int(1000) : null;
        const horizon = flags & RecordFlag.Tombstone && random() < 0.5 ? int(1e6) : null;
        const row = [offset, key === null ? null : digest(key), flags, 1e12 + offset, 1 + int(500), horizon, phys];
        for (const db of [reference, subject]) {
          for (const p of [partition, neighbour])
            db.prepare('INSERT INTO records (partition, offset, key, flags, ts, size, horizon, phys) VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(p, ...row);
        }
        held.set(offset, key);
      };
      const density = random();
      const cleanedKeys = new Set<number>();
      for (let o = 0; o < span; o++) {
        if (random() >= density) continue;
        if (o >= firstDirty) insert(o, int(keySpace), random() < 0.2 ? RecordFlag.Tombstone : 0);
        else if (random() < 0.1) insert(o, null, RecordFlag.Control | RecordFlag.Transactional | RecordFlag.Commit);
        else {
          const k = int(keySpace);
          if (cleanedKeys.has(k)) continue;
          cleanedKeys.add(k);
          insert(o, k, random() < 0.2 ? RecordFlag.Tombstone : 0);
          for (const db of [reference, subject])
            for (const p of [partition, neighbour]) db.prepare('INSERT INTO keys (partition, key, offset) VALUES (?, ?, ?)').run(p, digest(k), o);
        }
      }
      // A cleaned part without entries may take its copies' entries later, after every run (own
      // generator: the trials' shapes stay as they were); compared then, and the rows gained net.
      const later = cleanedKeys.size === 0 && seededRng(7 + trial)() < 0.5;
      let expectedSum = 0;
      let gotSum = 0;
      // Runs of copies: of rows held (a phys move), of rows not held (an index rebuilt from copies), or mixed.
      for (let run = 1 + int(3); run > 0; run--) {
        const heldShare = pick([0, 1, 0.5, random()]);
        const rows = new RowBuffer(4);
        const before = int(3);
        for (let r = 0; r < before; r++) rows.push(span + r, 0, 1, 0);
        // Usually one pass's copies, in offset order; sometimes the copies of two or three passes in one fetch.
        const physBase = span + 10_000 * (run + 1);
        for (let pass = random() < 0.25 ? 2 + int(2) : 1; pass > 0; pass--) {
          const taken = 0.05 + random();
          for (let o = 0; o < span; o++) {
            const isHeld = held.has(o);
            if (random() >= taken * (isHeld ? heldShare : 1 - heldShare)) continue;
            const tombstone = random() < 0.2;
            const key = isHeld && held.get(o) !== null && random() < 0.9 ? held.get(o)! : int(keySpace);
            // Several copies share a phys: one carry record holds a whole original batch.
            const i = rows.pushCopy(
              o,
              physBase + int(4),
              1e12 + o,
              1 + int(500),
              tombstone ? RecordFlag.Tombstone : 0,
              tombstone && random() < 0.7 ? int(1e6) : -1,
            );
            digest(key).copy(rows.keys, i * KEY_DIGEST_BYTES);
            rows.hasKey[i] = 1;
          }
        }
        const from = before;
        const to = rows.length;
        const after = int(3);
        for (let r = 0; r < after; r++) rows.push(span + 10 + r, 0, 1, 0);
        copies += to - from;
        const expected = reference.transaction(() => applyCopiesOneByOne(reference, partition, rows, from, to, firstDirty))();
        const got = subject.transaction(() => applyCopies(subject, partition, rows, from, to, firstDirty, later ? 'later' : 'now'))();
        expectedSum += expected;
        gotSum += got;
        if (expected !== 0) gainedSome++;
        // What the copies are of is drawn from the rows the index holds, as applying them one by one leaves them.
        held.clear();
        for (const [o, k] of reference.prepare('SELECT offset, key FROM records WHERE partition = ?').raw().all(partition) as [number, Buffer | null][]) {
          held.set(o, k === null ? null : k.readUInt32BE(0));
        }
        if (later) continue;
        const what = `trial ${trial}: ${to - from} copies, held share ${heldShare}, firstDirty ${firstDirty} of ${span}, ${keySpace} keys`;
        assert.equal(got, expected, `${what}: rows gained`);
        assert.deepEqual(records(subject, partition), records(reference, partition), `${what}: records`);
        assert.deepEqual(keys(subject, partition), keys(reference, partition), `${what}: keys`);
        assert.deepEqual(records(subject, neighbour), records(reference, neighbour), `${what}: the neighbour's records`);
        assert.deepEqual(keys(subject, neighbour), keys(reference, neighbour), `${what}: the neighbour's keys`);
      }
      if (!later) continue;
      owedTrials++;
      const what = `trial ${trial} (entries made later): firstDirty ${firstDirty} of ${span}, ${keySpace} keys`;
      gotSum -= subject.transaction(() => buildKeys(subject, partition, firstDirty))();
      assert.equal(gotSum, expectedSum, `${what}: rows gained`);
      assert.deepEqual(records(subject, partition), records(reference, partition), `${what}: records`);
      assert.deepEqual(keys(subject, partition), keys(reference, partition), `${what}: keys`);
      assert.deepEqual(records(subject, neighbour), records(reference, neighbour), `${what}: the neighbour's records`);
    }
    assert.deepEqual(records(subject), records(reference));
    assert.deepEqual(keys(subject), keys(reference));
    assert.ok(
      copies > 50_000 && gainedSome > 300 && owedTrials > 50,
      `${copies} copies, ${gainedSome} runs that gained rows, ${owedTrials} trials with entries made later`,
    );
    reference.close();
    subject.close();
  });

  it('a run of thousands: the rows a rebuilt index takes back, then the same copies again as a move', () => {
    const reference = memoryIndex();
    const subject = memoryIndex();
    const rows = new RowBuffer(4);
    // 5,000 copies of 1,000 keys, the last of each key at the end; all in the cleaned part.
    for (let o = 0; o < 5000; o++) {
      const i = rows.pushCopy(o * 3, 90_000 + Math.floor(o / 50), 1e12 + o, 100, 0, -1);
      rows.keys.writeUInt32BE(o % 1000, i * KEY_DIGEST_BYTES);
      rows.hasKey[i] = 1;
    }
    for (const phase of ['taken back', 'moved']) {
      const expected = reference.transaction(() => applyCopiesOneByOne(reference, 0, rows, 0, rows.length, 20_000))();
      const got = subject.transaction(() => applyCopies(subject, 0, rows, 0, rows.length, 20_000))();
      assert.equal(got, phase === 'moved' ? 0 : 1000, phase);
      assert.equal(got, expected, phase);
      assert.deepEqual(records(subject), records(reference), phase);
      assert.deepEqual(keys(subject), keys(reference), phase);
      for (let i = 0; i < rows.length; i++) rows.phys[i]! += 1000;
    }
    assert.deepEqual((subject.prepare('SELECT offset FROM records ORDER BY offset').pluck().all() as number[]).slice(0, 3), [12_000, 12_003, 12_006]);
    reference.close();
    subject.close();
  });
});
