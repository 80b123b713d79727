/**
 * The messages between the proxy's main thread and the compaction worker. Survivor snapshots
 * travel with their buffers transferred, not copied.
 */
import type { LogLevel } from '../../common/log.js';
import type { TopicPolicy } from './topic-policy.js';
import type { LogEnd } from './index-view.js';
import type { EngineOptions } from './engine-options.js';
import type { SurvivorSnapshot } from './survivor-set.js';
import type { CleanReport, EngineStatus, OffsetAtTime, PartitionDetail } from './engine-reports.js';
import type { Behind, ChangesAnswer, LatestAnswer, TableKey, VerdictAnswer, WrittenRecord } from './table-reads.js';

/** The worker's workerData: the engine's options as the settings built them, whole. */
export interface WorkerConfig extends EngineOptions {
  /** The lowest level the main thread's logger writes; the worker does not send lower ones. */
  logLevel: LogLevel;
}

export type ToWorker =
  | { type: 'policies'; policies: [string, TopicPolicy][] }
  /** Partitions this replica's clients used (partition-demand.ts). */
  | { type: 'demand'; partitions: [string, number][] }
  | { type: 'compact'; id: number; topic?: string }
  | { type: 'status'; id: number }
  | { type: 'inspect'; id: number; topic: string }
  /** ListOffsets by timestamp of an indexed partition, answered from its rows (PartitionStore.offsetForTime). */
  | { type: 'offsetForTime'; id: number; topic: string; partition: number; timestamp: number }
  /** Whether the partition's index reads what the upstream holds as stable now, within timeoutMs (Indexer.caughtUp). */
  | { type: 'caughtUp'; id: number; topic: string; partition: number; timeoutMs: number }
  /** Drops the indexes of the topic (every compacted topic when omitted) and indexes it again from the upstream. */
  | { type: 'rebuild'; id: number; topic?: string }
  /** The table API's reads (table-reads.ts), answered from the partition's index. */
  | { type: 'tableLatest'; id: number; topic: string; partition: number; key: TableKey; atLeast: number; timeoutMs: number }
  | { type: 'tableVerdict'; id: number; topic: string; partition: number; offset: number; timeoutMs: number; written?: WrittenRecord }
  /** A conditional write of the table API is on its way (TableReads.expect): what its verdict would be, each time the index moves, until forgotten. */
  | { type: 'tableExpect'; write: number; topic: string; partition: number; written: WrittenRecord }
  | { type: 'tableForget'; write: number }
  | { type: 'tableChanges'; id: number; topic: string; partition: number; from: number; key: TableKey | null; limit: number; waitMs: number }
  | { type: 'close'; id: number };

/** The requests the main thread waits on: each has an id its reply carries back. */
export type EngineRequest = Extract<ToWorker, { id: number }>;

/** What the worker answers each request with: the one place that pairs a request with its reply. */
export interface EngineReplies {
  compact: CleanReport;
  status: EngineStatus;
  inspect: PartitionDetail[];
  offsetForTime: OffsetAtTime | null;
  caughtUp: boolean;
  rebuild: RebuildingPartition[];
  tableLatest: LatestAnswer | Behind;
  tableVerdict: VerdictAnswer | Behind;
  tableChanges: ChangesAnswer;
  close: void;
}

export type EngineReply<R extends EngineRequest> = EngineReplies[R['type']];

/** A partition whose index a rebuild dropped, and how far that index had reached. */
export interface RebuildingPartition {
  topic: string;
  partition: number;
  /** The dropped index's next offset: the rebuilt one has caught up once it is there again. */
  indexedUpTo: number;
}

export interface SerializedError {
  name: string;
  message: string;
  stack?: string;
  /** A TableError's HTTP status. */
  status?: number;
}

export type FromWorker =
  | { type: 'ready' }
  | { type: 'snapshot'; topic: string; partition: number; snapshot: SurvivorSnapshot | null }
  /** Where the partition's log ends for clients (index-view.ts LogEnd), each time that moves. */
  | { type: 'end'; topic: string; partition: number; end: LogEnd }
  | { type: 'log'; level: LogLevel; msg: string; fields?: Record<string, unknown> }
  /** An expected write (tableExpect) would have this verdict if the store put it at `at`, where the index ends now. */
  | { type: 'foreseen'; write: number; at: number; verdict: 'won' | 'void' }
  | { type: 'reply'; id: number; ok: true; value: unknown }
  | { type: 'reply'; id: number; ok: false; error: SerializedError };
