/**
 * The partitions of the compacted topics as the metadata loop found them (one tail each), which
 * of them this replica indexes, and the index each one writes to: what the indexer's loops
 * (metadata-loop.ts, fetch-loops.ts) share.
 */
import type { PartitionStore } from '../store/partition-store.js';
import type { RollPolicy } from '../store/segment-roller.js';
import type { StoreRegistry } from '../store/store-registry.js';
import { partitionKey } from '../api/partition-key.js';

export interface TailStatus {
  topic: string;
  partition: number;
  /** The broker fetched from; -1 while unknown. */
  leader: number;
  lastError?: string;
}

export interface Tail {
  topic: string;
  partition: number;
  /** From the last metadata answer ('' while unknown). */
  topicId: string;
  /** Reading the store for its last whole pass before indexing it (pass-location.ts); not fetched meanwhile. */
  locating: boolean;
  leader: number;
  roll: RollPolicy;
  /** In a fetch now (a leader change may start a second loop before the first returns). */
  busy: boolean;
  /** The fetch it is in is a long poll, which the catch-up loop may overtake (fetch-loops.ts). */
  longPolled?: boolean;
  /** Counts the fetches that took it: an answer for an earlier take than the last is not used. */
  claims: number;
  retryAt: number;
  /** Fetched answers in a row whose key schemas the registry did not give (the backoff grows with them). */
  schemaFailures: number;
  /** Attempts in a row that the storage of the index failed (the backoff grows with them). */
  storageFailures: number;
  lastError?: string;
  /** Fetched as soon as it has anything (the table API reads it, or it holds conditional records): no waiting for minBytes. */
  eager?: boolean;
  /** The index a fetch answered for last (fetch-loops.ts): a new or reopened one counts as behind until fetched. */
  positioned?: PartitionStore;
  /** Where a read that was to catch the index up brought nothing: the long polls take it from there. */
  stalledAt?: number;
  /** An end something waits for the index to reach (Indexer.readUpTo): behind until it has read it. */
  awaitedEnd?: number;
}

export function newTail(topic: string, partition: number, roll: RollPolicy): Tail {
  return { topic, partition, topicId: '', locating: false, leader: -1, roll, busy: false, claims: 0, retryAt: 0, schemaFailures: 0, storageFailures: 0 };
}

export class Tails {
  private readonly byKey = new Map<string, Tail>();
  /** Which partitions to index; the others are known from metadata only. */
  wanted: (topic: string, partition: number) => boolean = () => true;

  constructor(private readonly registry: StoreRegistry) {}

  get size(): number {
    return this.byKey.size;
  }

  get(topic: string, partition: number): Tail | undefined {
    return this.byKey.get(partitionKey(topic, partition));
  }

  add(tail: Tail): void {
    this.byKey.set(partitionKey(tail.topic, tail.partition), tail);
  }

  values(): IterableIterator<Tail> {
    return this.byKey.values();
  }

  /** Stops tailing the topic's partitions; what was removed. */
  dropTopic(topic: string): Tail[] {
    const dropped: Tail[] = [];
    for (const [key, tail] of this.byKey) {
      if (tail.topic !== topic) continue;
      this.byKey.delete(key);
      dropped.push(tail);
    }
    return dropped;
  }

  /** Whether the tail is still its partition's: it may have been dropped or replaced while a request was out. */
  isCurrent(tail: Tail): boolean {
    return this.byKey.get(partitionKey(tail.topic, tail.partition)) === tail;
  }

  isWanted(tail: Tail): boolean {
    return this.wanted(tail.topic, tail.partition);
  }

  /** The wanted tails whose leader is the broker. */
  ofLeader(nodeId: number): Tail[] {
    return [...this.byKey.values()].filter((t) => t.leader === nodeId && this.isWanted(t));
  }

  /** The tail's index (the registry may have replaced it after a reset). */
  storeOf(tail: Tail): PartitionStore {
    return this.registry.ensure(tail.topic, tail.partition);
  }
}

export function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
