import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { cleanPartition } from '../../../../src/engine/cleaner/clean-partition.js';
import { PartitionStore } from '../../../../src/engine/store/partition-store.js';
import { keyDigest, keyDigestInto, KEY_DIGEST_BYTES } from '../../../../src/engine/store/key-digest.js';
import { RowBuffer } from '../../../../src/engine/store/row-buffer.js';
import { listTopicIndexes, removeEarlierLayouts, topicIndexFile } from '../../../../src/engine/store/index-files.js';
import { SCHEMA_VERSION } from '../../../../src/engine/store/schema.js';
import { TopicIndex } from '../../../../src/engine/store/topic-index.js';
import { indexConnection } from '../../../support/index-connection.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-store-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
let files = 0;
const freshFile = () => path.join(dir, `p${files++}.sqlite`);
const ID = { topic: 'orders', partition: 3 };
const ROLL = { segmentBytes: 1000, maxSegmentMs: 1e12 };

/** Rows for offsets [from, from + n) of 10 bytes each, key o % keys, in batches of `perBatch`. */
function rowsFor(from: number, n: number, keys: number, perBatch = 10): RowBuffer {
  const rows = new RowBuffer(8);
  for (let o = from; o < from + n; o++) {
    if ((o - from) % perBatch === 0) rows.pushBatch(o, Math.min(o + perBatch, from + n) - 1, 10 * Math.min(perBatch, from + n - o), 1000 + o);
    const i = rows.push(o, 1000 + o, 10, 0);
    const key = Buffer.from(`key-${o % keys}`);
    keyDigestInto(key, 0, key.length, rows.keys, i * KEY_DIGEST_BYTES);
    rows.hasKey[i] = 1;
  }
  return rows;
}

function position(nextOffset: number) {
  return { nextOffset, logStartOffset: 0, lastStableOffset: nextOffset, highWatermark: nextOffset + 5 };
}

