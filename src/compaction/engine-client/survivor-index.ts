/**
 * The main thread's IndexView: the latest survivor snapshot of every indexed partition, swapped
 * in whole as the worker publishes them, so a reader never sees half a clean.
 */
import type { IndexView, LogEnd, PartitionIndexView } from '../../engine/api/index-view.js';
import { partitionKey } from '../../engine/api/partition-key.js';
import { SurvivorSet, type SurvivorSnapshot } from '../../engine/api/survivor-set.js';

export class SurvivorIndex implements IndexView {
  private readonly topics = new Map<string, Map<number, SurvivorSet>>();
  /** Each partition's log end, which may come before its first snapshot. */
  private readonly ends = new Map<string, LogEnd>();
  /** Those waiting for a partition's next snapshot or log end (changed()). */
  private readonly waiting = new Map<string, Set<() => void>>();

  constructor(
    /** Asks the worker's indexer (Indexer.caughtUp). */
    readonly caughtUp: (topic: string, partition: number, timeoutMs: number) => Promise<boolean>,
    /** Tells the worker's indexer (partition-demand.ts). */
    readonly used: (topic: string, partition: number) => void = () => undefined,
  ) {}

  partition(topic: string, partition: number): PartitionIndexView | undefined {
    return this.topics.get(topic)?.get(partition);
  }

  changed(topic: string, partition: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      if (signal.aborted) return;
      const key = partitionKey(topic, partition);
      let waiters = this.waiting.get(key);
      if (!waiters) this.waiting.set(key, (waiters = new Set()));
      const waiter = () => {
        signal.removeEventListener('abort', forget);
        resolve();
      };
      const forget = () => {
        waiters.delete(waiter);
        if (waiters.size === 0 && this.waiting.get(key) === waiters) this.waiting.delete(key);
      };
      waiters.add(waiter);
      signal.addEventListener('abort', forget, { once: true });
    });
  }

  /** Installs a partition's new snapshot, or forgets the partition (null). */
  apply(topic: string, partition: number, snapshot: SurvivorSnapshot | null): void {
    let partitions = this.topics.get(topic);
    if (snapshot === null) {
      partitions?.delete(partition);
      if (partitions?.size === 0) this.topics.delete(topic);
      this.ends.delete(partitionKey(topic, partition));
    } else {
      if (!partitions) this.topics.set(topic, (partitions = new Map()));
      const set = new SurvivorSet(snapshot);
      set.logEnd = this.ends.get(partitionKey(topic, partition));
      partitions.set(partition, set);
    }
    this.wake(topic, partition);
  }

  /** Where the partition's log ends for clients, as its index last published it. */
  end(topic: string, partition: number): LogEnd | undefined {
    return this.ends.get(partitionKey(topic, partition));
  }

  applyEnd(topic: string, partition: number, end: LogEnd): void {
    this.ends.set(partitionKey(topic, partition), end);
    const set = this.topics.get(topic)?.get(partition);
    if (set) set.logEnd = end;
    this.wake(topic, partition);
  }

  private wake(topic: string, partition: number): void {
    const key = partitionKey(topic, partition);
    const waiters = this.waiting.get(key);
    if (!waiters) return;
    this.waiting.delete(key);
    for (const waiter of waiters) waiter();
  }
}
