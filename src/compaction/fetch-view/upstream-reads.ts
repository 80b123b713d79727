/**
 * What the fetch view asks of the upstream beyond forwarding the client's own request: reading
 * on past a stretch of removed records on the proxy's own connection, where a partition's log
 * starts and ends, and learning topic ids.
 */
import type { FetchResponseAbortedTransaction, FetchResponsePartitionData } from '../../protocol/messages.js';

export interface PartitionRead {
  topic: string;
  partition: number;
  fetchOffset: number;
  currentLeaderEpoch: number;
  maxBytes: number;
  /** 0 read_uncommitted, 1 read_committed, as the client asked. */
  isolationLevel: number;
}

export type AbortedTransaction = FetchResponseAbortedTransaction;

/** One partition of a Fetch answer, as the upstream gave it: what the view reads and changes. */
export type PartitionRecords = Pick<
  FetchResponsePartitionData,
  'errorCode' | 'highWatermark' | 'lastStableOffset' | 'logStartOffset' | 'abortedTransactions' | 'records'
>;

/** A partition read on the proxy's own connection, in memory that goes back for later reads. */
export interface UpstreamRead extends PartitionRecords {
  /** Gives the memory `records` lies in back for later reads: once nothing refers to it any more. */
  release(): void;
}

/** Where a partition's log starts and ends in the store, as its ListOffsets says. */
export interface StoreBounds {
  logStart: bigint;
  highWatermark: bigint;
  lastStable: bigint;
}

export interface UpstreamReads {
  /** A sessionless single-partition Fetch from the partition's leader that does not wait for data. */
  readPartition(read: PartitionRead): Promise<UpstreamRead>;
  /** The partition's log start, high watermark and last stable offset in the store. */
  bounds(topic: string, partition: number): Promise<StoreBounds>;
  /** Teaches the proxy's topic id map the names of these ids, where the upstream knows them. */
  resolveTopicIds(ids: string[]): Promise<void>;
}