describe('PartitionStore', () => {
  it('stores rows with their key digests and resumes from its checkpoint after a restart', () => {
    const file = freshFile();
    const { store, rebuiltBecause } = PartitionStore.open(file, ID);
    assert.equal(rebuiltBecause, undefined);
    assert.equal(store.checkpoint.nextOffset, 0);
    store.ingest(rowsFor(0, 150, 7), position(150), ROLL, false);
    store.openTransactions.set(42, 148);
    store.ingest(rowsFor(150, 3, 7), position(153), ROLL, true);
    store.setTopicId('AAAAAAAAAAAAAAAAAAAAAQ');
    assert.equal(store.rowCount, 153);
    store.close();

    const reopened = PartitionStore.open(file, ID).store;
    assert.deepEqual(reopened.checkpoint, {
      topicId: 'AAAAAAAAAAAAAAAAAAAAAQ',
      nextOffset: 153,
      logStartOffset: 0,
      lastStableOffset: 153,
      highWatermark: 158,
      firstDirty: 0,
      cleanBytes: 0,
      lastCleanMs: 0,
    });
    assert.equal(reopened.rowCount, 153);
    assert.deepEqual([...reopened.openTransactions], [[42, 148]]);
    assert.deepEqual(
      reopened.segments.map((s) => s.base),
      [0, 100],
    );
    assert.equal(reopened.segments[1]!.bytes, 530);
    const { key, flags, timestamp, size, producerId } = reopened.rowsIn(17, 18)[0]!;
    assert.deepEqual(
      { key, flags, timestamp, size, producerId },
      { key: keyDigest(Buffer.from('key-3')), flags: 0, timestamp: 1017, size: 10, producerId: null },
    );
    const distinct = new Set(reopened.rowsIn(0, Infinity).map((r) => r.key!.toString('hex'))).size;
    assert.equal(distinct, 7, 'every row got its own key bytes, not the last one bound');
    reopened.close();
  });

  it('visits every offset below an end in order, across the chunks it reads them in', () => {
    const { store } = PartitionStore.open(freshFile(), ID);
    // More rows than two chunks of 65,536.
    store.ingest(rowsFor(0, 140_002, 140_002), position(140_002), ROLL, false);
    const seen: number[] = [];
    store.eachOffsetBelow(140_001, (o) => seen.push(o));
    assert.equal(seen.length, 140_001);
    assert.ok(seen.every((o, i) => o === i));
    const some: number[] = [];
    store.eachOffsetBelow(3, (o) => some.push(o));
    assert.deepEqual(some, [0, 1, 2]);
    store.close();
  });

  it('recreates a file that is not a database, belongs to another topic, has another schema or an earlier layout', () => {
    const garbage = freshFile();
    fs.writeFileSync(garbage, Buffer.alloc(8192, 0x5a));
    const a = PartitionStore.open(garbage, ID);
    assert.match(a.rebuiltBecause ?? '', /cannot open|quick_check|not a database/);
    assert.equal(a.store.rowCount, 0);
    a.store.ingest(rowsFor(0, 5, 5), position(5), ROLL, false);
    a.store.close();

    const other = PartitionStore.open(garbage, { topic: 'payments', partition: 3 });
    assert.match(other.rebuiltBecause ?? '', /belongs to topic orders/);
    other.store.close();

    // Files the store did not write (another schema version, an earlier layout): made with SQL of their own.
    const old = freshFile();
    PartitionStore.open(old, ID).store.close();
    const db = new Database(old);
    db.prepare('UPDATE meta SET schema_version = 0').run();
    db.close();
    assert.match(PartitionStore.open(old, ID).rebuiltBecause ?? '', /schema version 0/);

    const earlier = freshFile();
    const v2 = new Database(earlier);
    v2.exec(
      "CREATE TABLE checkpoint (id INTEGER PRIMARY KEY, schema_version INTEGER, topic TEXT, partition INTEGER); INSERT INTO checkpoint VALUES (0, 2, 'orders', 3)",
    );
    v2.close();
    assert.match(PartitionStore.open(earlier, ID).rebuiltBecause ?? '', new RegExp(`not a topic index of schema version ${SCHEMA_VERSION}`));
  });

  it('keeps the partitions of a topic apart in its file', () => {
    const file = freshFile();
    const { index } = TopicIndex.open(file, 'orders');
    const p0 = PartitionStore.in(index, 0).store;
    const p1 = PartitionStore.in(index, 1).store;
    p0.ingest(rowsFor(0, 150, 7), position(150), ROLL, false);
    p1.ingest(rowsFor(0, 40, 3), position(40), ROLL, false);
    cleanPartition(p0, 0, 100, 0, 0);
    assert.equal(p0.rowCount, 57);
    assert.equal(p1.rowCount, 40);
    assert.deepEqual(
      p1.segments.map((s) => s.base),
      [0],
    );
    p1.dropBelow(30);
    assert.equal(p1.rowCount, 10);
    assert.equal(p0.rowCount, 57);
    assert.deepEqual(index.partitions(), [0, 1]);
    index.close();
    const again = TopicIndex.open(file, 'orders').index;
    assert.deepEqual([PartitionStore.in(again, 0).store.rowCount, PartitionStore.in(again, 1).store.rowCount], [57, 10]);
    again.close();
  });

  it('detects a damaged page with quick_check and starts over', () => {
    const file = freshFile();
    const { store } = PartitionStore.open(file, ID);
    store.ingest(rowsFor(0, 20_000, 1000, 100), position(20_000), { segmentBytes: 1e9, maxSegmentMs: 1e12 }, false);
    // The rows written into the file itself, whose bytes are damaged next.
    indexConnection(store).pragma('wal_checkpoint(TRUNCATE)');
    store.close();
    const bytes = fs.readFileSync(file);
    const pageSize = bytes.readUInt16BE(16);
    for (let p = 3; p * pageSize < bytes.length; p += 5) bytes.fill(0xff, p * pageSize + 8, p * pageSize + 64);
    fs.writeFileSync(file, bytes);
    const { store: rebuilt, rebuiltBecause } = PartitionStore.open(file, ID);
    assert.ok(rebuiltBecause, 'the damage was noticed');
    assert.equal(rebuilt.rowCount, 0);
    assert.equal(rebuilt.checkpoint.nextOffset, 0);
    rebuilt.close();
  });

  it('drops what falls below a moved log start and keeps the segment it lands in', () => {
    const { store } = PartitionStore.open(freshFile(), ID);
    store.ingest(rowsFor(0, 300, 50), position(300), ROLL, false);
    store.updateCheckpoint({ firstDirty: 100 });
    assert.equal(store.dropBelow(0), false);
    assert.equal(store.dropBelow(150), true, 'rows and the cleaned range changed');
    assert.equal(store.rowCount, 150);
    assert.deepEqual(
      store.segments.map((s) => s.base),
      [100, 200],
    );
    assert.equal(store.checkpoint.logStartOffset, 150);
    assert.equal(store.checkpoint.firstDirty, 150);
    assert.equal(store.checkpoint.cleanBytes, 0);
    assert.equal(store.offsetsBelowStats(Infinity).min, 150);
    assert.equal(store.dropBelow(120), false, 'an older log start changes nothing');
    store.close();
  });

  it('trusts the store\u2019s log start as the topic\u2019s only once no pass start can lie unread past it', () => {
    const fresh = () => {
      const { store } = PartitionStore.open(freshFile(), ID);
      // A new index of a store a pass let go up to 400: what it has read is nothing yet.
      store.updateCheckpoint({ logStartOffset: 400, nextOffset: 400, lastStableOffset: 500, highWatermark: 500 });
      return store;
    };
    const at = (n: number) => ({ nextOffset: n, logStartOffset: 400, lastStableOffset: 500, highWatermark: 500 });
    const store = fresh();
    assert.equal(store.knowsTopicStart(), false, 'the pass that let 400 go starts past it, unread');
    store.ingest(rowsFor(400, 50, 7), at(450), ROLL, false);
    assert.equal(store.knowsTopicStart(), false);
    const marker = new RowBuffer(1);
    marker.events.push({ kind: 'start', at: 450, releaseEnd: 400, topicStart: 0, time: 1 });
    store.ingest(marker, at(451), ROLL, false);
    assert.equal(store.knowsTopicStart(), true, 'the pass start said where the topic starts');
    assert.equal(store.topicStart, 0);
    store.close();

    const noPass = fresh();
    noPass.ingest(rowsFor(400, 100, 7), at(500), ROLL, false);
    assert.equal(noPass.knowsTopicStart(), true, 'read to the end and no pass: the store\u2019s own retention moved its start');
    assert.equal(noPass.topicStart, 400);
    noPass.close();

    const fromZero = PartitionStore.open(freshFile(), ID).store;
    assert.equal(fromZero.knowsTopicStart(), true, 'a store that starts at 0 let nothing go');
    fromZero.close();
  });

  it('keeps its in-memory state at what was committed when a transaction fails at its commit', () => {
    const { store } = PartitionStore.open(freshFile(), ID);
    store.ingest(rowsFor(0, 100, 7), position(100), ROLL, false);
    const committed = { checkpoint: { ...store.checkpoint }, rows: store.rowCount, segments: store.segments.map((s) => ({ ...s })) };
    // A deferred foreign key fails the COMMIT itself, after every statement ran, as a full disk does:
    // a trap set on the store's own connection.
    const db = indexConnection(store);
    db.exec('CREATE TABLE nowhere (id INTEGER PRIMARY KEY); CREATE TABLE trap (id INTEGER REFERENCES nowhere (id) DEFERRABLE INITIALLY DEFERRED)');
    db.exec('CREATE TEMP TRIGGER spring AFTER UPDATE ON main.checkpoint BEGIN INSERT INTO trap VALUES (1); END');
    db.pragma('foreign_keys = ON');
    store.openTransactions.set(9, 100);
    assert.throws(() => store.ingest(rowsFor(100, 50, 7), position(150), ROLL, true), /FOREIGN KEY/);
    assert.deepEqual(store.checkpoint, committed.checkpoint);
    assert.equal(store.rowCount, committed.rows);
    assert.deepEqual(store.segments, committed.segments);
    assert.deepEqual([...store.openTransactions], [], 'the open transactions read back too');
    db.exec('DROP TRIGGER spring');
    store.ingest(rowsFor(100, 50, 7), position(150), ROLL, false);
    assert.equal(store.rowCount, 150);
    assert.deepEqual(
      store.segments.map((s) => s.base),
      [0, 100],
    );
    store.close();
  });

  it('keeps a file the storage will not let it open, and says why', () => {
    // A directory where the file should be: SQLite cannot open it (SQLITE_CANTOPEN), as on a
    // filesystem that refuses to create the WAL's side files.
    const file = freshFile();
    fs.mkdirSync(file);
    assert.throws(
      () => PartitionStore.open(file, ID),
      (err: { code?: string }) => err.code === 'SQLITE_CANTOPEN',
    );
    assert.ok(fs.statSync(file).isDirectory(), 'left as it was');
  });

  it('starts a partition over when its tables disagree with its checkpoint or with each other, and leaves the others', () => {
    const file = freshFile();
    const { store } = PartitionStore.open(file, ID);
    store.ingest(rowsFor(0, 100, 7), position(100), ROLL, false);
    cleanPartition(store, 0, 100, 0, 0);
    const neighbour = PartitionStore.in(store.index, 9).store;
    neighbour.ingest(rowsFor(0, 20, 7), position(20), ROLL, false);
    store.close();
    assert.equal(PartitionStore.open(file, ID).rebuiltBecause, undefined, 'a cleaned index is consistent');
    PartitionStore.open(file, ID).store.close();

    // Damage the store's own writes never make, done to a copy of the file with SQL of its own.
    const damage = (sql: string) => {
      const copy = freshFile();
      fs.copyFileSync(file, copy);
      const db = new Database(copy);
      db.exec(sql);
      db.close();
      const { store: reopened, rebuiltBecause } = PartitionStore.open(copy, ID);
      assert.equal(reopened.rowCount, rebuiltBecause === undefined ? 7 : 0);
      assert.equal(PartitionStore.in(reopened.index, 9).store.rowCount, 20, 'the other partition keeps its rows');
      reopened.close();
      return rebuiltBecause;
    };
    assert.match(damage('DELETE FROM records WHERE partition = 3 AND offset = (SELECT MAX(offset) FROM records WHERE partition = 3)') ?? '', /does not agree/);
    assert.match(damage('DELETE FROM keys WHERE partition = 3 AND offset = (SELECT MIN(offset) FROM keys WHERE partition = 3)') ?? '', /does not agree/);
    assert.match(damage('UPDATE checkpoint SET next_offset = 50 WHERE partition = 3') ?? '', /indexed up to 50/);
    assert.match(damage('UPDATE checkpoint SET first_dirty = 101 WHERE partition = 3') ?? '', /out of order/);
  });

  it('gives reaped pages back to the filesystem', () => {
    const file = freshFile();
    const { store } = PartitionStore.open(file, ID);
    store.ingest(rowsFor(0, 50_000, 50_000, 500), position(50_000), { segmentBytes: 1e9, maxSegmentMs: 1e12 }, false);
    // The file's size is measured: the rows written into it first.
    indexConnection(store).pragma('wal_checkpoint(TRUNCATE)');
    const before = fs.statSync(file).size;
    store.dropBelow(49_000);
    const after = fs.statSync(file).size;
    assert.ok(after < before / 4, `file went from ${before} to ${after} bytes`);
    store.close();
  });
});

