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

import { leftOut, type Budget, type ViewedBatch } from './visible-records.js';

/**
 * The cache's memory unless configured (the viewCacheBytes setting): room for the survivors of
 * a Connect worker's or a small Streams app's topics. Heavy reads leave the cache full, and at a
 * thousand partitions the proxy's memory after them is already close to the scale benchmark's
 * budget (bench/scale.ts; docs/performance.md).
 */
export const DEFAULT_VIEW_CACHE_BYTES = 16 << 20;

/**
 * An entry is a row of numbers, not an object: a cache full of small batches holds tens of
 * thousands of entries, and as objects with a Buffer view each they moved memory from Buffers into
 * the JS heap (docs/performance.md), which V8 then reserved room to grow past. A row's fields,
 * each a float64; the producer id shares the last slot through a BigInt64 view of the same
 * memory.
 */
const BASE = 0;
const LAST = 1;
const RAW_BYTES = 2;
const RECORD_COUNT = 3;
const KEPT = 4;
const START = 5;
const LENGTH = 6;
/** The row's chunk (the buffer its bytes lie in) times 4, plus REBUILT and MARKER. */
const CHUNK_AND_FLAGS = 7;
const PRODUCER = 8;
const BATCHES = 9;
const STRIDE = 10;
const REBUILT = 1;
const MARKER = 2;

/** What a row costs: the budget counts the rows a partition has room for. */
export const ROW_BYTES = STRIDE * Float64Array.BYTES_PER_ELEMENT;

/**
 * Per buffer of kept bytes (one per record() call), beyond the bytes: the Buffer and its
 * ArrayBuffer objects and the allocation's own bookkeeping.
 */
export const CHUNK_OVERHEAD = 200;

