/**
 * Time and size retention for cleanup.policy=compact,delete: Kafka's UnifiedLog.deleteOldSegments
 * over virtual segments. Oldest first, whole segments: first while the log is more than
 * retention.bytes larger than it may be by at least the segment's size, then while a segment's
 * largest timestamp is more than retention.ms old. A segment goes only if it lies wholly below
 * the high watermark, and an empty last segment never goes. The new log start is the base of the
 * first segment kept (the index's end when none is).
 */
import type { TopicPolicy } from '../api/topic-policy.js';
import type { Segment } from '../store/segment-roller.js';

export interface RetentionInput {
  segments: readonly Segment[];
  /** Current bytes of each segment (after cleaning); only read when retention.bytes applies. */
  sizeOf: (index: number) => number;
  totalBytes: number;
  /** The index's end (the log end as far as the index knows it). */
  endOffset: number;
  highWatermark: number;
  now: number;
}

/** The log start retention asks for, or undefined when no segment is due. */
export function retentionStart(input: RetentionInput, policy: TopicPolicy): number | undefined {
  const { segments, endOffset, highWatermark, now } = input;
  const n = segments.length;
  const deletable = (i: number): boolean => {
    const upper = i + 1 < n ? segments[i + 1]!.base : endOffset;
    const lastAndEmpty = i === n - 1 && segments[i]!.bytes === 0;
    return highWatermark >= upper && !lastAndEmpty;
  };
  let gone = 0;
  if (policy.retentionBytes >= 0 && input.totalBytes >= policy.retentionBytes) {
    let excess = input.totalBytes - policy.retentionBytes;
    while (gone < n && deletable(gone)) {
      const size = input.sizeOf(gone);
      if (excess - size < 0) break;
      excess -= size;
      gone++;
    }
  }
  if (policy.retentionMs >= 0) {
    while (gone < n && deletable(gone) && now - segments[gone]!.maxTimestamp > policy.retentionMs) gone++;
  }
  if (gone === 0) return undefined;
  return gone < n ? segments[gone]!.base : endOffset;
}
