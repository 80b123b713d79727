/**
 * The statements a clean executes on one partition's rows (PartitionStore.clean), each a named
 * method. Which of them run, in what order and with what bounds, and so which records survive,
 * is Kafka's rule and stays with the cleaner (src/engine/cleaner/clean-partition.ts); this file
 * only knows the tables (schema.ts). Private to the store module: the cleaner reaches it through
 * PartitionStore.clean.
 */
import { perConnection } from './per-connection.js';
import type Database from 'better-sqlite3';
import { NOT_A_VALUE, RecordFlag } from './record-flags.js';
import { PENDING_RECORDS, PENDING_TERM } from './schema.js';

const CONTROL = RecordFlag.Control;
const TOMBSTONE_ROWS = `${PENDING_TERM} AND flags & ${CONTROL} = 0`;

const IDLE_TEMP_CACHE_PAGES = 2;
/** The dirty map's cache during a clean: some 100k keys before it spills to its temp file. */
const DIRTY_MAP_CACHE_KIB = 4096;

interface Prepared {
  db: Database.Database;
  markers: Database.Statement;
  txnDataLeft: Database.Statement;
  setHorizon: Database.Statement;
  deleteRow: Database.Statement;
  clearLatest: Database.Statement;
  fillLatest: Database.Statement;
  reapSuperseded: Database.Statement;
  reapDirty: Database.Statement;
  keepLatest: Database.Statement;
  forgetExpiredKeys: Database.Statement;
  reapExpired: Database.Statement;
  setTombstoneHorizons: Database.Statement;
}

/**
 * The clean's statements, prepared once per index file (a topic's partitions share them) and
 * gone with its connection.
 */
const statements = perConnection((db): Prepared => {
  // The map of the dirty part lives in the connection's temp database, whose page cache stays
  // at two pages except while a clean fills the map. SQLite gives a page cache an initial block
  // of pages (~90 KiB, held for good) when it caches its first page, unless the cache is that
  // small then. So a clean touches the map (clearLatest) before it raises the cache to
  // DIRTY_MAP_CACHE_KIB, past which the map spills to a temp file.
  db.pragma(`temp.cache_size = ${IDLE_TEMP_CACHE_PAGES}`);
  db.exec('CREATE TEMP TABLE IF NOT EXISTS dirty_latest (key BLOB PRIMARY KEY, offset INTEGER NOT NULL) WITHOUT ROWID');
  // Every statement names the partition first: the file holds the topic's other partitions too.
  const made: Prepared = {
    db,
    markers: db
      .prepare(
        `SELECT offset, pid, txn_first, horizon FROM ${PENDING_RECORDS} WHERE partition = ? AND ${PENDING_TERM} AND flags & ${CONTROL} <> 0 AND offset < ?`,
      )
      .raw(),
    txnDataLeft: db
      .prepare(`SELECT EXISTS (SELECT 1 FROM records WHERE partition = ? AND offset >= ? AND offset < ? AND pid = ? AND flags & ${CONTROL} = 0)`)
      .pluck(),
    setHorizon: db.prepare('UPDATE records SET horizon = ? WHERE partition = ? AND offset = ?'),
    deleteRow: db.prepare('DELETE FROM records WHERE partition = ? AND offset = ?'),
    clearLatest: db.prepare('DELETE FROM temp.dirty_latest'),
    fillLatest: db.prepare(
      `INSERT INTO temp.dirty_latest (key, offset)
       SELECT key, MAX(offset) FROM records
       WHERE partition = ? AND offset >= ? AND offset < ? AND key IS NOT NULL AND flags & ${NOT_A_VALUE} = 0 GROUP BY key`,
    ),
    // CROSS JOIN keeps the map outside: a probe of keys per dirty key, not a pass over every key of the partition.
    reapSuperseded: db.prepare(
      'DELETE FROM records WHERE partition = ? AND offset IN (SELECT k.offset FROM temp.dirty_latest d CROSS JOIN keys k ON k.partition = ? AND k.key = d.key)',
    ),
    reapDirty: db.prepare(
      `DELETE FROM records WHERE partition = ? AND offset >= ? AND offset < ? AND flags & ${CONTROL} = 0
       AND offset NOT IN (SELECT offset FROM temp.dirty_latest)`,
    ),
    keepLatest: db.prepare('INSERT OR REPLACE INTO keys (partition, key, offset) SELECT ?, key, offset FROM temp.dirty_latest'),
    // A tombstone still held below end is its key's latest there, so keys maps that key to it.
    forgetExpiredKeys: db.prepare(
      `DELETE FROM keys WHERE partition = ? AND key IN (SELECT key FROM ${PENDING_RECORDS} WHERE partition = ? AND ${TOMBSTONE_ROWS} AND offset < ? AND horizon <= ?)`,
    ),
    reapExpired: db.prepare(`DELETE FROM ${PENDING_RECORDS} WHERE partition = ? AND ${TOMBSTONE_ROWS} AND offset < ? AND horizon <= ?`),
    setTombstoneHorizons: db.prepare(`UPDATE ${PENDING_RECORDS} SET horizon = ? WHERE partition = ? AND ${TOMBSTONE_ROWS} AND offset < ? AND horizon IS NULL`),
  };
  return made;
});

