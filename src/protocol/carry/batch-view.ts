/**
 * One batch as compaction shows it: the records the cleaner kept below its horizon, everything
 * from the horizon on, kcompact's own carry records never (docs/semantics.md). The fetch view
 * serves batches through it, and the carrier copies what it keeps, so both threads use it.
 */
import { batchPayload, CorruptRecordError, firstRecordPayload, rebuildBatch, type BatchHeader, type RecordSpan } from '../records/batch.js';
import { Cursor } from '../records/varint.js';
import { CarryKind, carryKindAt } from './carry-record.js';
import { firstAtLeast } from '../../common/sorted-search.js';

export interface Visibility {
  /** The first offset the cleaner has not covered: from here on every record is visible. */
  cleanedUpTo: number;
  /** Surviving offsets in [from, to), below cleanedUpTo, ascending. */
  survivors(from: number, to: number): Float64Array;
  /** Void records (docs/tables.md) at or past cleanedUpTo, ascending: hidden there too. */
  voids?: readonly number[];
  /** Where what the index judged ends (docs/tables.md): no batch reaching it is shown; absent: no such end. */
  judgedTo?: number;
  /**
   * Without judgedTo (the index has met no conditional record): where the index's reading ends.
   * A batch reaching it that holds a conditional record is not shown, nor anything after it,
   * until the index has judged it.
   */
  indexedTo?: number;
}

const NO_OFFSETS: readonly number[] = [];

/** The offsets of `sorted` in [from, to). */
function offsetsIn(sorted: readonly number[], from: number, to: number): readonly number[] {
  const lo = firstAtLeast(sorted, from);
  let end = lo;
  while (end < sorted.length && sorted[end]! < to) end++;
  return end === lo ? NO_OFFSETS : sorted.slice(lo, end);
}

const NO_SPANS: RecordSpan[] = [];
/**
 * Only batches below the cleaner's horizon, or holding void records (below the judged end), are
 * rebuilt, and the indexer has checked the CRC of every batch there (fetched-rows.ts): a corrupt
 * one stops the index, and so the horizon and the judged end, before it.
 */
const CRC_CHECKED = true;
const NO_BYTES = Buffer.alloc(0);

export function lastOffset(batch: BatchHeader): number {
  return Number(batch.baseOffset) + batch.lastOffsetDelta;
}

/** Whether the batch's records sit at consecutive offsets (as every producer writes them). */
function contiguous(batch: BatchHeader): boolean {
  return batch.lastOffsetDelta === batch.recordCount - 1;
}

export interface BatchOutcome {
  bytes: Buffer;
  kept: number;
  progress: number;
  rebuilt: boolean;
}

async function untouched(records: Buffer, batch: BatchHeader, from: number): Promise<BatchOutcome> {
  const base = Number(batch.baseOffset);
  let progress: number;
  if (base >= from) progress = batch.recordCount;
  else if (contiguous(batch)) progress = Math.max(0, lastOffset(batch) - from + 1);
  else {
    const payload = await batchPayload(records, batch);
    const starts = recordStarts(payload, batch);
    progress = 0;
    for (let i = 0; i < batch.recordCount; i++) if (base + offsetDeltaAt(payload, starts[i]!) >= from) progress++;
  }
  return { bytes: batch.bytes, kept: batch.recordCount, progress, rebuilt: false };
}

/**
 * Where each record lies in the payload (record i spans starts[i] to starts[i + 1]), from the
 * length prefixes alone: the fetch path sees every superseded record, and a full decode (an
 * object and key and value views per record) costs several times as much. The batch's CRC,
 * checked by the indexer, vouches for the rest of each record.
 */
function recordStarts(payload: Buffer, batch: BatchHeader): Int32Array {
  const count = batch.recordCount;
  const starts = new Int32Array(count + 1);
  const c = new Cursor(payload, 0, payload.length);
  for (let i = 0; i < count; i++) {
    starts[i] = c.pos;
    const length = c.varint();
    const end = c.pos + length;
    if (length <= 0 || end > payload.length) throw new CorruptRecordError(`record ${i} of the batch at offset ${batch.baseOffset} does not fit its payload`);
    c.pos = end;
  }
  if (c.pos !== payload.length) throw new CorruptRecordError(`the batch at offset ${batch.baseOffset} holds bytes after its ${count} records`);
  starts[count] = payload.length;
  return starts;
}

