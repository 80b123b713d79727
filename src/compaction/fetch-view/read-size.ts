/**
 * How much of the raw log a read on asks for (partition-view.ts). The index says where the next
 * survivors lie and the raw log walked so far what an offset costs, so the raw bytes that should
 * fill the answer's room are known before reading, and one read brings them. The share of bytes
 * that survived the last read would say little: survivors crowd together towards the end of a
 * log, where the latest value of most keys lies, so a read sized by it falls short there and
 * another round trip follows.
 */
import type { PartitionIndexView } from '../../engine/api/index-view.js';
import type { BatchesWalked } from './visible-records.js';

/**
 * The most raw log one read asks for: an answer holds what it read until it has gone out, and
 * what was read past the room is read again by the client's next fetch.
 */
export const MAX_READ_BYTES = 16 << 20;

/**
 * Raw bytes that should hold `room` bytes of survivors from `from` on. A survivor takes about as
 * much room in the answer as in the raw log. A read starts at the batch holding `from` and must
 * take in the batch holding the last survivor wanted, hence two batches more.
 */
export function rawBytesFor(view: PartitionIndexView, from: number, room: number, walked: BatchesWalked): number {
  const horizon = view.cleanedUpTo();
  // Nothing walked yet (an answer from the copies): past the horizon nothing is removed but kcompact's own records.
  if (walked.offsets === 0) return from >= horizon ? room : MAX_READ_BYTES;
  const perOffset = walked.bytes / walked.offsets;
  const wanted = Math.ceil(room / perOffset);
  let last = from + wanted - 1;
  if (from < horizon) {
    const to = Math.min(horizon, from + Math.ceil(MAX_READ_BYTES / perOffset));
    const survivors = view.survivors(from, to);
    if (survivors.length >= wanted) last = survivors[wanted - 1]!;
    else last = to === horizon ? horizon + wanted - survivors.length - 1 : to;
  }
  const estimate = Math.ceil((last - from + 1) * perOffset + (2 * walked.bytes) / walked.batches);
  return Math.max(room, Math.min(estimate, MAX_READ_BYTES));
}
