/**
 * The compaction settings of one topic as the proxy enforces them, and the read side of the
 * topic-config layer that the produce guard, the fetch view, the indexer and the cleaner consult.
 * The config layer (src/compaction/config/) is the one place that parses, validates, stores and
 * describes these settings; everything else reads them through TopicConfigView.
 */
export interface TopicPolicy {
  /** cleanup.policy contains "compact". */
  compact: boolean;
  /** cleanup.policy contains "delete". */
  delete: boolean;
  deleteRetentionMs: number;
  minCompactionLagMs: number;
  maxCompactionLagMs: number;
  minCleanableDirtyRatio: number;
  segmentMs: number;
  segmentBytes: number;
  /** -1: unlimited. Applies on top of compaction for compact,delete. */
  retentionMs: number;
  retentionBytes: number;
  /**
   * How long the store keeps a record of the topic by time (its effective retention.ms), -1
   * when it keeps everything: what carrying must beat (docs/carrying.md).
   */
  storeRetentionMs: number;
  /** The age at which the store's records are carried again: a share of storeRetentionMs, -1 when it keeps everything. */
  carryAfterMs: number;
}

export interface TopicConfigView {
  /** The effective policy of a topic whose cleanup.policy contains compact; undefined otherwise. */
  compacted(topic: string): TopicPolicy | undefined;
  /** Every topic currently compacted. */
  compactedTopics(): string[];
  /** Called after a topic's effective policy changed, appeared or went away. Returns an unsubscribe. */
  onChange(listener: (topic: string) => void): () => void;
}
