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
 */
import {
  batchPayload,
  CorruptRecordError,
  iterateBatches,
  rebuildBatch,
  type BatchHeader,
  type RecordSpan,
} from '../../protocol/records/batch.js';
import { Cursor } from '../../protocol/records/varint.js';

export interface Visibility {
  /** The first offset the cleaner has not covered: from here on every record is visible. */
  cleanedUpTo: number;
  /** Surviving offsets in [from, to), below cleanedUpTo, ascending. */
  survivors(from: number, to: number): Float64Array;
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
  markers: MarkerSeen[];
  /** Why the rest of the data went out unfiltered, when a batch could not be read. */
  corrupt: string | null;
  /** Whether the client gets anything but the upstream's bytes. */
  changed: boolean;
}

const NO_SPANS: RecordSpan[] = [];
const NO_BYTES = Buffer.alloc(0);

function lastOffset(batch: BatchHeader): number {
  return Number(batch.baseOffset) + batch.lastOffsetDelta;
}

/** Whether the batch's records sit at consecutive offsets (as every producer writes them). */
function contiguous(batch: BatchHeader): boolean {
  return batch.lastOffsetDelta === batch.recordCount - 1;
}

interface BatchOutcome {
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
  else progress = (await recordOffsets(records, batch)).offsets.filter((o) => o >= from).length;
  return { bytes: batch.bytes, kept: batch.recordCount, progress, rebuilt: false };
}

interface RecordOffsets {
  payload: Buffer;
  offsets: Float64Array;
  /** Record i spans payload[starts[i], starts[i + 1]). */
  starts: Int32Array;
}

/**
 * Each record's offset and where it lies in the payload, read from its length prefix and the
 * fields before its offset delta only: the fetch path sees every superseded record, and a full
 * decode (an object and key and value views per record) costs several times as much. The batch's
 * CRC, checked when it is rebuilt, vouches for the rest of each record.
 */
async function recordOffsets(records: Buffer, batch: BatchHeader): Promise<RecordOffsets> {
  const payload = await batchPayload(records, batch);
  const count = batch.recordCount;
  const offsets = new Float64Array(count);
  const starts = new Int32Array(count + 1);
  const base = Number(batch.baseOffset);
  const c = new Cursor(payload, 0, payload.length);
  for (let i = 0; i < count; i++) {
    starts[i] = c.pos;
    const length = c.varint();
    const end = c.pos + length;
    if (length <= 0 || end > payload.length) throw new CorruptRecordError(`record ${i} of the batch at offset ${base} does not fit its payload`);
    c.limit = end;
    c.pos += 1; // attributes
    c.varlong(); // timestamp delta
    offsets[i] = base + c.varint();
    c.pos = end;
    c.limit = payload.length;
  }
  if (c.pos !== payload.length) throw new CorruptRecordError(`the batch at offset ${base} holds bytes after its ${count} records`);
  starts[count] = payload.length;
  return { payload, offsets, starts };
}

/**
 * One batch through the view. Records before the client's fetch offset are dropped from a batch
 * that is rebuilt anyway: no client shows them, and kafkajs would take a batch holding only such
 * records for a compaction gap and step one offset at a time.
 */
async function viewBatch(records: Buffer, batch: BatchHeader, visibility: Visibility, from: number): Promise<BatchOutcome> {
  const base = Number(batch.baseOffset);
  const last = lastOffset(batch);
  const horizon = visibility.cleanedUpTo;
  if (base >= horizon) return untouched(records, batch, from);
  const survivors = visibility.survivors(base, Math.min(last + 1, horizon));
  if (last < horizon) {
    // Survivors are offsets of real records, so a full count means every record of the batch.
    if (survivors.length === batch.recordCount) return untouched(records, batch, from);
    if (survivors.length === 0) return { bytes: await rebuildBatch(batch, NO_BYTES, NO_SPANS), kept: 0, progress: 0, rebuilt: true };
  }
  const { payload, offsets, starts } = await recordOffsets(records, batch);
  const kept: RecordSpan[] = [];
  let s = 0;
  for (let i = 0; i < offsets.length; i++) {
    const offset = offsets[i]!;
    while (s < survivors.length && survivors[s]! < offset) s++;
    const visible = offset >= horizon || (s < survivors.length && survivors[s] === offset);
    if (visible && offset >= from) kept.push({ start: starts[i]!, end: starts[i + 1]! });
  }
  const bytes = await rebuildBatch(batch, payload, kept);
  return { bytes, kept: kept.length, progress: kept.length, rebuilt: bytes !== batch.bytes };
}

export async function visibleRecords(records: Buffer | null, visibility: Visibility, from: number): Promise<VisibleRecords> {
  const out: VisibleRecords = {
    batches: [],
    trailingEmpty: null,
    truncatedTail: NO_BYTES,
    progress: 0,
    removedRecords: 0,
    rebuiltBatches: 0,
    end: -1,
    markers: [],
    corrupt: null,
    changed: false,
  };
  if (!records || records.length === 0) return out;
  let walk: ReturnType<typeof iterateBatches>;
  try {
    walk = iterateBatches(records);
  } catch (err) {
    return passUnfiltered(out, records, err);
  }
  const { batches } = walk;
  for (let i = 0; i < batches.length; i++) {
    const batch = batches[i]!;
    let outcome: BatchOutcome;
    try {
      outcome = await viewBatch(records, batch, visibility, from);
    } catch (err) {
      return passUnfiltered(out, records.subarray(batch.start), err);
    }
    out.end = lastOffset(batch);
    out.removedRecords += batch.recordCount - outcome.kept;
    out.progress += outcome.progress;
    if (outcome.rebuilt) out.rebuiltBatches++;
    if (batch.isControl) out.markers.push({ producerId: batch.producerId, offset: Number(batch.baseOffset), visible: outcome.kept > 0 });
    if (outcome.kept > 0) out.batches.push(outcome.bytes);
    else if (i === batches.length - 1) out.trailingEmpty = outcome.bytes;
    if (outcome.bytes !== batch.bytes || (outcome.kept === 0 && i < batches.length - 1)) out.changed = true;
  }
  out.truncatedTail = walk.truncatedTail;
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