describe('index files', () => {
  it('lays out one file per topic and finds them again, whatever the topic name', () => {
    const root = fs.mkdtempSync(path.join(dir, 'data-'));
    for (const [topic, partition] of [
      ['a.b_c-d', 0],
      ['a.b_c-d', 12],
      ['weird/..name', 1],
      ['..', 2],
    ] as const) {
      const file = topicIndexFile(root, topic);
      assert.equal(path.dirname(file), path.join(root, 'index'), file);
      PartitionStore.open(file, { topic, partition }).store.close();
    }
    assert.deepEqual(listTopicIndexes(root).sort(), ['..', 'a.b_c-d', 'weird/..name']);
  });

  it('removes the directories of partition files an earlier version kept', () => {
    const root = fs.mkdtempSync(path.join(dir, 'data-'));
    PartitionStore.open(topicIndexFile(root, 'kept'), { topic: 'kept', partition: 0 }).store.close();
    fs.mkdirSync(path.join(root, 'index', 'orders'));
    fs.writeFileSync(path.join(root, 'index', 'orders', '0.sqlite'), 'old');
    assert.deepEqual(removeEarlierLayouts(root), [path.join(root, 'index', 'orders')]);
    assert.deepEqual(listTopicIndexes(root), ['kept']);
    assert.deepEqual(removeEarlierLayouts(root), []);
  });
});
