/**
 * Which compacted partitions this replica's clients use, so that a replica indexes only those
 * (and the ones it carries), not every partition the store holds (docs/operating.md, "Lazy
 * indexing"). The main thread notes every client Fetch, Produce and ListOffsets of a compacted
 * partition (DemandNotes) and tells the worker at most once per `resendMs` per partition; the
 * worker's indexer keeps a partition while it was asked for within its idle time
 * (PartitionDemand), and lets it go after.
 */
import { partitionKey } from '../partition-key.js';

/** The main thread's side: notes client uses, sends each partition's at most once per resendMs, a tick's worth at once. */
export class DemandNotes {
  private readonly sent = new Map<string, number>();
  private pending: [string, number][] = [];

  constructor(
    private readonly send: (partitions: [string, number][]) => void,
    private readonly resendMs: number,
    private readonly clock: () => number = Date.now,
  ) {}

  note(topic: string, partition: number): void {
    const key = partitionKey(topic, partition);
    const now = this.clock();
    const last = this.sent.get(key);
    if (last !== undefined && now - last < this.resendMs) return;
    this.sent.set(key, now);
    this.pending.push([topic, partition]);
    if (this.pending.length === 1) queueMicrotask(() => this.flush());
  }

  /** A new worker knows nothing yet: every partition is sent again at its next use. */
  forget(): void {
    this.sent.clear();
  }

  private flush(): void {
    const partitions = this.pending;
    this.pending = [];
    if (partitions.length > 0) this.send(partitions);
  }
}

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
