/**
 * Virtual segments. The upstream's own segments are invisible through the Kafka protocol, yet
 * Kafka's cleaner works in segments: the active one is never cleaned, min.compaction.lag.ms and
 * max.compaction.lag.ms look at whole segments, retention deletes whole segments. So the index
 * rolls its own, batch by batch, with the rules of Kafka's LogSegment.shouldRoll: a new segment
 * starts at a batch when the open one is non-empty and either the batch would take it past
 * segment.bytes or the batch's largest timestamp is more than the roll interval past the open
 * segment's first batch (LogConfig.maxSegmentMs: for compacted topics min(segment.ms,
 * max.compaction.lag.ms)). Kafka also rolls when a segment would span more than 2^31 offsets.
 *
 * Rolling happens as batches are indexed, with the policy in force then, which is also how a
 * config change acts in Kafka (existing segments keep their shape). A rebuilt index re-rolls
 * history with the current policy.
 */
import type { TopicPolicy } from '../api/topic-policy.js';

export interface RollPolicy {
  segmentBytes: number;
  maxSegmentMs: number;
  /**
   * Whether kcompact's own batches (a pass's markers and copies, indexed with no bytes of their
   * own) roll a segment on time like a client's. In Kafka only an append rolls the active
   * segment, and an idle topic's active segment is never cleaned; kcompact's records are no
   * client's append, so they do not, except on a store that caps retention, where the records
   * of an idle topic's active segment must be cleaned and carried before the store lets them go.
   */
  ownBatchesRoll?: boolean;
}

export interface Segment {
  base: number;
  /** The largest timestamp of the segment's first batch (Kafka's rollingBasedTimestamp). */
  rollingTimestamp: number;
  /** The largest timestamp of any batch in it. */
  maxTimestamp: number;
  /** Bytes of the batches as the upstream holds them. */
  bytes: number;
}

const MAX_RELATIVE_OFFSET = 2 ** 31 - 1;

/**
 * On a store that caps retention, segments also roll within half the carry age, so that the
 * cleaner can clean, and the carrier carry, what ages before the store lets it go.
 */
export function rollPolicy(policy: TopicPolicy): RollPolicy {
  let maxSegmentMs = policy.compact && policy.maxCompactionLagMs > 0 ? Math.min(policy.maxCompactionLagMs, policy.segmentMs) : policy.segmentMs;
  if (policy.carryAfterMs > 0) maxSegmentMs = Math.min(maxSegmentMs, Math.floor(policy.carryAfterMs / 2));
  return { segmentBytes: policy.segmentBytes, maxSegmentMs, ownBatchesRoll: policy.carryAfterMs > 0 };
}

export function shouldRoll(open: Segment, batchBytes: number, batchMaxTimestamp: number, batchLast: number, policy: RollPolicy): boolean {
  if (open.bytes === 0) return false;
  if (open.bytes > policy.segmentBytes - batchBytes) return true;
  // Like Kafka, a segment whose first batch has no timestamp (-1) never rolls on time here;
  // Kafka would fall back to the broker's wall clock, which a replica cannot know.
  if (open.rollingTimestamp >= 0 && batchMaxTimestamp - open.rollingTimestamp > policy.maxSegmentMs) return true;
  return batchLast - open.base > MAX_RELATIVE_OFFSET;
}

/**
 * Adds a batch to the open segment, or rolls a new one starting at `first`. Returns the segment
 * that now holds the batch (the same object, updated, when it did not roll).
 */
export function appendToSegment(open: Segment | undefined, first: number, last: number, bytes: number, maxTimestamp: number, policy: RollPolicy): Segment {
  // kcompact's own batches (no bytes of their own) join the open segment as they are.
  if (bytes === 0 && !policy.ownBatchesRoll) return open ?? { base: first, rollingTimestamp: -1, maxTimestamp, bytes: 0 };
  if (!open || shouldRoll(open, bytes, maxTimestamp, last, policy)) {
    return { base: first, rollingTimestamp: maxTimestamp, maxTimestamp, bytes };
  }
  if (open.bytes === 0) open.rollingTimestamp = maxTimestamp;
  open.bytes += bytes;
  if (maxTimestamp > open.maxTimestamp) open.maxTimestamp = maxTimestamp;
  return open;
}
