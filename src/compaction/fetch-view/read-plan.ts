/**
 * Where to read a compacted partition from (DESIGN.md, "How clients advance"): clients accept
 * batches that start after their fetch offset, so a fetch that lands on removed records is sent
 * upstream from the next surviving offset instead. Reading then costs one upstream fetch per
 * stretch of survivors, however many superseded records lie between them.
 */
import type { PartitionIndexView } from '../../engine/api/index-view.js';

export interface ReadPlan {
  /** Where the upstream is asked to read. */
  fetchOffset: number;
  /**
   * Set when this client was answered with only an empty batch ending here for the same fetch:
   * the read starts past it, and if the upstream has nothing new the same answer is given again.
   */
  emptyUpTo?: number;
}

/**
 * The next offset worth reading at or after `offset`. When nothing survives from there up to
 * the cleaner's horizon, that is the horizon itself, or with `probe` the last offset before it:
 * reading the last removed offset answers at once with the batch that ends the removed range,
 * even when the horizon is the high watermark and a read there would wait for new records.
 * The last carry pass's own records (docs/carrying.md) are passed over the same way, its end
 * marker being the last offset of the range.
 */
export function nextReadable(view: PartitionIndexView, offset: number, probe: boolean): number {
  const horizon = view.cleanedUpTo();
  let next = offset;
  if (offset < horizon) {
    next = Math.max(view.nextVisible(offset), offset);
    if (next >= horizon) next = probe ? horizon - 1 : horizon;
  }
  const carried = view.carried();
  if (amongPassRecords(view, next) && next < carried!.copiesTo) next = probe ? carried!.copiesTo : carried!.copiesTo + 1;
  return pastEnd(view, next);
}

/**
 * A read at or past where the log ends for clients (index-view.ts LogEnd) starts where the index
 * stopped reading: the store holds nothing a client sees before it, and waits there, up to the
 * client's max wait, for what is written next.
 */
function pastEnd(view: PartitionIndexView, offset: number): number {
  const end = view.end();
  return end && offset >= end.visibleEnd && offset < end.indexedTo ? end.indexedTo : offset;
}

/** Whether `offset` lies among the last carry pass's own records, where no client wrote while it ran: reads pass them over. */
export function amongPassRecords(view: PartitionIndexView, offset: number): boolean {
  const carried = view.carried();
  return carried !== undefined && carried.passOnly && offset >= carried.copiesFrom && offset <= carried.copiesTo;
}

export function planRead(view: PartitionIndexView, clientOffset: number, emptyUpTo: number | undefined): ReadPlan {
  if (emptyUpTo !== undefined && stillRemoved(view, clientOffset, emptyUpTo)) {
    return { fetchOffset: nextReadable(view, emptyUpTo + 1, false), emptyUpTo };
  }
  return { fetchOffset: nextReadable(view, clientOffset, true) };
}

/**
 * Whether the index still shows nothing from the fetch offset to the end of an earlier empty
 * answer: a re-created topic (a new index) or a stale memory must not make the proxy skip
 * records.
 */
function stillRemoved(view: PartitionIndexView, from: number, to: number): boolean {
  const horizon = view.cleanedUpTo();
  return from < horizon && from <= to && view.nextVisible(from) > Math.min(to, horizon - 1);
}
