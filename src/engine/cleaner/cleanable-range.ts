/**
 * Which part of a partition the cleaner may clean now, and how dirty it is: Kafka's
 * LogCleanerManager.cleanableOffsets, maxCompactionDelay and LogToClean, over virtual segments.
 *
 * - firstDirty is the checkpoint, moved up to the log start when the log start passed it.
 * - firstUncleanable is the smallest of the last stable offset, the active segment's base and
 *   (with min.compaction.lag.ms > 0) the base of the first dirty non-active segment whose largest
 *   timestamp is younger than the lag; all three are segment bases here, because the index only
 *   holds offsets below the last stable offset and the segment holding it is the active one.
 * - The dirty ratio is dirty bytes / (clean + dirty bytes); a partition is cleanable when the
 *   ratio exceeds min.cleanable.dirty.ratio, or when a dirty non-active segment's first batch is
 *   older than max.compaction.lag.ms and there is something to clean.
 * - A conditional record not judged yet (docs/tables.md) bounds it too: its verdict decides what survives.
 * - On a store that caps retention (policy.carryAfterMs), half the carry age bounds the lag, and
 *   an active segment older than that is cleanable too (docs/carrying.md).
 */
import type { TopicPolicy } from '../api/topic-policy.js';
import type { Segment } from '../store/segment-roller.js';

export interface IndexedExtent {
  /** The cleaner's checkpoint. */
  firstDirty: number;
  logStartOffset: number;
  /** The index's end: the next offset to index (never past the last stable offset). */
  nextOffset: number;
  /** Bytes kept below firstDirty. */
  cleanBytes: number;
  /** The first conditional record not judged yet (its verdict decides survivors), or -1 / absent. */
  unjudgedFrom?: number;
}

export interface CleanableRange {
  firstDirty: number;
  firstUncleanable: number;
  cleanBytes: number;
  cleanableBytes: number;
  /** cleanableBytes / (cleanBytes + cleanableBytes); 0 for an empty log. */
  dirtyRatio: number;
  /** How far past max.compaction.lag.ms the oldest dirty segment is (0: not yet). */
  compactionDelayMs: number;
}

/** The base of the segment holding `offset` (the first segment's base when it is before all). */
function floorSegment(segments: readonly Segment[], offset: number): number {
  let lo = 0;
  let hi = segments.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (segments[mid]!.base <= offset) lo = mid;
    else hi = mid - 1;
  }
  return segments[lo]!.base;
}

/** Index of the first segment that holds offsets at or after `offset`. */
function firstSegmentReaching(segments: readonly Segment[], offset: number): number {
  let i = 0;
  while (i + 1 < segments.length && segments[i + 1]!.base <= offset) i++;
  return i;
}

export function cleanableRange(segments: readonly Segment[], extent: IndexedExtent, policy: TopicPolicy, now: number): CleanableRange {
  let firstDirty = extent.firstDirty;
  if (firstDirty < extent.logStartOffset || firstDirty > extent.nextOffset) firstDirty = extent.logStartOffset;
  if (segments.length === 0) {
    return { firstDirty, firstUncleanable: firstDirty, cleanBytes: extent.cleanBytes, cleanableBytes: 0, dirtyRatio: 0, compactionDelayMs: 0 };
  }
  const active = segments.length - 1;
  const activeBase = segments[active]!.base;
  // On a store that caps retention an idle active segment would never roll, so never be cleaned
  // nor carried before the store lets it go: past half the carry age it counts as rolled, as the
  // store's own retention rolls an expired active segment.
  const half = policy.carryAfterMs > 0 ? Math.floor(policy.carryAfterMs / 2) : -1;
  const activeRolled = half >= 0 && segments[active]!.rollingTimestamp >= 0 && now - segments[active]!.rollingTimestamp > half;
  const closed = activeRolled ? segments.length : active;
  let uncleanable = activeRolled ? extent.nextOffset : activeBase;
  const from = firstSegmentReaching(segments, firstDirty);
  const minLag = Math.max(policy.minCompactionLagMs, 0);
  if (minLag > 0) {
    for (let i = from; i < closed && firstDirty <= activeBase; i++) {
      if (segments[i]!.maxTimestamp > now - minLag) {
        uncleanable = Math.min(uncleanable, segments[i]!.base);
        break;
      }
    }
  }
  if (extent.unjudgedFrom !== undefined && extent.unjudgedFrom >= 0) uncleanable = Math.min(uncleanable, extent.unjudgedFrom);
  const bounded = Math.max(firstDirty, uncleanable);
  const firstUncleanable = activeRolled && bounded >= extent.nextOffset ? extent.nextOffset : floorSegment(segments, bounded);

  let cleanableBytes = 0;
  for (let i = from; firstUncleanable > firstDirty && i < segments.length && segments[i]!.base < firstUncleanable; i++) {
    const end = i + 1 < segments.length ? segments[i + 1]!.base : extent.nextOffset;
    if (end > firstDirty) cleanableBytes += segments[i]!.bytes;
  }
  const total = extent.cleanBytes + cleanableBytes;

  let earliest = Infinity;
  if (firstDirty <= activeBase) {
    for (let i = from; i < closed; i++) {
      const ts = segments[i]!.rollingTimestamp;
      if (ts > 0 && ts < earliest) earliest = ts;
    }
  }
  // Half the carry age bounds the lag too, so what would age out is cleaned in time to be carried.
  const maxLag = half >= 0 ? Math.min(Math.max(policy.maxCompactionLagMs, 0), half) : Math.max(policy.maxCompactionLagMs, 0);
  const cleanUntil = now - maxLag;
  return {
    firstDirty,
    firstUncleanable,
    cleanBytes: extent.cleanBytes,
    cleanableBytes,
    dirtyRatio: total > 0 ? cleanableBytes / total : 0,
    compactionDelayMs: earliest < cleanUntil ? cleanUntil - earliest : 0,
  };
}

/** Kafka's filter in grabFilthiestCompactedLog. */
export function needsCleaning(range: CleanableRange, policy: TopicPolicy): boolean {
  if (range.cleanBytes + range.cleanableBytes <= 0) return false;
  return (range.compactionDelayMs > 0 && range.cleanableBytes > 0) || range.dirtyRatio > policy.minCleanableDirtyRatio;
}
