/**
 * Carried copies in record batches (docs/carrying.md). A carry pass appends batches of copies: a
 * copy is the original record's key, value and headers, with the carry header put first, written
 * with the time of carrying (so the store's time retention sees it new). A client is served the
 * originals rebuilt from them: at their original offsets, in batches with the original batch's
 * base and last offset, leader epoch, producer, transactional flag, timestamp type and codec, the
 * records' own timestamps, keys, values and headers byte for byte, and the carry header gone.
 *
 * Records are written straight into one growing buffer in wire form: carrying and serving touch
 * every surviving record, so nothing is allocated per record.
 */
import { Attributes, encodeBatch, TimestampType, type BatchFields, type BatchHeader } from '../../protocol/records/batch.js';
import { RecordScan, scanRecordAt } from '../../protocol/records/record-decode.js';
import { Cursor, sizeOfVarint, sizeOfVarlong, writeVarint, writeVarlong } from '../../protocol/records/varint.js';
import {
  CARRY_HEADER_KEY,
  CarryFormatError,
  type CarryKind,
  copyValueSize,
  emptyOrigin,
  readCopyValue,
  writeCopyValue,
  type CopyOrigin,
} from './carry-record.js';

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

  /** The records written so far, copied out (the buffer is reused). */
  take(): { bytes: Buffer; count: number } {
    const out = { bytes: Buffer.from(this.buf.subarray(0, this.length)), count: this.count };
    this.reset();
    return out;
  }
}

function bytesFieldSize(length: number): number {
  return length < 0 ? 1 : sizeOfVarint(length) + length;
}

function writeBytesField(out: Buffer, pos: number, src: Buffer, start: number, length: number): number {
  pos = writeVarint(out, pos, length);
  if (length > 0) pos += src.copy(out, pos, start, start + length);
  return pos;
}

/** Where a record's parts lie in the payload it was read from: what a copy or a restored original is made of. */
export interface RecordParts {
  payload: Buffer;
  keyStart: number;
  keyLength: number;
  valueStart: number;
  valueLength: number;
  /** The headers a client sees (a copy's carry header excluded) and how many. */
  headersStart: number;
  headersEnd: number;
  headerCount: number;
}

/** The parts of a client's record, as scanned from its batch's payload. */
export function originalParts(payload: Buffer, scan: RecordScan, into: RecordParts): RecordParts {
  into.payload = payload;
  into.keyStart = scan.keyStart;
  into.keyLength = scan.keyLength;
  into.valueStart = scan.valueStart;
  into.valueLength = scan.valueLength;
  into.headersStart = scan.headersStart;
  into.headersEnd = scan.end;
  into.headerCount = scan.headerCount;
  return into;
}

