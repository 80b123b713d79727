/**
 * How kcompact marks the records it writes into a compacted partition itself (docs/carrying.md):
 * a carried copy of a surviving record, and the markers that open and close a carry pass. The
 * mark is the record's first header, `kcompact.carry`, whose value says which kind of record it
 * is and, for a copy, where and what the original was. A header is what every store and every
 * codec keeps as written (a store may rebuild batches, move offsets and timestamps, recompress;
 * it never edits a record's headers), so every replica, and an index rebuilt from the store,
 * recognises them.
 *
 * Value layout (integers are Kafka's zigzag varints):
 *   kind int8, format int8, then per kind:
 *   copy:       flags int8 (0x01 transactional, 0x02 LogAppendTime, 0x04 delete horizon follows,
 *               0x38 the original batch's codec), pass varlong, offset varlong, timestamp varlong,
 *               offset - batch base varint, batch last - offset varint, leader epoch varint,
 *               producer id varlong, producer epoch varint, [delete horizon varlong]
 *   pass start: release end varlong, topic start varlong
 *   pass end:   pass varlong, copies varlong, release end varlong
 */
import { CorruptRecordError } from '../../protocol/records/errors.js';
import { Cursor, sizeOfVarint, sizeOfVarlong, writeVarint, writeVarlong } from '../../protocol/records/varint.js';

export const CARRY_HEADER_KEY = Buffer.from('kcompact.carry', 'latin1');
/** The format this version writes; a record of a later one is refused rather than misread. */
export const CARRY_FORMAT = 1;

export const CarryKind = { None: 0, Copy: 1, PassStart: 2, PassEnd: 3 } as const;
export type CarryKind = (typeof CarryKind)[keyof typeof CarryKind];

const Flag = { transactional: 0x01, logAppendTime: 0x02, horizon: 0x04, codecShift: 3, codecMask: 0x38 } as const;

/** What a client saw of a record and its batch, kept in its carried copy. */
export interface CopyOrigin {
  /** The pass that wrote the copy: the offset of its start marker. */
  pass: number;
  offset: number;
  timestamp: number;
  /** The original batch's base and last offsets, which a rebuilt batch keeps as Kafka's cleaner does. */
  batchBase: number;
  batchLast: number;
  leaderEpoch: number;
  /** A bigint: stores may hand out ids past 2^53 (kfake draws random 63-bit ones). */
  producerId: bigint;
  producerEpoch: number;
  transactional: boolean;
  logAppendTime: boolean;
  codec: number;
  /** The tombstone's delete horizon (epoch ms), or -1 while none is set. */
  horizon: number;
}

export interface PassStart {
  /** Everything below this offset of the store's log is let go once the pass has ended. */
  releaseEnd: number;
  /** The compacted topic's own log start: what ListOffsets EARLIEST answers. */
  topicStart: number;
}

export interface PassEnd {
  pass: number;
  copies: number;
  releaseEnd: number;
}

/** A carried record this version cannot read: a CorruptRecordError, so readers treat it as they treat a damaged batch. */
export class CarryFormatError extends CorruptRecordError {}

export function copyValueSize(o: CopyOrigin): number {
  return (
    3 +
    sizeOfVarlong(o.pass) +
    sizeOfVarlong(o.offset) +
    sizeOfVarlong(o.timestamp) +
    sizeOfVarint(o.offset - o.batchBase) +
    sizeOfVarint(o.batchLast - o.offset) +
    sizeOfVarint(o.leaderEpoch) +
    sizeOfVarlong(o.producerId) +
    sizeOfVarint(o.producerEpoch) +
    (o.horizon >= 0 ? sizeOfVarlong(o.horizon) : 0)
  );
}

/** Writes a copy's header value at `pos`; returns the end. */
export function writeCopyValue(out: Buffer, pos: number, o: CopyOrigin): number {
  if (o.batchBase > o.offset || o.batchLast < o.offset) throw new RangeError(`offset ${o.offset} is outside its batch [${o.batchBase}, ${o.batchLast}]`);
  out[pos++] = CarryKind.Copy;
  out[pos++] = CARRY_FORMAT;
  out[pos++] =
    (o.transactional ? Flag.transactional : 0) |
    (o.logAppendTime ? Flag.logAppendTime : 0) |
    (o.horizon >= 0 ? Flag.horizon : 0) |
    ((o.codec << Flag.codecShift) & Flag.codecMask);
  pos = writeVarlong(out, pos, o.pass);
  pos = writeVarlong(out, pos, o.offset);
  pos = writeVarlong(out, pos, o.timestamp);
  pos = writeVarint(out, pos, o.offset - o.batchBase);
  pos = writeVarint(out, pos, o.batchLast - o.offset);
  pos = writeVarint(out, pos, o.leaderEpoch);
  pos = writeVarlong(out, pos, o.producerId);
  pos = writeVarint(out, pos, o.producerEpoch);
  if (o.horizon >= 0) pos = writeVarlong(out, pos, o.horizon);
  return pos;
}

export function encodeCopyValue(o: CopyOrigin): Buffer {
  const out = Buffer.allocUnsafe(copyValueSize(o));
  writeCopyValue(out, 0, o);
  return out;
}

export function encodePassStart(p: PassStart): Buffer {
  const out = Buffer.allocUnsafe(2 + sizeOfVarlong(p.releaseEnd) + sizeOfVarlong(p.topicStart));
  out[0] = CarryKind.PassStart;
  out[1] = CARRY_FORMAT;
  writeVarlong(out, writeVarlong(out, 2, p.releaseEnd), p.topicStart);
  return out;
}