interface PartitionEntries {
  /** The survivor snapshot the entries were made under. */
  snapshot: object;
  /** `count` rows of STRIDE numbers, non-overlapping, by base offset; room for more. */
  rows: Float64Array;
  producers: BigInt64Array;
  count: number;
  /** Only ever appended to, so a row's chunk number stays valid. */
  chunks: Buffer[];
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
   * survives, and records before a client's offset are left out of what it gets). The run ends
   * with the first batch an answer within `budget` leaves out: what comes after it no answer
   * takes (visible-records.ts's leftOut, as Assembly applies it), and the run is made into objects for the
   * one answer only.
   */
  from(topic: string, partition: number, snapshot: object, offset: number, from: number, budget: Budget): ViewedBatch[] | undefined {
    const key = partitionKey(topic, partition);
    const entries = this.current(key, snapshot);
    if (!entries) return undefined;
    const { rows, count } = entries;
    const i = firstEndingAtOrAfter(entries, offset);
    if (i >= count || rows[i * STRIDE + BASE]! > offset || rows[i * STRIDE + BASE]! < from) return undefined;
    const run: ViewedBatch[] = [];
    let bytes = 0;
    for (let r = i; r < count; r++) {
      const row = r * STRIDE;
      if (r > i && rows[row + BASE] !== rows[row - STRIDE + LAST]! + 1) break;
      run.push(batchAt(entries, r));
      if (rows[row + KEPT]! === 0) continue;
      if (leftOut(budget, bytes, rows[row + LENGTH]!)) break;
      bytes += rows[row + LENGTH]!;
    }
    // Most recently read last: the first in the map goes first when room is needed.
    this.partitions.delete(key);
    this.partitions.set(key, entries);
    this.reads++;
    return run;
  }

  /**
   * Keeps batches just viewed, in offset order; those already held are skipped. What is kept is
   * copied into one buffer of its own: an upstream batch lies in memory that goes back for later
   * reads, and a small buffer of Node's shared pool would keep its whole 8 KiB slab alive.
   */
  record(topic: string, partition: number, snapshot: object, viewed: readonly ViewedBatch[]): void {
    if (!this.enabled || viewed.length === 0) return;
    const batches = joinEmptied(viewed);
    const key = partitionKey(topic, partition);
    let entries = this.current(key, snapshot);
    if (!entries) {
      entries = { snapshot, rows: new Float64Array(0), producers: new BigInt64Array(0), count: 0, chunks: [], bytes: 0 };
      this.partitions.set(key, entries);
    }
    const { rows, count } = entries;
    const places: number[] = [];
    const fresh: ViewedBatch[] = [];
    let bytes = 0;
    let at = firstEndingAtOrAfter(entries, batches[0]!.base);
    for (const batch of batches) {
      while (at < count && rows[at * STRIDE + LAST]! < batch.base) at++;
      if (at < count && rows[at * STRIDE + BASE]! <= batch.last) continue;
      places.push(at);
      fresh.push(batch);
      bytes += batch.bytes.length;
    }
    while (fresh.length > 0 && !this.makeRoom(bytes + CHUNK_OVERHEAD + (capacityFor(entries, fresh.length) - capacityOf(entries)) * ROW_BYTES, key)) {
      bytes -= fresh.pop()!.bytes.length;
    }
    if (fresh.length === 0) return;
    this.grow(entries, capacityFor(entries, fresh.length));
    const chunk = Buffer.allocUnsafeSlow(bytes);
    const chunkAndFlags = entries.chunks.push(chunk) * 4 - 4;
    this.charge(entries, bytes + CHUNK_OVERHEAD);
    let written = bytes;
    let tail = count;
    // From the last new row back, so that each row held moves once, past the new ones before it.
    for (let j = fresh.length - 1; j >= 0; j--) {
      const batch = fresh[j]!;
      const place = places[j]!;
      entries.rows.copyWithin((place + j + 1) * STRIDE, place * STRIDE, tail * STRIDE);
      tail = place;
      written -= batch.bytes.length;
      batch.bytes.copy(chunk, written);
      const row = (place + j) * STRIDE;
      const r = entries.rows;
      r[row + BASE] = batch.base;
      r[row + LAST] = batch.last;
      r[row + RAW_BYTES] = batch.rawBytes;
      r[row + RECORD_COUNT] = batch.recordCount;
      r[row + KEPT] = batch.kept;
      r[row + START] = written;
      r[row + LENGTH] = batch.bytes.length;
      r[row + CHUNK_AND_FLAGS] = chunkAndFlags + (batch.rebuilt ? REBUILT : 0) + (batch.markerOf === null ? 0 : MARKER);
      entries.producers[row + PRODUCER] = batch.markerOf ?? 0n;
      r[row + BATCHES] = batch.batches;
    }
    entries.count += fresh.length;
  }

  private current(key: string, snapshot: object): PartitionEntries | undefined {
    const entries = this.partitions.get(key);
    if (!entries || entries.snapshot === snapshot) return entries;
    this.drop(key, entries);
    return undefined;
  }

  /** Room for `capacity` rows, the rows held kept. */
  private grow(entries: PartitionEntries, capacity: number): void {
    const before = capacityOf(entries);
    if (capacity === before) return;
    const rows = new Float64Array(capacity * STRIDE);
    rows.set(entries.rows.subarray(0, entries.count * STRIDE));
    entries.rows = rows;
    entries.producers = new BigInt64Array(rows.buffer);
    this.charge(entries, (capacity - before) * ROW_BYTES);
  }

  private charge(entries: PartitionEntries, bytes: number): void {
    entries.bytes += bytes;
    this.bytes += bytes;
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

const capacityOf = (entries: PartitionEntries) => entries.rows.length / STRIDE;

/** The rows to have room for once `more` are added: half again as many, so appends stay cheap. */
function capacityFor(entries: PartitionEntries, more: number): number {
  const capacity = capacityOf(entries);
  const needed = entries.count + more;
  return needed <= capacity ? capacity : Math.max(needed, Math.ceil(capacity * 1.5));
}

function batchAt(entries: PartitionEntries, r: number): ViewedBatch {
  const { rows } = entries;
  const row = r * STRIDE;
  const chunkAndFlags = rows[row + CHUNK_AND_FLAGS]!;
  const flags = chunkAndFlags % 4;
  const start = rows[row + START]!;
  return {
    base: rows[row + BASE]!,
    last: rows[row + LAST]!,
    rawBytes: rows[row + RAW_BYTES]!,
    recordCount: rows[row + RECORD_COUNT]!,
    bytes: entries.chunks[(chunkAndFlags - flags) / 4]!.subarray(start, start + rows[row + LENGTH]!),
    kept: rows[row + KEPT]!,
    rebuilt: (flags & REBUILT) !== 0,
    markerOf: (flags & MARKER) !== 0 ? entries.producers[row + PRODUCER]! : null,
    batches: rows[row + BATCHES]!,
  };
}

const emptied = (b: ViewedBatch) => b.kept === 0 && b.markerOf === null;

/**
 * Neighbouring batches that lost every record, as one entry holding the last one's emptied
 * bytes: in an answer such a run goes out only as its trailing empty batch, which is the last
 * one's. Below the horizon of a log of small batches most batches lose every record, and one
 * entry each filled the cache with rows and 61-byte empty batches, far more than the survivors'
 * bytes (docs/performance.md).
 * Markers stay entries of their own: an answer reports each one.
 */
function joinEmptied(batches: readonly ViewedBatch[]): readonly ViewedBatch[] {
  let joined: ViewedBatch[] | undefined;
  /** The entry being extended: a copy, the caller's batches stay as they were. */
  let own: ViewedBatch | undefined;
  for (let i = 1; i < batches.length; i++) {
    const batch = batches[i]!;
    const before = joined ? joined[joined.length - 1]! : batches[i - 1]!;
    if (!(emptied(batch) && emptied(before) && batch.base === before.last + 1)) {
      joined?.push(batch);
      continue;
    }
    joined ??= batches.slice(0, i);
    let run = joined[joined.length - 1]!;
    if (run !== own) joined[joined.length - 1] = own = run = { ...run };
    run.last = batch.last;
    run.rawBytes += batch.rawBytes;
    run.recordCount += batch.recordCount;
    run.bytes = batch.bytes;
    run.rebuilt = batch.rebuilt;
    run.batches += batch.batches;
  }
  return joined ?? batches;
}

/** The first row whose last offset is at or after `offset`. */
function firstEndingAtOrAfter(entries: PartitionEntries, offset: number): number {
  const { rows } = entries;
  let lo = 0;
  let hi = entries.count;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (rows[mid * STRIDE + LAST]! < offset) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
