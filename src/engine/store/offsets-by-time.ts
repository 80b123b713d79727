/**
 * ListOffsets by timestamp from a partition's index, for carried partitions (docs/carrying.md):
 * their copies carry the time of carrying in the store, so the store's own answer could name a
 * copy's offset; the index holds every record's original timestamp. As Kafka answers: for a
 * timestamp, the first offset whose record's timestamp is at or after it; for MAX_TIMESTAMP, the
 * record with the largest timestamp (the first of them). Both over the records the partition
 * still holds: the cleaned part's survivors and every record after it.
 */
import { type OffsetAtTime, MAX_TIMESTAMP } from '../api/engine-reports.js';
import type { PartitionStore } from './partition-store.js';

/** The answer from the index. */
export function offsetForTime(store: PartitionStore, timestamp: number): OffsetAtTime {
  const p = store.id.partition;
  const row =
    timestamp === MAX_TIMESTAMP
      ? store.db.prepare('SELECT offset, ts FROM records WHERE partition = ? ORDER BY ts DESC, offset ASC LIMIT 1').raw().get(p)
      : store.db.prepare('SELECT offset, ts FROM records WHERE partition = ? AND ts >= ? ORDER BY offset LIMIT 1').raw().get(p, timestamp);
  const indexedUpTo = store.checkpoint.nextOffset;
  const unread = store.asStoredUntil > indexedUpTo;
  if (!row) return { found: null, indexedUpTo, unread };
  const [offset, ts] = row as [number, number];
  return { found: { offset, timestamp: ts }, indexedUpTo, unread };
}
