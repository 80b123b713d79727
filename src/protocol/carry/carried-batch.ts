/**
 * Carried copies in record batches (docs/carrying.md). A carry pass appends carry batches of one
 * copy each: a copy is one record whose value is a run of original batches, each with its
 * survivors only, exactly as a client is served it (its base and last offset, leader epoch,
 * producer, flags, codec, timestamps, the survivors' bytes, a valid CRC), back to back as in a log
 * segment, written with the time of carrying (so the store's time retention sees it new).
 * Serving a carried range is then handing the run on, whole where every record of it still
 * survives, and a replica's index reads the originals' rows out of it as it reads any batches.
 *
 * Carry batches are uncompressed: the batches they hold keep their own codec, as Kafka's cleaner
 * keeps a batch's, and a reader takes them out of a Fetch answer without decompressing anything.
 */
import { BATCH_HEADER_SIZE, encodeBatch, iterateBatches, type BatchFields, type BatchHeader } from '../records/batch.js';
import { RecordScan, scanRecordAt } from '../records/record-decode.js';
import { Cursor } from '../records/varint.js';
import { CARRY_HEADER_KEY, CarryFormatError, CarryKind, emptyMark, encodeCopyMark, readCopyMark, type CopyMark } from './carry-record.js';

/** A growable buffer that records are written into, reused from batch to batch. */
class RecordBytes {
  buf = Buffer.allocUnsafe(64 * 1024);
  length = 0;
  count = 0;

  reserve(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.length + n));
    this.buf.copy(grown, 0, 0, this.length);
    this.buf = grown;
  }

  reset(): void {
    this.length = 0;
    this.count = 0;
  }

  /** The records written so far, a view of the buffer: valid until the next write. */
  view(): { bytes: Buffer; count: number } {
    return { bytes: this.buf.subarray(0, this.length), count: this.count };
  }
}

/** Fields of a batch kcompact writes itself: no producer, CreateTime, stamped `now`. */
function ownBatch(count: number, now: number): BatchFields {
  return {
    baseOffset: 0n,
    partitionLeaderEpoch: -1,
    attributes: 0,
    lastOffsetDelta: count - 1,
    baseTimestamp: BigInt(now),
    maxTimestamp: BigInt(now),
    producerId: -1n,
    producerEpoch: -1,
    baseSequence: -1,
  };
}

/**
 * A copy's run of batches is cut here, well below a store's default max.message.bytes: a read of
 * the copies starts at a run's first batch (a store answers from the batch holding the offset,
 * and a carry batch holds one run), so a small run wastes little of a read that starts inside it.
 */
export const RUN_BYTES = 64 * 1024;

/**
 * Collects the batches of one copy: add() them in offset order, with the delete horizons of their
 * tombstones, and flush() writes them out as one carry batch holding one copy.
 */
export class CopyRun {
  private readonly value = new RecordBytes();
  private firstBase = -1;
  /** Absolute offset and horizon pairs, ascending. */
  private readonly horizons: number[] = [];
  private readonly mark = emptyMark();

  /** Batches collected since the last flush. */
  get count(): number {
    return this.value.count;
  }

  /** Bytes of the batches collected since the last flush. */
  get bytes(): number {
    return this.value.length;
  }

  /** Adds a batch (its bytes as a client gets them) whose base offset is `base`. */
  add(batch: Buffer, base: number): void {
    if (this.firstBase < 0) this.firstBase = base;
    const v = this.value;
    v.reserve(batch.length);
    v.length += batch.copy(v.buf, v.length);
    v.count++;
  }

  addHorizon(offset: number, horizon: number): void {
    this.horizons.push(offset, horizon);
  }

  /** The batches added since the last call as one copy of pass `pass`, in a carry batch stamped `now`; null when there are none. */
  async flush(pass: number, now: number): Promise<Buffer | null> {
    if (this.value.count === 0) return null;
    const m = this.mark;
    m.pass = pass;
    m.horizons.length = 0;
    for (let i = 0; i < this.horizons.length; i += 2) m.horizons.push(this.horizons[i]! - this.firstBase, this.horizons[i + 1]!);
    // Encoding copies the batches out of the reused buffer. A key, as on every carry record: a store
    // that checks keys (a topic compacted on its side too) refuses records without one.
    const batch = await encodeBatch(
      ownBatch(1, now),
      [
        {
          timestampDelta: 0,
          offsetDelta: 0,
          key: CARRY_HEADER_KEY,
          value: this.value.view().bytes,
          headers: [{ key: CARRY_HEADER_KEY, value: encodeCopyMark(m) }],
        },
      ],
      0,
    );
    this.value.reset();
    this.firstBase = -1;
    this.horizons.length = 0;
    return batch;
  }
}

