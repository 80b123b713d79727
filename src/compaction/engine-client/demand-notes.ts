/**
 * The main thread's side of lazy indexing (docs/operating.md, "Lazy indexing"): every client
 * Fetch, Produce and ListOffsets of a compacted partition is noted, and the worker is told of
 * each partition at most once per `resendMs` (the worker's side: engine/indexer/partition-demand.ts).
 */
import { partitionKey } from '../../engine/api/partition-key.js';

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
