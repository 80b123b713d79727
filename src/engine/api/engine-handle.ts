/**
 * The engine as the main thread holds it: what the filters, ops and the CLI ask of the compaction
 * worker (engine-client/compaction-engine.ts starts it and implements this over engine-protocol.ts).
 */
import type { IndexView } from './index-view.js';
import type { TopicPolicy } from './topic-policy.js';
import type { CleanReport, EngineStatus, OffsetAtTime, PartitionDetail } from './engine-reports.js';
import type { RebuildingPartition } from './engine-protocol.js';
import type { TableReads } from './table-reads.js';

export interface CompactionEngine {
  /** Survivors per compacted partition, for the fetch view. */
  readonly index: IndexView;
  /**
   * The compacted topics and their policies, authoritative: indexes of topics not listed are
   * deleted. Call it once the topic-config layer has loaded, and again on every change.
   */
  setPolicies(policies: ReadonlyMap<string, TopicPolicy>): void;
  /** Cleans the topic's partitions (every compacted topic's when omitted) now. */
  compactNow(topic?: string): Promise<CleanReport>;
  status(): Promise<EngineStatus>;
  /** The topic's indexed partitions in detail (survivors counted). */
  inspect(topic: string): Promise<PartitionDetail[]>;
  /** ListOffsets by timestamp from the partition's index (PartitionStore.offsetForTime); null when it is not indexed. */
  offsetForTime(topic: string, partition: number, timestamp: number): Promise<OffsetAtTime | null>;
  /**
   * Drops the indexes of a compacted topic (of every one when omitted) and indexes it again from
   * the upstream; resolves once they are dropped, with how far each had reached.
   */
  rebuildIndex(topic?: string): Promise<RebuildingPartition[]>;
  /** The table API's reads of compacted partitions, from their indexes (docs/tables.md). */
  readonly tables: TableReads;
  /** Stops indexing and cleaning, checkpoints and closes every index, ends the worker. */
  close(): Promise<void>;
}