export function encodePassEnd(p: PassEnd): Buffer {
  const out = Buffer.allocUnsafe(2 + sizeOfVarlong(p.pass) + sizeOfVarlong(p.copies) + sizeOfVarlong(p.releaseEnd));
  out[0] = CarryKind.PassEnd;
  out[1] = CARRY_FORMAT;
  writeVarlong(out, writeVarlong(out, writeVarlong(out, 2, p.pass), p.copies), p.releaseEnd);
  return out;
}

/** The kind and format of a carry header value in buf[start, end); throws on a format this version cannot read. */
function kindOf(buf: Buffer, start: number, end: number): CarryKind {
  if (end - start < 2) throw new CarryFormatError(`a ${CARRY_HEADER_KEY.toString('latin1')} header of ${end - start} bytes`);
  const kind = buf[start]!;
  const format = buf[start + 1]!;
  if (format !== CARRY_FORMAT) {
    throw new CarryFormatError(
      `a carried record of format ${format}, written by another kcompact version (this one reads format ${CARRY_FORMAT}): run one version`,
    );
  }
  if (kind !== CarryKind.Copy && kind !== CarryKind.PassStart && kind !== CarryKind.PassEnd) throw new CarryFormatError(`unknown carried record kind ${kind}`);
  return kind as CarryKind;
}

/** Reads a copy's header value from buf[start, end) into `o`. */
export function readCopyValue(buf: Buffer, start: number, end: number, o: CopyOrigin): void {
  if (kindOf(buf, start, end) !== CarryKind.Copy) throw new CarryFormatError(`a carry marker where a copy was expected`);
  const c = new Cursor(buf, start + 2, end);
  const flags = c.int8();
  o.transactional = (flags & Flag.transactional) !== 0;
  o.logAppendTime = (flags & Flag.logAppendTime) !== 0;
  o.codec = (flags & Flag.codecMask) >> Flag.codecShift;
  o.pass = c.varlong();
  o.offset = c.varlong();
  o.timestamp = c.varlong();
  o.batchBase = o.offset - c.varint();
  o.batchLast = o.offset + c.varint();
  o.leaderEpoch = c.varint();
  o.producerId = c.varlongBig();
  o.producerEpoch = c.varint();
  o.horizon = flags & Flag.horizon ? c.varlong() : -1;
  if (c.pos !== end || o.batchBase > o.offset || o.batchLast < o.offset || o.offset < 0) {
    throw new CarryFormatError(`a carried copy's header does not hold what its format says`);
  }
}

export function readPassStart(buf: Buffer, start: number, end: number): PassStart {
  if (kindOf(buf, start, end) !== CarryKind.PassStart) throw new CarryFormatError('a carry record that is not a pass start');
  const c = new Cursor(buf, start + 2, end);
  const p = { releaseEnd: c.varlong(), topicStart: c.varlong() };
  if (c.pos !== end) throw new CarryFormatError('a carry pass start longer than its format');
  return p;
}

export function readPassEnd(buf: Buffer, start: number, end: number): PassEnd {
  if (kindOf(buf, start, end) !== CarryKind.PassEnd) throw new CarryFormatError('a carry record that is not a pass end');
  const c = new Cursor(buf, start + 2, end);
  const p = { pass: c.varlong(), copies: c.varlong(), releaseEnd: c.varlong() };
  if (c.pos !== end) throw new CarryFormatError('a carry pass end longer than its format');
  return p;
}

export function emptyOrigin(): CopyOrigin {
  return {
    pass: 0,
    offset: 0,
    timestamp: 0,
    batchBase: 0,
    batchLast: 0,
    leaderEpoch: -1,
    producerId: -1n,
    producerEpoch: -1,
    transactional: false,
    logAppendTime: false,
    codec: 0,
    horizon: -1,
  };
}

/**
 * The offset a decoded record stands for, for readers that see the store's records one by one
 * (the configs topic's reader): a client's record its own, a carried copy its original's, a
 * pass marker none (null). `into` receives a copy's origin.
 */
export function offsetStoodFor(headers: readonly { key: Buffer; value: Buffer | null }[], offset: number, into = emptyOrigin()): number | null {
  const first = headers[0];
  if (!first || !first.key.equals(CARRY_HEADER_KEY)) return offset;
  if (first.value === null) throw new CarryFormatError('a carry header without a value');
  if (kindOf(first.value, 0, first.value.length) !== CarryKind.Copy) return null;
  readCopyValue(first.value, 0, first.value.length, into);
  return into.offset;
}

/**
 * The carry kind of the record at `start` of a batch payload, from its first header alone:
 * CarryKind.None for a client's record. Only the length prefixes are read.
 */
export function carryKindAt(payload: Buffer, start: number): CarryKind {
  const c = new Cursor(payload, start, payload.length);
  const length = c.varint();
  c.limit = Math.min(c.pos + length, payload.length);
  c.pos += 1;
  c.varlong();
  c.varint();
  skipBytes(c);
  skipBytes(c);
  if (c.varint() < 1) return CarryKind.None;
  const keyLength = c.varint();
  if (keyLength !== CARRY_HEADER_KEY.length || c.pos + keyLength > c.limit) return CarryKind.None;
  if (payload.compare(CARRY_HEADER_KEY, 0, keyLength, c.pos, c.pos + keyLength) !== 0) return CarryKind.None;
  c.pos += keyLength;
  const valueLength = c.varint();
  if (valueLength < 0 || c.pos + valueLength > c.limit) throw new CarryFormatError('a carry header without a value');
  return kindOf(payload, c.pos, c.pos + valueLength);
}

function skipBytes(c: Cursor): void {
  const n = c.varint();
  if (n > 0) c.pos += n;
  if (c.pos > c.limit) throw new CorruptRecordError('record data ends inside its key or value');
}
