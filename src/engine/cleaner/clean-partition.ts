/**
 * One clean of one partition over [0, end), Kafka's Cleaner.doClean on the index, in one
 * SQLite transaction. Kafka rewrites every segment below the cleaned end in each clean, against
 * a map of the latest offset per key in the dirty part [firstDirty, end); a record is kept iff:
 *
 * - data of an aborted transaction: never (dropped by the first clean that covers it);
 * - a transaction marker: until a clean finds no data of its transaction left (COMMIT: no batch
 *   of the transaction read in that pass; ABORT: none of its aborted batches seen), which sets
 *   its delete horizon to now + delete.retention.ms; a clean at or past the horizon removes it;
 * - other data: it has a key and no later record of that key is below end; a tombstone (null
 *   value) additionally only until a clean at or past its delete horizon, which the first clean
 *   that keeps it sets to now + delete.retention.ms (KIP-534's per-batch horizon: all of a batch's
 *   kept tombstones get it in the same clean, so per record it is the same thing).
 *
 * Records at or past `end` are untouched. Kafka also keeps an emptied batch when it holds a
 * producer's last sequence or ends the cleaning round; such a batch has no records, so what a
 * client reads is the same without it, and the index does not track it.
 */
import type { CleanOutcome } from '../api/engine-reports.js';
import type Database from 'better-sqlite3';
import type { PartitionStore } from '../store/partition-store.js';
import { RecordFlag } from '../store/record-flags.js';
import { PENDING_RECORDS, PENDING_TERM } from '../store/schema.js';

const CONTROL = RecordFlag.Control;
const NOT_DEDUPED = RecordFlag.Control | RecordFlag.Aborted;
const TOMBSTONE_ROWS = `${PENDING_TERM} AND flags & ${CONTROL} = 0`;

interface Statements {
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

const IDLE_TEMP_CACHE_PAGES = 2;
/** The dirty map's cache during a clean: some 100k keys before it spills to its temp file. */
const DIRTY_MAP_CACHE_KIB = 4096;

const prepared = new WeakMap<Database.Database, Statements>();

/**
 * The clean's statements, prepared once per index file (a topic's partitions share them) and
 * gone with its connection.
 */
function statements(db: Database.Database): Statements {
  const known = prepared.get(db);
  if (known) return known;
  // The map of the dirty part lives in the connection's temp database, whose page cache stays
  // at two pages except while a clean fills the map. SQLite gives a page cache an initial block
  // of pages (~90 KiB, held for good) when it caches its first page, unless the cache is that
  // small then. So a clean touches the map (clearLatest) before it raises the cache to
  // DIRTY_MAP_CACHE_KIB, past which the map spills to a temp file.
  db.pragma(`temp.cache_size = ${IDLE_TEMP_CACHE_PAGES}`);
  db.exec('CREATE TEMP TABLE IF NOT EXISTS dirty_latest (key BLOB PRIMARY KEY, offset INTEGER NOT NULL) WITHOUT ROWID');
  // Every statement names the partition first: the file holds the topic's other partitions too.
  const made: Statements = {
    markers: db.prepare(
      `SELECT offset, pid, txn_first, horizon FROM ${PENDING_RECORDS} WHERE partition = ? AND ${PENDING_TERM} AND flags & ${CONTROL} <> 0 AND offset < ?`,
    ),
    txnDataLeft: db
      .prepare(`SELECT EXISTS (SELECT 1 FROM records WHERE partition = ? AND offset >= ? AND offset < ? AND pid = ? AND flags & ${CONTROL} = 0)`)
      .pluck(),
    setHorizon: db.prepare('UPDATE records SET horizon = ? WHERE partition = ? AND offset = ?'),
    deleteRow: db.prepare('DELETE FROM records WHERE partition = ? AND offset = ?'),
    clearLatest: db.prepare('DELETE FROM temp.dirty_latest'),
    fillLatest: db.prepare(
      `INSERT INTO temp.dirty_latest (key, offset)
       SELECT key, MAX(offset) FROM records
       WHERE partition = ? AND offset >= ? AND offset < ? AND key IS NOT NULL AND flags & ${NOT_DEDUPED} = 0 GROUP BY key`,
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
  prepared.set(db, made);
  return made;
}

/**
 * Cleans [0, end) with the dirty part starting at firstDirty, at time `now`, and moves the
 * checkpoint to end.
 */
export function cleanPartition(store: PartitionStore, firstDirty: number, end: number, now: number, deleteRetentionMs: number): CleanOutcome {
  const started = performance.now();
  const s = statements(store.db);
  const p = store.id.partition;
  const horizon = now + deleteRetentionMs;
  let removed = 0;
  let markersRemoved = 0;
  let tombstonesRemoved = 0;
  store.write(() => {
    // Markers first, on the state before this clean: a transaction's batches that this very
    // clean removes were still read by it, so they keep the marker for one more round.
    for (const [offset, pid, txnFirst, markerHorizon] of s.markers.raw().all(p, end) as [number, number, number, number | null][]) {
      if (markerHorizon !== null && markerHorizon > now) continue;
      if (s.txnDataLeft.get(p, txnFirst, offset, pid) === 1) continue;
      if (markerHorizon === null) {
        s.setHorizon.run(horizon, p, offset);
      } else {
        s.deleteRow.run(p, offset);
        markersRemoved++;
      }
    }
    s.clearLatest.run();
    store.db.pragma(`temp.cache_size = -${DIRTY_MAP_CACHE_KIB}`);
    try {
      if (end > firstDirty) s.fillLatest.run(p, firstDirty, end);
      removed += s.reapSuperseded.run(p, p).changes;
      if (end > firstDirty) removed += s.reapDirty.run(p, firstDirty, end).changes;
      s.keepLatest.run(p);
      s.clearLatest.run();
    } finally {
      store.db.pragma(`temp.cache_size = ${IDLE_TEMP_CACHE_PAGES}`);
    }
    s.forgetExpiredKeys.run(p, p, end, now);
    tombstonesRemoved = s.reapExpired.run(p, end, now).changes;
    s.setTombstoneHorizons.run(horizon, p, end);
    removed += tombstonesRemoved + markersRemoved;
    store.rowsDeleted(removed);
    store.updateCheckpoint({ firstDirty: end, cleanBytes: store.bytesBelow(end), lastCleanMs: now });
  });
  store.vacuumIfWorthIt();
  return { firstDirty, endOffset: end, removed, tombstonesRemoved, markersRemoved, durationMs: performance.now() - started };
}
