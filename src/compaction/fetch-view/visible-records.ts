/**
 * The compacted view of one partition's fetched records: only the records the cleaner kept below
 * its horizon, everything from the horizon on, with offsets untouched (DESIGN.md, "Rewriting a
 * fetched batch"). A batch whose records all stay is copied byte for byte; one that loses some is
 * rebuilt by rebuildBatch (same header fields, recompressed, fresh count, length and CRC).
 *
 * A batch that loses every record is dropped, except when it is the last complete batch: that
 * one goes out as Kafka's 61-byte empty batch, because Java, librdkafka and franz-go move their
 * position to its last offset + 1 and so never re-read what was removed. The broker's cut-off
 * tail (a partial batch at the byte limit) follows unchanged, as Kafka sends it.
 *
 * Given a byte budget, the view keeps whole batches up to it (the first one anyway when asked,
 * as Kafka answers the first batch of a response): the proxy reads more of the raw log than the
 * client's limits take when it expects most of it removed, and a rebuilt compressed batch can
 * come out larger than its original.
 */
import {
  batchPayload,
  CorruptRecordError,
  firstRecordPayload,
  iterateBatches,
  rebuildBatch,
  type BatchHeader,
  type RecordSpan,
} from '../../protocol/records/batch.js';
import { Cursor } from '../../protocol/records/varint.js';
import { CarryKind, carryKindAt } from '../carry/carry-record.js';
import type { PartitionIndexView } from '../index-view.js';
import type { ViewedBatch } from './view-cache.js';

export interface Visibility {
  /** The first offset the cleaner has not covered: from here on every record is visible. */
  cleanedUpTo: number;
  /** Surviving offsets in [from, to), below cleanedUpTo, ascending. */
  survivors(from: number, to: number): Float64Array;
}

/** What a partition's index says is visible, as of now. */
export function visibilityOf(view: PartitionIndexView): Visibility {
  return { cleanedUpTo: view.cleanedUpTo(), survivors: (from, to) => view.survivors(from, to) };
}

/** A transaction marker batch seen in the upstream data, and whether the client still sees it. */
export interface MarkerSeen {
  producerId: bigint;
  offset: number;
  visible: boolean;
}

export interface VisibleRecords {
  /** Complete batches holding records, in log order. */
  batches: Buffer[];
  /** The last complete upstream batch, emptied, when it lost every record. */
  trailingEmpty: Buffer | null;
  truncatedTail: Buffer;
  /** Records at or after the client's fetch offset that the client receives. */
  progress: number;
  removedRecords: number;
  rebuiltBatches: number;
  /** The last offset of the last complete upstream batch; -1 when there was none. */
  end: number;
  /** The offset after the last batch holding records the client gets; 0 when none does. */
  visibleEnd: number;
  markers: MarkerSeen[];
  /** Why the rest of the data went out unfiltered, when a batch could not be read. */
  corrupt: string | null;
  /** Whether the client gets anything but the upstream's bytes. */
  changed: boolean;
  /** Whether a batch was left out for the byte budget, with everything after it. */
  full: boolean;
  walked: BatchesWalked;
  /** Reads whose memory the batches are views of, to give back once the answer has been put together. */
  held?: Releasable[];
}

export interface Releasable {
  release(): void;
}

/** Gives the reads back (once nothing refers to their batches any more). */
export function releaseHeld(reads: Releasable[] | undefined): void {
  if (!reads) return;
  for (const r of reads) r.release();
  reads.length = 0;
}

/** The complete upstream batches walked: their bytes, the offsets they span, how many. */
export interface BatchesWalked {
  bytes: number;
  offsets: number;
  batches: number;
}

export interface Budget {
  maxBytes: number;
  /** Whether the first batch comes even when larger than maxBytes (Kafka's first in a response). */
  oneAnyway: boolean;
}

const UNLIMITED: Budget = { maxBytes: Infinity, oneAnyway: true };

/** Whether a batch of `size` bytes is left out of an answer already holding `taken` bytes. */
export function leftOut(budget: Budget, taken: number, size: number): boolean {
  return taken + size > budget.maxBytes && !(budget.oneAnyway && taken === 0);
}

const NO_SPANS: RecordSpan[] = [];
/**
 * Only batches below the cleaner's horizon are rebuilt, and the indexer has checked the CRC of
 * every batch there (fetched-rows.ts): a corrupt one stops the index, and so the horizon, before it.
 */
const CRC_CHECKED = true;
const NO_BYTES = Buffer.alloc(0);

