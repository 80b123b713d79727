import type { TopicPolicy } from '../../src/engine/api/topic-policy.js';

/** Kafka's defaults for a compacted topic. */
export const DEFAULT_POLICY: TopicPolicy = {
  compact: true,
  delete: false,
  deleteRetentionMs: 86_400_000,
  minCompactionLagMs: 0,
  maxCompactionLagMs: Number.MAX_SAFE_INTEGER,
  minCleanableDirtyRatio: 0.5,
  segmentMs: 604_800_000,
  segmentBytes: 1_073_741_824,
  retentionMs: -1,
  retentionBytes: -1,
  storeRetentionMs: -1,
  carryAfterMs: -1,
};
