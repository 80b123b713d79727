/**
 * The engine's settings, one typed object per component, as the main thread hands them to the
 * worker (engine-protocol.ts).
 */

export interface IndexerOptions {
  /** Long-poll wait of each fetch (default 500 ms; also how soon a new partition joins a loop). */
  maxWaitMs?: number;
  /**
   * Bytes a fetch waits for, up to maxWaitMs (default 1 MiB). Each partition with news costs a
   * write transaction of its own: with many partitions trickling, a fetch that answered at the
   * first byte would come back at once with a record or two in each, over and over.
   */
  minBytes?: number;
  /** Bytes per fetch answer (default 32 MiB) and per partition (default 8 MiB). */
  maxBytes?: number;
  partitionMaxBytes?: number;
  /** How often metadata is refreshed without a reason to (default 10 s). */
  metadataIntervalMs?: number;
  /** Longest backoff after upstream errors (default 10 s). */
  maxBackoffMs?: number;
}