/** What a client sees of a record of `batch` (scanned into `scan`), for its copy written by pass `pass`. */
export function originOf(batch: BatchHeader, scan: RecordScan, pass: number, horizon: number, into: CopyOrigin): CopyOrigin {
  const base = Number(batch.baseOffset);
  const logAppendTime = batch.timestampType === TimestampType.LogAppendTime;
  into.pass = pass;
  into.offset = base + scan.offsetDelta;
  into.timestamp = logAppendTime ? Number(batch.maxTimestamp) : Number(batch.baseTimestamp) + scan.timestampDelta;
  into.batchBase = base;
  into.batchLast = base + batch.lastOffsetDelta;
  into.leaderEpoch = batch.partitionLeaderEpoch;
  into.producerId = batch.producerId;
  into.producerEpoch = batch.producerEpoch;
  into.transactional = batch.isTransactional;
  into.logAppendTime = logAppendTime;
  into.codec = batch.compression;
  into.horizon = horizon;
  return into;
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

/** Collects copies and writes them out as batches of the carrying codec. */
export class CopyBatches {
  private readonly records = new RecordBytes();

  constructor(private readonly codec: number) {}

  get count(): number {
    return this.records.count;
  }

  get bytes(): number {
    return this.records.length;
  }

  /** Adds a copy of the record `parts` with what the client saw of it in `origin`. */
  add(origin: CopyOrigin, parts: RecordParts): void {
    const r = this.records;
    const offsetDelta = r.count;
    const valueSize = copyValueSize(origin);
    const headersBytes = parts.headersEnd - parts.headersStart;
    const body =
      1 +
      1 +
      sizeOfVarint(offsetDelta) +
      bytesFieldSize(parts.keyLength) +
      bytesFieldSize(parts.valueLength) +
      sizeOfVarint(parts.headerCount + 1) +
      bytesFieldSize(CARRY_HEADER_KEY.length) +
      sizeOfVarint(valueSize) +
      valueSize +
      headersBytes;
    r.reserve(sizeOfVarint(body) + body);
    const out = r.buf;
    let pos = writeVarint(out, r.length, body);
    out[pos++] = 0;
    out[pos++] = 0; // timestamp delta 0: every copy has the batch's time
    pos = writeVarint(out, pos, offsetDelta);
    pos = writeBytesField(out, pos, parts.payload, parts.keyStart, parts.keyLength);
    pos = writeBytesField(out, pos, parts.payload, parts.valueStart, parts.valueLength);
    pos = writeVarint(out, pos, parts.headerCount + 1);
    pos = writeBytesField(out, pos, CARRY_HEADER_KEY, 0, CARRY_HEADER_KEY.length);
    pos = writeVarint(out, pos, valueSize);
    pos = writeCopyValue(out, pos, origin);
    pos += parts.payload.copy(out, pos, parts.headersStart, parts.headersEnd);
    r.length = pos;
    r.count++;
  }

  /** The copies added since the last call as one batch stamped `now`; null when there are none. */
  async flush(now: number): Promise<Buffer | null> {
    if (this.records.count === 0) return null;
    const raw = this.records.take();
    return encodeBatch(ownBatch(raw.count, now), raw, this.codec);
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

/** One carried copy read from a batch payload: its origin and parts, its own offset delta, where the next record starts. */
export interface CarriedCopy {
  origin: CopyOrigin;
  parts: RecordParts;
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

/**
 * Reads the copy at `pos` of a carry batch's payload into `into` (reused by the caller across
 * records); throws CarryFormatError when the record is not a copy.
 */
export function readCopyAt(payload: Buffer, pos: number, into: CarriedCopy, scan = new RecordScan()): CarriedCopy {
  return copyOf(payload, carryValueAt(payload, pos, scan), scan, into);
}

/** The copy whose carry value `v` and layout `scan` carryValueAt just read. */
export function copyOf(payload: Buffer, v: CarryValue, scan: RecordScan, into: CarriedCopy): CarriedCopy {
  readCopyValue(payload, v.valueStart, v.valueEnd, into.origin);
  // The record's parts, less its first header: the carry header is not the client's.
  const p = originalParts(payload, scan, into.parts);
  p.headersStart = v.valueEnd;
  p.headerCount--;
  into.delta = v.delta;
  into.next = v.next;
  return into;
}

export function emptyCopy(): CarriedCopy {
  return {
    origin: emptyOrigin(),
    parts: { payload: Buffer.alloc(0), keyStart: 0, keyLength: -1, valueStart: 0, valueLength: -1, headersStart: 0, headersEnd: 0, headerCount: 0 },
    delta: 0,
    next: 0,
  };
}

/** Whether two copies' originals belong in one rebuilt batch. */
function sameBatch(a: CopyOrigin, b: CopyOrigin): boolean {
  return (
    a.batchBase === b.batchBase &&
    a.batchLast === b.batchLast &&
    a.leaderEpoch === b.leaderEpoch &&
    a.producerId === b.producerId &&
    a.producerEpoch === b.producerEpoch &&
    a.transactional === b.transactional &&
    a.logAppendTime === b.logAppendTime &&
    a.codec === b.codec
  );
}

/**
 * Rebuilds the originals of copies into batches at their original offsets: add() them in offset
 * order, and each run of copies from one original batch becomes one batch, as Kafka's cleaner
 * leaves a batch that lost records (same base and last offset, the survivors' own timestamps).
 */
export class RestoredBatches {
  private readonly records = new RecordBytes();
  private readonly batches: Buffer[] = [];
  private readonly group = emptyOrigin();
  private open = false;
  private baseTimestamp = 0;
  private maxTimestamp = 0;
  /** Bytes of the batches done so far. */
  size = 0;

  get count(): number {
    return this.batches.length + (this.open ? 1 : 0);
  }

  /** Whether a copy of `o` goes into the batch being rebuilt (a byte budget may only stop between batches). */
  continues(o: CopyOrigin): boolean {
    return this.open && sameBatch(this.group, o);
  }

  async add(copy: CarriedCopy): Promise<void> {
    const o = copy.origin;
    if (this.open && !sameBatch(this.group, o)) await this.close();
    if (!this.open) {
      Object.assign(this.group, o);
      this.open = true;
      this.baseTimestamp = o.timestamp;
      this.maxTimestamp = o.timestamp;
    }
    this.maxTimestamp = Math.max(this.maxTimestamp, o.timestamp);
    const p = copy.parts;
    const r = this.records;
    const timestampDelta = o.logAppendTime ? 0 : o.timestamp - this.baseTimestamp;
    const offsetDelta = o.offset - this.group.batchBase;
    const headersBytes = p.headersEnd - p.headersStart;
    const body =
      1 +
      sizeOfVarlong(timestampDelta) +
      sizeOfVarint(offsetDelta) +
      bytesFieldSize(p.keyLength) +
      bytesFieldSize(p.valueLength) +
      sizeOfVarint(p.headerCount) +
      headersBytes;
    r.reserve(sizeOfVarint(body) + body);
    const out = r.buf;
    let pos = writeVarint(out, r.length, body);
    out[pos++] = 0;
    pos = writeVarlong(out, pos, timestampDelta);
    pos = writeVarint(out, pos, offsetDelta);
    pos = writeBytesField(out, pos, p.payload, p.keyStart, p.keyLength);
    pos = writeBytesField(out, pos, p.payload, p.valueStart, p.valueLength);
    pos = writeVarint(out, pos, p.headerCount);
    pos += p.payload.copy(out, pos, p.headersStart, p.headersEnd);
    r.length = pos;
    r.count++;
  }

  /** The bytes the open batch would take, roughly (before compression): for byte budgets. */
  get pendingBytes(): number {
    return this.records.length;
  }

  /** Every batch rebuilt, in offset order. */
  async finish(): Promise<Buffer[]> {
    await this.close();
    return this.batches;
  }

  private async close(): Promise<void> {
    if (!this.open) return;
    const g = this.group;
    const raw = this.records.take();
    const attributes = (g.logAppendTime ? Attributes.timestampType : 0) | (g.transactional ? Attributes.transactional : 0);
    const batch = await encodeBatch(
      {
        baseOffset: BigInt(g.batchBase),
        partitionLeaderEpoch: g.leaderEpoch,
        attributes,
        lastOffsetDelta: g.batchLast - g.batchBase,
        baseTimestamp: BigInt(g.logAppendTime ? this.maxTimestamp : this.baseTimestamp),
        maxTimestamp: BigInt(this.maxTimestamp),
        producerId: g.producerId,
        producerEpoch: g.producerEpoch,
        baseSequence: -1,
      },
      raw,
      g.codec,
    );
    this.batches.push(batch);
    this.size += batch.length;
    this.open = false;
  }
}
