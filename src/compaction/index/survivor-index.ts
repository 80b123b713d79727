/**
 * The main thread's IndexView: the latest survivor snapshot of every indexed partition, swapped
 * in whole as the worker publishes them, so a reader never sees half a clean.
 */
import type { IndexView, PartitionIndexView } from '../index-view.js';
import { SurvivorSet, type SurvivorSnapshot } from './survivor-set.js';

export class SurvivorIndex implements IndexView {
  private readonly topics = new Map<string, Map<number, SurvivorSet>>();

  constructor(
    /** Asks the worker's indexer (Indexer.caughtUp). */
    readonly caughtUp: (topic: string, partition: number, timeoutMs: number) => Promise<boolean>,
    /** Tells the worker's indexer (partition-demand.ts). */
    readonly used: (topic: string, partition: number) => void = () => undefined,
  ) {}

  partition(topic: string, partition: number): PartitionIndexView | undefined {
    return this.topics.get(topic)?.get(partition);
  }

  /** Installs a partition's new snapshot, or forgets the partition (null). */
  apply(topic: string, partition: number, snapshot: SurvivorSnapshot | null): void {
    let partitions = this.topics.get(topic);
    if (snapshot === null) {
      partitions?.delete(partition);
      if (partitions?.size === 0) this.topics.delete(topic);
      return;
    }
    if (!partitions) this.topics.set(topic, (partitions = new Map()));
    partitions.set(partition, new SurvivorSet(snapshot));
  }
}
