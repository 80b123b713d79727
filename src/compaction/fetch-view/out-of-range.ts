/**
 * OFFSET_OUT_OF_RANGE from the store, for a compacted partition (docs/carrying.md). Where a pass
 * let the history go, the store starts past offsets the compacted topic still has: their records
 * are in the pass's copies. A replica serves those once its index has read the pass whole; one
 * that has not yet (just started, rebuilding, or behind the replica that carries) cannot tell
 * whether the store's answer is Kafka's (the offset is gone) or only the store's (the offset
 * lives on in copies it has not read). Passing the error on would send the client to the store's
 * log start, past every survivor below it, so the view first waits for the index to read what
 * the store holds, within the client's max wait:
 * - the index read a pass whose copies hold the offset, or a new index found one in the store:
 *   an empty answer at once, and the client's next fetch is served from the copies;
 * - the index read everything and no pass holds it, or the offset is past the log's end: the
 *   store's answer stands, as Kafka's would;
 * - the index is not there yet: an empty answer (no records, no error), and the client asks again.
 */
import type { FetchResponsePartitionData } from '../../protocol/messages.js';
import { caughtUpOrHeld } from '../engine-client/caught-up.js';
import { type IndexView } from '../../engine/api/index-view.js';
import { copiesHold } from '../../engine/api/survivor-set.js';
import type { UpstreamReads } from './upstream-reads.js';

const READ_COMMITTED = 1;
const NO_RECORDS = Buffer.alloc(0);

export interface OutOfRange {
  topic: string;
  partition: number;
  /** The offset the client asked for. */
  clientOffset: number;
  isolationLevel: number;
}

/**
 * Decides the store's OFFSET_OUT_OF_RANGE for `p` (see above); true when the answer became an
 * empty one. Waits at most waitMs for the index.
 */
export async function answerOutOfRange(
  index: IndexView,
  upstream: UpstreamReads,
  at: OutOfRange,
  p: FetchResponsePartitionData,
  waitMs: number,
): Promise<boolean> {
  const { topic, partition, clientOffset } = at;
  let bounds;
  try {
    bounds = await upstream.bounds(topic, partition);
  } catch {
    // Where the store's log starts is unknown: no answer beats a wrong one, the client asks again.
    return empty(index, at, p, null);
  }
  if (clientOffset >= Number(bounds.logStart)) return false;
  // A pass found in the store (a new index, pass-locator.ts) answers before the index catches up.
  const held = () => copiesHold(index.partition(topic, partition)?.carried(), clientOffset);
  const caughtUp = await caughtUpOrHeld(index, topic, partition, waitMs, held);
  if (caughtUp === true && !held()) return false;
  return empty(index, at, p, bounds);
}

function empty(index: IndexView, at: OutOfRange, p: FetchResponsePartitionData, bounds: { highWatermark: bigint; lastStable: bigint } | null): true {
  const carried = index.partition(at.topic, at.partition)?.carried();
  p.errorCode = 0;
  p.highWatermark = bounds?.highWatermark ?? -1n;
  p.lastStableOffset = bounds?.lastStable ?? -1n;
  p.logStartOffset = carried ? BigInt(carried.topicStart) : -1n;
  p.abortedTransactions = at.isolationLevel === READ_COMMITTED ? [] : null;
  p.records = NO_RECORDS;
  return true;
}
