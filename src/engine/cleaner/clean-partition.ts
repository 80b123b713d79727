/**
 * One clean of one partition over [0, end), Kafka's Cleaner.doClean on the index, in one
 * SQLite transaction. Kafka rewrites every segment below the cleaned end in each clean, against
 * a map of the latest offset per key in the dirty part [firstDirty, end); a record is kept iff:
 *
 * - data of an aborted transaction, and a void record (a conditional record whose condition
 *   failed, docs/tables.md): never (dropped by the first clean that covers it);
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
import type { PartitionStore } from '../store/partition-store.js';

/**
 * Cleans [0, end) with the dirty part starting at firstDirty, at time `now`, and moves the
 * checkpoint to end. The store executes the statements (PartitionStore.clean); this decides them.
 */
export function cleanPartition(store: PartitionStore, firstDirty: number, end: number, now: number, deleteRetentionMs: number): CleanOutcome {
  const started = performance.now();
  const horizon = now + deleteRetentionMs;
  let removed = 0;
  let markersRemoved = 0;
  let tombstonesRemoved = 0;
  store.clean((rows) => {
    // Markers first, on the state before this clean: a transaction's batches that this very
    // clean removes were still read by it, so they keep the marker for one more round.
    for (const [offset, pid, txnFirst, markerHorizon] of rows.markersBelow(end)) {
      if (markerHorizon !== null && markerHorizon > now) continue;
      if (rows.transactionDataIn(pid, txnFirst, offset)) continue;
      if (markerHorizon === null) {
        rows.setHorizon(offset, horizon);
      } else {
        rows.deleteRow(offset);
        markersRemoved++;
      }
    }
    // Each key's latest record in the dirty part supersedes the key's record in the cleaned part
    // and its other records in the dirty part; keyless and aborted data there go too.
    rows.withDirtyMap(() => {
      if (end > firstDirty) rows.fillDirtyMap(firstDirty, end);
      removed += rows.deleteSuperseded();
      if (end > firstDirty) removed += rows.deleteDirtyNotInMap(firstDirty, end);
      rows.keysFromDirtyMap();
    });
    rows.forgetExpiredTombstoneKeys(end, now);
    tombstonesRemoved = rows.deleteExpiredTombstones(end, now);
    rows.setTombstoneHorizons(end, horizon);
    removed += tombstonesRemoved + markersRemoved;
    store.rowsDeleted(removed);
    store.updateCheckpoint({ firstDirty: end, cleanBytes: store.bytesBelow(end), lastCleanMs: now });
  });
  store.vacuumIfWorthIt();
  return { firstDirty, endOffset: end, removed, tombstonesRemoved, markersRemoved, durationMs: performance.now() - started };
}
