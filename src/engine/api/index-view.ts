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
  /** Set once the partition has met a conditional record (docs/tables.md): what clients may see of what the index read. */
  judged?: JudgedEnd;
}

/**
 * A partition with conditional records shows clients only what its index judged: a record past
 * `to` may be void on every replica, and none may show it first.
 */
export interface JudgedEnd {
  /** Records from here on are not judged yet: indexedTo, or the first record waiting for its verdict. */
  to: number;
  /** The void records past the cleaner's horizon, ascending (below it, no void record survives). */
  voids: number[];
  /**
   * The horizon `voids` starts at, as of this message: a conditional record in [voidsFrom, to)
   * won unless `voids` holds it. Verdicts never change, so that stays true after the horizon moves.
   */
  voidsFrom: number;
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
  /**
   * Resolves when the partition's index next shows something new (a snapshot, its log end), or
   * never once `signal` aborts: what a wait on partition() looks again after.
   */
  changed?(topic: string, partition: number, signal: AbortSignal): Promise<void>;
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

/** Where a carried partition's records are in the store (docs/carrying.md). */
export interface CarriedSnapshot {
  /**
   * Below it the records are served from their copies: the last whole pass's release end (its
   * copies answer there before the store lets the range go as well as after), or the store's log
   * start when that is higher.
   */
  copiesBelow: number;
  /** The compacted topic's own log start. */
  topicStart: number;
  /**
   * The last whole pass's copies lie between its start and end markers, in offset order of their
   * originals; -1 while no pass was seen whole (one was seen starting).
   */
  copiesFrom: number;
  copiesTo: number;
  /** Whether [copiesFrom, copiesTo] holds the pass's own records only (no client wrote there while it ran): reads skip it. */
  passOnly: boolean;
  /**
   * Pairs (original offset, copy offset), ascending: the first row each copy of that pass holds,
   * where to start reading the copies for a given offset.
   */
  marks: Float64Array;
  /**
   * The copies are served as the store holds them, every record of them: a replica whose index
   * has not read the pass yet found it by reading the store (pass-locator.ts).
   */
  asStored?: boolean;
  /**
   * The release records the store still holds, in log order (share groups read copies by them);
   * absent where there is none, or the index has not read the store yet (asStored).
   */
  releases?: PassReleaseSeen[];
}

/** A release record (carry-record.ts) as the index read it: its own offset and what it says. */
export interface PassReleaseSeen {
  at: number;
  pass: number;
  releasedEnd: number;
  groups: string[];
}
