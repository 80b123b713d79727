import type { CarriedSnapshot } from './index/survivor-set.js';

/**
 * What the fetch view reads from the key index of one partition. Offsets are plain numbers:
 * exact below 2^53, which no real log reaches.
 *
 * The cleaner is the only writer of survivorship: below cleanedUpTo() only the offsets the
 * cleaner kept remain in the index; from cleanedUpTo() on, everything the upstream holds is
 * visible, as in Kafka's log before its cleaner has passed.
 */
export interface PartitionIndexView {
  /** The first offset the cleaner has not yet covered (0 before any clean). */
  cleanedUpTo(): number;
  /** Surviving offsets in [from, to) that are below cleanedUpTo(), ascending. */
  survivors(from: number, to: number): Float64Array;
  /** How many survivors survivors(from, to) would give. */
  survivorCount(from: number, to: number): number;
  /** The first surviving offset >= offset, or cleanedUpTo() when none remains below it. */
  nextVisible(offset: number): number;
  /** Where the records are in the store, once a carry pass has moved some (docs/carrying.md). */
  carried(): CarriedSnapshot | undefined;
  /** How far the index has read the store, and where what clients see of it ends; undefined until the worker said. */
  end(): LogEnd | undefined;
}

/**
 * Where a partition's log ends for its clients (docs/carrying.md, "The end of the log"): from
 * visibleEnd to indexedTo the store holds only kcompact's own records and records the cleaner
 * removed, so a client there is at the end, as in Kafka's log, whose last offset always holds a
 * record clients see.
 */
export interface LogEnd {
  /** The next offset the index reads. */
  indexedTo: number;
  /** The offset after the last record a client sees, as of indexedTo. */
  visibleEnd: number;
}

export interface IndexView {
  /** The index of a compacted partition, or undefined when it is not (yet) indexed. */
  partition(topic: string, partition: number): PartitionIndexView | undefined;
  /**
   * Whether the partition's index has read, within timeoutMs, what the store holds as stable
   * now: once it has, partition() shows every carry pass the store holds (a replica just
   * started, or one whose index lags, may not know yet what another replica carried).
   */
  caughtUp(topic: string, partition: number, timeoutMs: number): Promise<boolean>;
  /** A client of this replica reads or writes the partition: its index is built, and kept while that goes on. */
  used(topic: string, partition: number): void;
}

/** A compacted partition whose index is not there yet (a replica just started, a topic just made compacted). */
export const NOT_INDEXED: PartitionIndexView = {
  cleanedUpTo: () => 0,
  survivors: () => new Float64Array(0),
  survivorCount: () => 0,
  nextVisible: (offset) => offset,
  carried: () => undefined,
  end: () => undefined,
};

const HELD_POLL_MS = 10;

/**
 * Waits, at most waitMs, for the partition's index to catch up (true) or for `held()` to become
 * true first ('held'): what a replica learns from a pass it found in the store (pass-locator.ts)
 * can answer a client before its index has read the rest. False when neither came in time.
 */
export function caughtUpOrHeld(index: IndexView, topic: string, partition: number, waitMs: number, held: () => boolean): Promise<boolean | 'held'> {
  const wait = Math.max(0, waitMs);
  let timer: NodeJS.Timeout | undefined;
  const heldWithin = new Promise<'held'>((resolve) => {
    const deadline = Date.now() + wait;
    const poll = () => {
      if (held()) resolve('held');
      else if (Date.now() < deadline) timer = setTimeout(poll, HELD_POLL_MS).unref();
    };
    poll();
  });
  return Promise.race([index.caughtUp(topic, partition, wait).catch(() => false), heldWithin]).finally(() => clearTimeout(timer));
}
