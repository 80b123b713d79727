/**
 * Which compacted partitions this replica's clients use, so that a replica indexes only those
 * (and the ones it carries), not every partition the store holds (docs/operating.md, "Lazy
 * indexing"). The main thread tells the worker of each use (demand-notes.ts); the worker's
 * indexer keeps a partition while it was asked for within its idle time, and lets it go after.
 */
import { partitionKey } from '../api/partition-key.js';

/** The worker's side: when each partition was last asked for. */
export class PartitionDemand {
  private readonly asked = new Map<string, number>();

  constructor(
    /** How long a partition stays wanted after its last use. */
    readonly idleMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  ask(topic: string, partition: number): void {
    this.asked.set(partitionKey(topic, partition), this.clock());
  }

  /** When the partition was last asked for (epoch ms), or undefined. */
  lastUsed(topic: string, partition: number): number | undefined {
    return this.asked.get(partitionKey(topic, partition));
  }

  wanted(topic: string, partition: number): boolean {
    const at = this.asked.get(partitionKey(topic, partition));
    return at !== undefined && this.clock() - at < this.idleMs;
  }
}
