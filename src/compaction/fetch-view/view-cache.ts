/**
 * The view's batches below the cleaner's horizon, kept in memory so that reading a compacted
 * partition again costs neither the upstream read of its raw log nor the filter. Reading a
 * compacted topic from offset 0 reads some ten times its surviving bytes from the upstream
 * (superseded records lie between the survivors); clients that do it again and again (a Streams
 * restore, a Connect worker starting, each new instance of a service) then read survivors only.
 *
 * What a batch below the horizon becomes depends on the upstream batch and the cleaner's
 * survivors alone, so an entry holds for as long as the partition's survivor snapshot does: a
 * clean publishes a new snapshot and the partition's entries go. Batches next to each other in
 * offsets are next to each other in the log (offsets are not reused), so the entries from the one
 * holding an offset up to the first gap are what an upstream read from that offset would return,
 * up to where the cache stops.
 *
 * Entries serve read_uncommitted fetches only: a read_committed answer also carries the aborted
 * transactions of the range, which the upstream gives per read. Partitions are dropped whole,
 * least recently read first, to stay within the byte budget.
 */

/** One upstream batch below the horizon and what the view made of it. */
export interface ViewedBatch {
  base: number;
  last: number;
  /** The upstream batch's size, for sizing reads on (read-size.ts). */
  rawBytes: number;
  recordCount: number;
  /** The batch as the client gets it: the upstream's bytes, rebuilt, or emptied. */
  bytes: Buffer;
  /** Records kept: all of them are at or after any fetch offset the entry is served for. */
  kept: number;
  /** Whether `bytes` are the view's own (rebuilt or emptied) rather than the upstream batch. */
  rebuilt: boolean;
  /** Set for a transaction marker: the producer whose transaction it ends. */
  markerOf: bigint | null;
}

/**
 * The cache's memory unless configured (the viewCacheBytes setting): room for the survivors of
 * a Connect worker's or a small Streams app's topics. Heavy reads leave the cache full, and at a
 * thousand partitions the proxy's RSS after them sits near its 300 MiB budget.
 */
export const DEFAULT_VIEW_CACHE_BYTES = 16 << 20;

/**
 * Per entry, beyond its bytes, as heap snapshots of a soak measure it: the entry object (~86 B),
 * its Buffer view (~94 B) and its place in the array. Counted short, a cache of small batches
 * outgrew its budget by half again.
 */
export const ENTRY_OVERHEAD = 200;

interface PartitionEntries {
  /** The survivor snapshot the entries were made under. */
  snapshot: object;
  /** Non-overlapping, by base offset. */
  batches: ViewedBatch[];
  bytes: number;
}

export interface ViewCacheStats {
  bytes: number;
  /** Reads answered from the cache instead of the upstream. */
  reads: number;
}

export class ViewCache {
  private readonly partitions = new Map<string, PartitionEntries>();
  private bytes = 0;
  private reads = 0;

  constructor(private readonly maxBytes: number) {}

  get enabled(): boolean {
    return this.maxBytes > 0;
  }

  get stats(): ViewCacheStats {
    return { bytes: this.bytes, reads: this.reads };
  }

  /**
   * The entries from the one holding `offset` to the first gap, when one holds it and starts at
   * or after `from` (the client's fetch offset: entries were made with every record kept that
   * survives, and records before a client's offset are left out of what it gets).
   */
  from(topic: string, partition: number, snapshot: object, offset: number, from: number): ViewedBatch[] | undefined {
    const key = partitionKey(topic, partition);
    const entries = this.current(key, snapshot);
    if (!entries) return undefined;
    const list = entries.batches;
    const i = firstEndingAtOrAfter(list, offset);
    if (i >= list.length || list[i]!.base > offset || list[i]!.base < from) return undefined;
    let end = i + 1;
    while (end < list.length && list[end]!.base === list[end - 1]!.last + 1) end++;
    // Most recently read last: the first in the map goes first when room is needed.
    this.partitions.delete(key);
    this.partitions.set(key, entries);
    this.reads++;
    return list.slice(i, end);
  }

  /**
   * Keeps batches just viewed, in offset order; those already held are skipped. What is kept is
   * copied into one buffer of its own: an upstream batch lies in memory that goes back for later
   * reads, and a small buffer of Node's shared pool would keep its whole 8 KiB slab alive.
   */
  record(topic: string, partition: number, snapshot: object, batches: readonly ViewedBatch[]): void {
    if (!this.enabled || batches.length === 0) return;
    const key = partitionKey(topic, partition);
    let entries = this.current(key, snapshot);
    if (!entries) {
      entries = { snapshot, batches: [], bytes: 0 };
      this.partitions.set(key, entries);
    }
    const list = entries.batches;
    const places: number[] = [];
    const kept: ViewedBatch[] = [];
    let bytes = 0;
    let at = firstEndingAtOrAfter(list, batches[0]!.base);
    for (const batch of batches) {
      while (at < list.length && list[at]!.last < batch.base) at++;
      if (at < list.length && list[at]!.base <= batch.last) continue;
      const size = batch.bytes.length + ENTRY_OVERHEAD;
      if (!this.makeRoom(size, key)) break;
      places.push(at + kept.length);
      kept.push(batch);
      bytes += batch.bytes.length;
      entries.bytes += size;
      this.bytes += size;
    }
    if (kept.length === 0) return;
    const own = Buffer.allocUnsafeSlow(bytes);
    let written = 0;
    for (const [i, batch] of kept.entries()) {
      const copy = own.subarray(written, (written += batch.bytes.copy(own, written)));
      list.splice(places[i]!, 0, { ...batch, bytes: copy });
    }
  }

  private current(key: string, snapshot: object): PartitionEntries | undefined {
    const entries = this.partitions.get(key);
    if (!entries || entries.snapshot === snapshot) return entries;
    this.drop(key, entries);
    return undefined;
  }

  /** Drops other partitions, least recently read first, until `size` more bytes fit. */
  private makeRoom(size: number, keep: string): boolean {
    if (size > this.maxBytes) return false;
    for (const [key, entries] of this.partitions) {
      if (this.bytes + size <= this.maxBytes) break;
      if (key !== keep) this.drop(key, entries);
    }
    return this.bytes + size <= this.maxBytes;
  }

  private drop(key: string, entries: PartitionEntries): void {
    this.bytes -= entries.bytes;
    this.partitions.delete(key);
  }
}

const partitionKey = (topic: string, partition: number) => `${topic}\u0000${partition}`;

/** The index of the first batch whose last offset is at or after `offset`. */
function firstEndingAtOrAfter(list: readonly ViewedBatch[], offset: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]!.last < offset) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