function lastOffset(batch: BatchHeader): number {
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

/** The visible records of any batch, by each record's own offset. */
function byOffset(payload: Buffer, starts: Int32Array, survivors: Float64Array, base: number, horizon: number, from: number): RecordSpan[] {
  const kept: RecordSpan[] = [];
  let s = 0;
  for (let i = 0; i + 1 < starts.length; i++) {
    const offset = base + offsetDeltaAt(payload, starts[i]!);
    while (s < survivors.length && survivors[s]! < offset) s++;
    const visible = offset >= horizon || (s < survivors.length && survivors[s] === offset);
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
  if (base >= horizon) return untouched(records, batch, from);
  const survivors = visibility.survivors(base, Math.min(last + 1, horizon));
  if (last < horizon) {
    // Survivors are offsets of real records, so a full count means every record of the batch.
    if (survivors.length === batch.recordCount) return untouched(records, batch, from);
    if (survivors.length === 0) return { bytes: await rebuildBatch(batch, NO_BYTES, NO_SPANS, CRC_CHECKED), kept: 0, progress: 0, rebuilt: true };
  }
  const payload = await batchPayload(records, batch);
  const starts = recordStarts(payload, batch);
  const kept =
    (last < horizon && contiguous(batch) && byPosition(payload, starts, survivors, base, from)) || byOffset(payload, starts, survivors, base, horizon, from);
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

function emptyResult(): VisibleRecords {
  return {
    batches: [],
    trailingEmpty: null,
    truncatedTail: NO_BYTES,
    progress: 0,
    removedRecords: 0,
    rebuiltBatches: 0,
    end: -1,
    visibleEnd: 0,
    markers: [],
    corrupt: null,
    changed: false,
    full: false,
    walked: { bytes: 0, offsets: 0, batches: 0 },
  };
}

/**
 * Puts viewed batches into a result in log order, within the byte budget: the one place that
 * decides what of a read goes out, whether the batches were just read or come from the cache.
 */
class Assembly {
  private bytes = 0;

  constructor(
    readonly out: VisibleRecords,
    private readonly budget: Budget,
  ) {}

  /** Takes the next batch (`last`: the last one read); false when the budget is spent. */
  take(batch: ViewedBatch, progress: number, unchanged: boolean, last: boolean): boolean {
    const { out } = this;
    const goes = batch.kept > 0 || last;
    if (goes && leftOut(this.budget, this.bytes, batch.bytes.length)) {
      out.full = true;
      out.changed = true;
      return false;
    }
    if (goes) this.bytes += batch.bytes.length;
    out.walked.bytes += batch.rawBytes;
    out.walked.offsets += batch.last - batch.base + 1;
    out.walked.batches += batch.batches;
    out.end = batch.last;
    out.removedRecords += batch.recordCount - batch.kept;
    out.progress += progress;
    if (batch.rebuilt) out.rebuiltBatches += batch.batches;
    if (batch.markerOf !== null) out.markers.push({ producerId: batch.markerOf, offset: batch.base, visible: batch.kept > 0 });
    if (batch.kept > 0) {
      out.batches.push(batch.bytes);
      out.visibleEnd = batch.last + 1;
    } else if (last) out.trailingEmpty = batch.bytes;
    if (!unchanged || (batch.kept === 0 && !last)) out.changed = true;
    return true;
  }

  /** A cut-off tail is only bytes a client throws away: past the budget it is left out. */
  tail(truncatedTail: Buffer): void {
    if (this.bytes + truncatedTail.length <= this.budget.maxBytes) this.out.truncatedTail = truncatedTail;
    else this.out.changed = true;
  }
}

/**
 * The view of upstream records. `keep` gets each batch below the horizon that goes in whole,
 * starting at or after `from`, for the view cache; an upstream batch kept as it was is handed
 * over as a view of `records`, which the caller copies if it outlives them.
 */
export async function visibleRecords(
  records: Buffer | null,
  visibility: Visibility,
  from: number,
  budget: Budget = UNLIMITED,
  keep?: (batch: ViewedBatch) => void,
): Promise<VisibleRecords> {
  const out = emptyResult();
  if (!records || records.length === 0) return out;
  let walk: ReturnType<typeof iterateBatches>;
  try {
    walk = iterateBatches(records);
  } catch (err) {
    return passUnfiltered(out, records, err);
  }
  const { batches } = walk;
  const assembly = new Assembly(out, budget);
  for (let i = 0; i < batches.length; i++) {
    const batch = batches[i]!;
    let outcome: BatchOutcome;
    try {
      outcome = await viewBatch(records, batch, visibility, from);
    } catch (err) {
      return passUnfiltered(out, records.subarray(batch.start), err);
    }
    const viewed: ViewedBatch = {
      base: Number(batch.baseOffset),
      last: lastOffset(batch),
      rawBytes: batch.bytes.length,
      recordCount: batch.recordCount,
      bytes: outcome.bytes,
      kept: outcome.kept,
      rebuilt: outcome.rebuilt,
      markerOf: batch.isControl ? batch.producerId : null,
      batches: 1,
    };
    if (!assembly.take(viewed, outcome.progress, outcome.bytes === batch.bytes, i === batches.length - 1)) return out;
    if (keep && viewed.base >= from && viewed.last < visibility.cleanedUpTo) keep(viewed);
  }
  assembly.tail(walk.truncatedTail);
  return out;
}

/**
 * The view of batches from the view cache, as visibleRecords would give it for an upstream read
 * that returned them; every record they keep is at or after the client's fetch offset.
 */
export function cachedRecords(batches: readonly ViewedBatch[], budget: Budget): VisibleRecords {
  const out = emptyResult();
  const assembly = new Assembly(out, budget);
  for (let i = 0; i < batches.length; i++) {
    if (!assembly.take(batches[i]!, batches[i]!.kept, false, i === batches.length - 1)) break;
  }
  return out;
}

/**
 * A batch that cannot be read goes to the client as the upstream sent it, with everything after
 * it: the client's own checks then report it, as they would reading Kafka.
 */
function passUnfiltered(out: VisibleRecords, rest: Buffer, err: unknown): VisibleRecords {
  if (!(err instanceof CorruptRecordError)) throw err;
  out.batches.push(rest);
  out.trailingEmpty = null;
  out.truncatedTail = NO_BYTES;
  out.progress++;
  out.corrupt = err.message;
  return out;
}