/** The offset delta of the record at `start`, read past its attributes and timestamp delta. */
function offsetDeltaAt(payload: Buffer, start: number): number {
  const c = new Cursor(payload, start, payload.length);
  c.limit = c.varint() + c.pos;
  c.pos += 1; // attributes
  c.varlong(); // timestamp delta
  return c.varint();
}

/**
 * The survivors of a batch below the horizon whose records sit at consecutive offsets: survivor
 * o is record o - base, so only the survivors are looked at (their deltas checked); null when a
 * record's delta says otherwise.
 */
function byPosition(payload: Buffer, starts: Int32Array, survivors: Float64Array, base: number, from: number): RecordSpan[] | null {
  const kept: RecordSpan[] = [];
  for (let s = 0; s < survivors.length; s++) {
    const offset = survivors[s]!;
    const i = offset - base;
    if (offsetDeltaAt(payload, starts[i]!) !== i) return null;
    if (offset >= from) kept.push({ start: starts[i]!, end: starts[i + 1]! });
  }
  return kept;
}

/** The visible records of any batch, by each record's own offset: survivors below the horizon, records past it but void ones. */
function byOffset(
  payload: Buffer,
  starts: Int32Array,
  survivors: Float64Array,
  base: number,
  horizon: number,
  from: number,
  voids: readonly number[],
): RecordSpan[] {
  const kept: RecordSpan[] = [];
  let s = 0;
  let v = 0;
  for (let i = 0; i + 1 < starts.length; i++) {
    const offset = base + offsetDeltaAt(payload, starts[i]!);
    while (s < survivors.length && survivors[s]! < offset) s++;
    while (v < voids.length && voids[v]! < offset) v++;
    const visible = offset >= horizon ? voids[v] !== offset : s < survivors.length && survivors[s] === offset;
    if (visible && offset >= from) kept.push({ start: starts[i]!, end: starts[i + 1]! });
  }
  return kept;
}

/**
 * One batch through the view. Records before the client's fetch offset are dropped from a batch
 * that is rebuilt anyway: no client shows them, and kafkajs would take a batch holding only such
 * records for a compaction gap and step one offset at a time.
 */
export async function viewBatch(records: Buffer, batch: BatchHeader, visibility: Visibility, from: number): Promise<BatchOutcome> {
  const base = Number(batch.baseOffset);
  const last = lastOffset(batch);
  const horizon = visibility.cleanedUpTo;
  // kcompact's own carry records are never a client's, wherever they are, and any replica may
  // meet them before its index has read a pass (another replica carries, or this one is new):
  // below the horizon no survivor sits at their offsets, so only batches reaching past it need a look.
  if (last >= horizon && (await isCarried(records, batch))) {
    return { bytes: await rebuildBatch(batch, NO_BYTES, NO_SPANS), kept: 0, progress: 0, rebuilt: true };
  }
  const voids = visibility.voids && last >= horizon ? offsetsIn(visibility.voids, Math.max(base, horizon), last + 1) : NO_OFFSETS;
  if (base >= horizon && voids.length === 0) return untouched(records, batch, from);
  const survivors = visibility.survivors(base, Math.min(last + 1, horizon));
  if (last < horizon) {
    // Survivors are offsets of real records, so a full count means every record of the batch.
    if (survivors.length === batch.recordCount) return untouched(records, batch, from);
    if (survivors.length === 0) return { bytes: await rebuildBatch(batch, NO_BYTES, NO_SPANS, CRC_CHECKED), kept: 0, progress: 0, rebuilt: true };
  }
  const payload = await batchPayload(records, batch);
  const starts = recordStarts(payload, batch);
  const kept =
    (last < horizon && contiguous(batch) && byPosition(payload, starts, survivors, base, from)) ||
    byOffset(payload, starts, survivors, base, horizon, from, voids);
  const bytes = await rebuildBatch(batch, payload, kept, CRC_CHECKED);
  return { bytes, kept: kept.length, progress: kept.length, rebuilt: bytes !== batch.bytes };
}

/**
 * Whether the batch is one kcompact wrote itself (carried copies or a pass marker): only batches
 * without a producer can be, since carry passes write none, and their first record says so. Only
 * that record is decompressed (zstd aside, which decompresses whole).
 */
export async function isCarried(records: Buffer, batch: BatchHeader): Promise<boolean> {
  if (batch.producerId >= 0n || batch.isControl || batch.recordCount === 0) return false;
  return carryKindAt(await firstRecordPayload(records, batch), 0) !== CarryKind.None;
}
