/**
 * The aborted-transaction list a read_committed client gets with its records. The upstream lists
 * every aborted transaction the fetched range overlaps, but the cleaner removes an aborted
 * transaction's records and later its abort marker. A client that is told a producer aborted, and
 * never sees that producer's abort marker, treats the producer's next transactional batches as
 * aborted too (Java's CompletedFetch, librdkafka and franz-go alike). Kafka's cleaner drops such
 * entries from its transaction index; here an entry goes when its marker, found in the fetched
 * data, was removed.
 */
import type { FetchResponseAbortedTransaction as AbortedTransaction } from '../../protocol/messages.js';
import type { MarkerSeen } from './visible-records.js';

export function visibleAbortedTransactions(aborted: AbortedTransaction[] | null, markers: readonly MarkerSeen[]): AbortedTransaction[] | null {
  if (!aborted || aborted.length === 0 || markers.length === 0) return aborted;
  const kept = aborted.filter((txn) => {
    const first = Number(txn.firstOffset);
    // The transaction's marker is its producer's first marker at or after its first offset.
    const marker = markers.find((m) => m.producerId === txn.producerId && m.offset >= first);
    return marker === undefined || marker.visible;
  });
  return kept.length === aborted.length ? aborted : kept;
}

/** Both lists, each transaction once (continued reads overlap in what they report). */
export function mergeAbortedTransactions(a: AbortedTransaction[] | null, b: AbortedTransaction[] | null): AbortedTransaction[] | null {
  if (!a || a.length === 0) return b;
  if (!b || b.length === 0) return a;
  const seen = new Set(a.map((t) => `${t.producerId}:${t.firstOffset}`));
  return [...a, ...b.filter((t) => !seen.has(`${t.producerId}:${t.firstOffset}`))];
}
