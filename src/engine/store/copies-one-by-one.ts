/**
 * Carried copies applied one at a time: the per-row path carried-rows.ts's applyCopies replaced
 * (an UPDATE per copy; for a row not held a SELECT, an INSERT and an INSERT OR REPLACE). The
 * engine never takes it. It is the reference the runs are checked against
 * (test/unit/engine/carry/carried-index.test.ts) and the baseline they are measured against
 * (bench/copy-ingest.ts); here, so that its SQL stays in the store module with the schema.
 */
import { perConnection } from './per-connection.js';
import type Database from 'better-sqlite3';
import { KEY_DIGEST_BYTES } from './key-digest.js';
import type { PartitionStore } from './partition-store.js';
import type { RowBuffer } from './row-buffer.js';

interface Statements {
  movePhys: Database.Statement;
  latestOfKey: Database.Statement;
  deleteRow: Database.Statement;
  insertRow: Database.Statement;
  setKey: Database.Statement;
}

const statements = perConnection((db): Statements => ({
  movePhys: db.prepare('UPDATE records SET phys = ?, size = ? WHERE partition = ? AND offset = ?'),
  latestOfKey: db.prepare('SELECT offset FROM keys WHERE partition = ? AND key = ?').pluck(),
  deleteRow: db.prepare('DELETE FROM records WHERE partition = ? AND offset = ?'),
  insertRow: db.prepare('INSERT INTO records (partition, offset, key, flags, ts, size, horizon, phys) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
  setKey: db.prepare('INSERT OR REPLACE INTO keys (partition, key, offset) VALUES (?, ?, ?)'),
}));

/**
 * Applies the copies in rows [from, to) one by one on a file of the index's schema (in the
 * caller's transaction); returns how many rows the partition gained, net: what applyCopies must
 * agree with. In the cleaned part (below firstDirty) the key's entry decides, and a copy
 * replaces an older row of its key.
 */
export function applyCopiesOneByOne(db: Database.Database, partition: number, rows: RowBuffer, from: number, to: number, firstDirty: number): number {
  const s = statements(db);
  let gained = 0;
  for (let i = from; i < to; i++) {
    const offset = rows.offsets[i]!;
    const phys = rows.phys[i]!;
    const size = rows.sizes[i]!;
    if (s.movePhys.run(phys, size, partition, offset).changes === 1) continue;
    const key = rows.keys.subarray(i * KEY_DIGEST_BYTES, (i + 1) * KEY_DIGEST_BYTES);
    const cleaned = offset < firstDirty;
    let g = 1;
    if (cleaned) {
      const latest = s.latestOfKey.get(partition, key) as number | undefined;
      if (latest !== undefined && latest > offset) continue;
      if (latest !== undefined) g -= s.deleteRow.run(partition, latest).changes;
    }
    const horizon = rows.horizons[i]!;
    s.insertRow.run(partition, offset, Buffer.from(key), rows.flags[i]!, rows.timestamps[i]!, size, horizon < 0 ? null : horizon, phys);
    if (cleaned) s.setKey.run(partition, Buffer.from(key), offset);
    gained += g;
  }
  return gained;
}

/**
 * The same on a partition's store, as of its cleaned part now (PartitionStore.applyCopies's
 * counterpart), in the caller's transaction (store.write). Its row count does not follow: for a
 * bench's store, thrown away after.
 */
export function applyCopiesOneByOneTo(store: PartitionStore, rows: RowBuffer, from: number, to: number): number {
  return applyCopiesOneByOne(store.index.db, store.id.partition, rows, from, to, store.checkpoint.firstDirty);
}