/** A one-record batch holding a carry marker (a pass start or end), stamped `now`. */
export function markerBatch(value: Buffer, now: number): Promise<Buffer> {
  return encodeBatch(
    ownBatch(1, now),
    [{ timestampDelta: 0, offsetDelta: 0, key: CARRY_HEADER_KEY, value: null, headers: [{ key: CARRY_HEADER_KEY, value }] }],
    0,
  );
}

/** One carried copy read from a carry batch's payload: its mark, where its run of batches lies in the payload, its own offset delta, where the next record starts. */
export interface CarriedCopy {
  mark: CopyMark;
  runStart: number;
  runEnd: number;
  delta: number;
  next: number;
}

/** Where a carry record's carry header value lies, which kind it is, its own offset delta, where the next record starts. */
export interface CarryValue {
  kind: CarryKind;
  valueStart: number;
  valueEnd: number;
  delta: number;
  next: number;
}

/**
 * Reads the record at `pos` of a carry batch's payload (its layout into `scan`) and finds its
 * carry header; throws CarryFormatError when it has none: a carry batch holds carry records only.
 */
export function carryValueAt(payload: Buffer, pos: number, scan: RecordScan): CarryValue {
  const next = scanRecordAt(payload, pos, scan);
  if (scan.headerCount < 1) throw new CarryFormatError(`a record of a carry batch without the carry header`);
  const c = new Cursor(payload, scan.headersStart, scan.end);
  const keyLength = c.varint();
  if (keyLength !== CARRY_HEADER_KEY.length || payload.compare(CARRY_HEADER_KEY, 0, keyLength, c.pos, c.pos + keyLength) !== 0) {
    throw new CarryFormatError(`a record of a carry batch whose first header is not the carry header`);
  }
  c.pos += keyLength;
  const valueLength = c.varint();
  if (valueLength < 2 || c.pos + valueLength > scan.end) throw new CarryFormatError('a carry header without a value');
  return { kind: payload[c.pos]! as CarryKind, valueStart: c.pos, valueEnd: c.pos + valueLength, delta: scan.offsetDelta, next };
}

/** The copy whose carry value `v` and layout `scan` carryValueAt just read, into `into` (reused by the caller across records). */
export function copyOf(payload: Buffer, v: CarryValue, scan: RecordScan, into: CarriedCopy): CarriedCopy {
  readCopyMark(payload, v.valueStart, v.valueEnd, into.mark);
  if (scan.valueLength < BATCH_HEADER_SIZE) throw new CarryFormatError(`a carried copy whose value of ${scan.valueLength} bytes holds no batch`);
  into.runStart = scan.valueStart;
  into.runEnd = scan.valueStart + scan.valueLength;
  into.delta = v.delta;
  into.next = v.next;
  return into;
}

/** The batches of a copy's run (`run`: the value's bytes), read in place; CarryFormatError unless they are whole data batches. */
export function batchesIn(run: Buffer): BatchHeader[] {
  const { batches, truncatedTail } = iterateBatches(run);
  if (truncatedTail.length > 0 || batches.length === 0) throw new CarryFormatError(`a carried copy whose value is not whole batches`);
  for (const b of batches) if (b.isControl || b.recordCount === 0) throw new CarryFormatError(`a carried copy holding a batch without data records`);
  return batches;
}

export function emptyCopy(): CarriedCopy {
  return { mark: emptyMark(), runStart: 0, runEnd: 0, delta: 0, next: 0 };
}

/**
 * The delete horizons of a copy's tombstones, looked up in ascending offsets: `at(delta)` is the
 * horizon of the record at that offset delta from the batch's base, or -1.
 */
export class HorizonCursor {
  private i = 0;

  constructor(private readonly horizons: readonly number[]) {}

  at(delta: number): number {
    const h = this.horizons;
    while (this.i < h.length && h[this.i]! < delta) this.i += 2;
    return this.i < h.length && h[this.i] === delta ? h[this.i + 1]! : -1;
  }
}