/** A transaction marker still held: its offset, producer id, its transaction's first offset, its delete horizon (null: not set yet). */
export type MarkerRow = [offset: number, producerId: number, txnFirst: number, horizon: number | null];

/**
 * One partition's clean statements, in the caller's transaction (PartitionStore.clean runs the
 * clean in one). The methods that delete return how many rows went; the caller counts them
 * (PartitionStore.rowsDeleted).
 */
export class CleanStatements {
  private readonly s: Prepared;

  constructor(
    db: Database.Database,
    private readonly partition: number,
  ) {
    this.s = statements(db);
  }

  /** The transaction markers held below `end`. */
  markersBelow(end: number): MarkerRow[] {
    return this.s.markers.all(this.partition, end) as MarkerRow[];
  }

  /** Whether the producer's transaction still has data (not markers) in [from, to). */
  transactionDataIn(producerId: number, from: number, to: number): boolean {
    return this.s.txnDataLeft.get(this.partition, from, to, producerId) === 1;
  }

  setHorizon(offset: number, horizon: number): void {
    this.s.setHorizon.run(horizon, this.partition, offset);
  }

  deleteRow(offset: number): number {
    return this.s.deleteRow.run(this.partition, offset).changes;
  }

  /**
   * Runs `work` with the dirty map (the latest offset of each key in the dirty part, in the
   * connection's temp database) empty at its start, its page cache raised while it runs, and
   * emptied again after.
   */
  withDirtyMap(work: () => void): void {
    const { db, clearLatest } = this.s;
    clearLatest.run();
    db.pragma(`temp.cache_size = -${DIRTY_MAP_CACHE_KIB}`);
    try {
      work();
      clearLatest.run();
    } finally {
      db.pragma(`temp.cache_size = ${IDLE_TEMP_CACHE_PAGES}`);
    }
  }

  /** Fills the dirty map from [from, to): each key's latest offset there among data that is neither a marker nor aborted. */
  fillDirtyMap(from: number, to: number): void {
    this.s.fillLatest.run(this.partition, from, to);
  }

  /** Deletes the rows the keys table names for the dirty map's keys: what the dirty part supersedes. */
  deleteSuperseded(): number {
    return this.s.reapSuperseded.run(this.partition, this.partition).changes;
  }

  /** Deletes the data (not markers) in [from, to) that the dirty map does not name. */
  deleteDirtyNotInMap(from: number, to: number): number {
    return this.s.reapDirty.run(this.partition, from, to).changes;
  }

  /** Sets the keys table's entry of every key of the dirty map to the map's offset. */
  keysFromDirtyMap(): void {
    this.s.keepLatest.run(this.partition);
  }

  /** Removes the keys table's entries of the keys whose tombstone below `end` has a horizon at or before `now`. */
  forgetExpiredTombstoneKeys(end: number, now: number): void {
    this.s.forgetExpiredKeys.run(this.partition, this.partition, end, now);
  }

  /** Deletes the tombstones below `end` whose horizon is at or before `now`. */
  deleteExpiredTombstones(end: number, now: number): number {
    return this.s.reapExpired.run(this.partition, end, now).changes;
  }

  /** Sets `horizon` on the tombstones below `end` that have none yet. */
  setTombstoneHorizons(end: number, horizon: number): void {
    this.s.setTombstoneHorizons.run(horizon, this.partition, end);
  }
}
