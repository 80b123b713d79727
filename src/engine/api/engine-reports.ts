/**
 * What the engine reports: per partition where indexing and cleaning stand, what each clean and
 * carry did, and the cleaner's figures, for the main thread's metrics and admin routes and for
 * `kcompact status`/`inspect`.
 */
import type { CarryCapacity } from './carry-capacity.js';

export interface PartitionStatus {
  topic: string;
  partition: number;
  topicId: string;
  /** Upstream leader being fetched from (-1: unknown now). */
  leader: number;
  /** The next offset to index; highWatermark - nextOffset is how far indexing lags. */
  nextOffset: number;
  highWatermark: number;
  lastStableOffset: number;
  logStartOffset: number;
  /** The cleaner's first dirty offset (what the index view calls cleanedUpTo). */
  cleanedUpTo: number;
  /** Offsets the index holds (survivors below cleanedUpTo plus everything above). */
  indexedRecords: number;
  dirtyRatio: number;
  tombstonesPending: number;
  lastCleanMs: number;
  /** The last carry pass this replica's index read whole (whoever carried it): its id, -1 before any. */
  lastPass: number;
  /** When that pass wrote its copies (epoch ms, as the store stamped it; -1 before any). */
  lastPassMs: number;
  /** Whether this replica carries the partition (the carrier group's assignment). */
  carried: boolean;
  /** When a client of this replica last used the partition (epoch ms; -1: none has, it is indexed only because this replica carries it). */
  usedMs: number;
  uncleanable: boolean;
  lastError?: string;
}

/** A partition looked at closely (`kcompact inspect`): costs a count over the cleaned part. */
export interface PartitionDetail extends PartitionStatus {
  /** Offsets kept below cleanedUpTo: what a reader of the cleaned part sees. */
  survivors: number;
  /** Where the cleanable range ends now (the active segment, the last stable offset, min.compaction.lag.ms). */
  firstUncleanable: number;
  cleanBytes: number;
  cleanableBytes: number;
  /** Virtual segments, the active one included. */
  segments: number;
  /** How the index compares keys (the keyIdentity setting it was built with); '' before any key. */
  keyIdentity: string;
}

export interface EngineStatus {
  partitions: PartitionStatus[];
  cleaner: CleanerStats;
  /** This replica's membership of the carrier group, where it joins one. */
  carrierGroup?: CarrierGroupStatus;
  /** Bytes of record batches the indexer read from the store: to index them, and to find new indexes' last carry pass. */
  reads?: { indexBytes: number; locateBytes: number };
  /** Whether carryBytesPerSecond can rewrite what this replica carries within the carry ages; absent when unbounded or nothing is carried. */
  carryCapacity?: CarryCapacity;
}

export interface PartitionCleaned extends CleanOutcome {
  topic: string;
  partition: number;
  dirtyRatio: number;
}

export interface RetentionApplied {
  topic: string;
  partition: number;
  logStartOffset: number;
  /** Whether the upstream moved its log start too (DeleteRecords accepted). */
  upstream: boolean;
}

export interface CleanReport {
  cleaned: PartitionCleaned[];
  carried: CarryOutcome[];
  retention: RetentionApplied[];
  /** Partitions whose clean failed in this run. */
  failed: { topic: string; partition: number; error: string }[];
}

export interface CleanerStats {
  /** When the last round started (epoch ms; 0 before the first). */
  lastRunMs: number;
  /** Largest dirty ratio seen in the last round (0-1). */
  maxDirtyRatio: number;
  /** Largest compaction delay seen in the last round (ms past max.compaction.lag.ms). */
  maxCompactionDelayMs: number;
  /** Longest single partition clean in the last round that cleaned anything (ms). */
  maxCleanTimeMs: number;
  cleansTotal: number;
  reapedTotal: number;
  uncleanable: { topic: string; partition: number }[];
  /** The carrier's totals, when this replica carries. */
  carry?: CarrierStats;
  /** Where a store caps retention: the partition with the least time left, as a share of its store retention, at the last round. */
  carryMargin?: CarryMargin;
}

export interface CarryMargin {
  topic: string;
  partition: number;
  /** Time left before the store may let the partition's oldest needed record go (negative: it may have). */
  marginMs: number;
  /** marginMs over the store's retention. */
  ratio: number;
}

export interface CarrierGroupStatus {
  groupId: string;
  /** 'joining' until a generation's assignment holds, and again while the group rebalances. */
  state: 'joining' | 'stable';
  memberId: string;
  generation: number;
  leader: boolean;
  carried: { topic: string; partition: number }[];
  /** The last failure to join or stay in the group, while it lasts. */
  lastError?: string;
}

export interface CarryOutcome {
  topic: string;
  partition: number;
  /** The offset of the pass's start marker: its id. */
  pass: number;
  copies: number;
  /** Bytes of copy batches written. */
  bytesWritten: number;
  /** Bytes of the store read to find them. */
  bytesRead: number;
  releaseEnd: number;
  /** Whether the store let the whole range go (DeleteRecords accepted). */
  released: boolean;
  /** The share group whose start offset the store keeps the range from (the pass let go only below it). */
  keptFor?: ShareGroupStart;
  durationMs: number;
  /** Of which: writing the copies, and waiting for the index to read the pass back. */
  copyMs: number;
  readBackMs: number;
}

export interface CarrierStats {
  passesTotal: number;
  copiesTotal: number;
  bytesWrittenTotal: number;
  failuresTotal: number;
  /** Passes stopped because this replica was no longer the partition's carrier. */
  fencedTotal: number;
  /** Bytes of the store read to find the survivors' batches, by passes whole or not. */
  bytesReadTotal: number;
  /** Partitions whose last pass keeps (part of) its range for a share group, or because the store could not say where they stand. */
  heldPartitions: number;
  /** Time passes waited for carryBytesPerSecond and for the store's throttle_time_ms. */
  pacing?: PacingStats;
}

export interface CleanOutcome {
  firstDirty: number;
  endOffset: number;
  /** Rows reaped: superseded, keyless, aborted, expired tombstones and markers. */
  removed: number;
  tombstonesRemoved: number;
  markersRemoved: number;
  durationMs: number;
}

export interface OffsetAtTime {
  /** The index's answer, or null when no indexed record qualifies. */
  found: { offset: number; timestamp: number } | null;
  /** Where the index ends: the store's answer stands for records from here on. */
  indexedUpTo: number;
  /**
   * A new index that serves the store's last pass as it found it (pass-locator.ts) and has not
   * read the records' times yet: it has no answer, and the store's would name copies.
   */
  unread: boolean;
}

/** ListOffsets' MAX_TIMESTAMP (KIP-734). */
export const MAX_TIMESTAMP = -3;

/** A share group reading the partition, and where it stands. */
export interface ShareGroupStart {
  group: string;
  offset: number;
}

export interface PacingStats {
  /** Time passes waited for carryBytesPerSecond. */
  pacedMsTotal: number;
  /** Time passes waited for a broker's throttle_time_ms, and answers that asked for it. */
  throttledMsTotal: number;
  throttlesTotal: number;
}
