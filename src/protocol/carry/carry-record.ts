/**
 * How kcompact marks the records it writes into a compacted partition itself (docs/carrying.md):
 * a carried copy of a batch's survivors, and the markers that open and close a carry pass. The
 * mark is the record's first header, `kcompact.carry`, whose value says which kind of record it
 * is. A header is what every store and every codec keeps as written (a store may rebuild batches,
 * move offsets and timestamps, recompress; it never edits a record's headers), so every replica,
 * and an index rebuilt from the store, recognises them.
 *
 * A copy's value is a run of original batches as a client is served them: each with its survivors
 * only, at its original offsets, with its own header, codec and CRC, back to back as in a log
 * segment (carried-batch.ts).
 *
 * A release follows a pass's end just before the store is asked to let (part of) its range go,
 * and names the share groups that had read the partition by then: they read the originals where
 * they were, and a share group not named reads them from the pass's copies, below where the
 * store's log start went (docs/carrying.md, "Share groups").
 *
 * Header value layout (integers are Kafka's zigzag varints):
 *   kind int8, format int8, then per kind:
 *   copy:       pass varlong, horizon count varint, then per tombstone with a delete horizon:
 *               offset - the first batch's base varlong, horizon varlong (ascending offsets)
 *   pass start: release end varlong, topic start varlong
 *   pass end:   pass varlong, copies varlong, release end varlong
 *   release:    pass varlong, released end varlong, group count varint, then per group:
 *               length varint, UTF-8 name
 */
import { CorruptRecordError } from '../records/errors.js';
import { Cursor, sizeOfVarint, sizeOfVarlong, writeVarint, writeVarlong } from '../records/varint.js';

export const CARRY_HEADER_KEY = Buffer.from('kcompact.carry', 'latin1');
/** The format this version writes; a record of another one is refused rather than misread. */
export const CARRY_FORMAT = 2;

export const CarryKind = { None: 0, Copy: 1, PassStart: 2, PassEnd: 3, Release: 4 } as const;
export type CarryKind = (typeof CarryKind)[keyof typeof CarryKind];

/** What a copy's header says besides the batch it holds. */
export interface CopyMark {
  /** The pass that wrote the copy: the offset of its start marker. */
  pass: number;
  /**
   * The delete horizons (epoch ms) of the copy's tombstones that have one, as pairs of offset
   * delta from the first batch's base and horizon, flattened, by ascending delta.
   */
  horizons: number[];
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

export interface PassRelease {
  pass: number;
  /** Where the store is asked to move its log start: below it, the pass's copies hold the survivors. */
  releasedEnd: number;
  /** The share groups with a start offset for the partition when the store was asked. */
  groups: string[];
}

/** A carried record this version cannot read: a CorruptRecordError, so readers treat it as they treat a damaged batch. */
export class CarryFormatError extends CorruptRecordError {}

export function copyMarkSize(m: CopyMark): number {
  let size = 2 + sizeOfVarlong(m.pass) + sizeOfVarint(m.horizons.length / 2);
  for (let i = 0; i < m.horizons.length; i += 2) size += sizeOfVarlong(m.horizons[i]!) + sizeOfVarlong(m.horizons[i + 1]!);
  return size;
}

/** Writes a copy's header value at `pos`; returns the end. */
export function writeCopyMark(out: Buffer, pos: number, m: CopyMark): number {
  out[pos++] = CarryKind.Copy;
  out[pos++] = CARRY_FORMAT;
  pos = writeVarlong(out, pos, m.pass);
  pos = writeVarint(out, pos, m.horizons.length / 2);
  for (let i = 0; i < m.horizons.length; i += 2) {
    pos = writeVarlong(out, pos, m.horizons[i]!);
    pos = writeVarlong(out, pos, m.horizons[i + 1]!);
  }
  return pos;
}

export function encodeCopyMark(m: CopyMark): Buffer {
  const out = Buffer.allocUnsafe(copyMarkSize(m));
  writeCopyMark(out, 0, m);
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

export function encodeRelease(r: PassRelease): Buffer {
  const names = r.groups.map((g) => Buffer.from(g, 'utf8'));
  let size = 2 + sizeOfVarlong(r.pass) + sizeOfVarlong(r.releasedEnd) + sizeOfVarint(names.length);
  for (const n of names) size += sizeOfVarint(n.length) + n.length;
  const out = Buffer.allocUnsafe(size);
  out[0] = CarryKind.Release;
  out[1] = CARRY_FORMAT;
  let pos = writeVarint(out, writeVarlong(out, writeVarlong(out, 2, r.pass), r.releasedEnd), names.length);
  for (const n of names) {
    pos = writeVarint(out, pos, n.length);
    pos += n.copy(out, pos);
  }
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
  if (kind < CarryKind.Copy || kind > CarryKind.Release) throw new CarryFormatError(`unknown carried record kind ${kind}`);
  return kind as CarryKind;
}

/** Reads a copy's header value from buf[start, end) into `m` (its horizons array reused). */
export function readCopyMark(buf: Buffer, start: number, end: number, m: CopyMark): CopyMark {
  if (kindOf(buf, start, end) !== CarryKind.Copy) throw new CarryFormatError(`a carry marker where a copy was expected`);
  const c = new Cursor(buf, start + 2, end);
  m.pass = c.varlong();
  const count = c.varint();
  if (count < 0 || count > end - c.pos) throw new CarryFormatError(`a carried copy's header claims ${count} delete horizons`);
  m.horizons.length = 0;
  let previous = -1;
  for (let i = 0; i < count; i++) {
    const delta = c.varlong();
    if (delta <= previous) throw new CarryFormatError(`a carried copy's delete horizons are not in offset order`);
    previous = delta;
    m.horizons.push(delta, c.varlong());
  }
  if (c.pos !== end) throw new CarryFormatError(`a carried copy's header does not hold what its format says`);
  return m;
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

export function readRelease(buf: Buffer, start: number, end: number): PassRelease {
  if (kindOf(buf, start, end) !== CarryKind.Release) throw new CarryFormatError('a carry record that is not a release');
  const c = new Cursor(buf, start + 2, end);
  const pass = c.varlong();
  const releasedEnd = c.varlong();
  const count = c.varint();
  if (count < 0 || count > end - c.pos) throw new CarryFormatError(`a carry release claims ${count} share groups`);
  const groups: string[] = [];
  for (let i = 0; i < count; i++) {
    const length = c.varint();
    if (length < 0 || c.pos + length > end) throw new CarryFormatError('a carry release whose group name does not fit it');
    groups.push(buf.toString('utf8', c.pos, c.pos + length));
    c.pos += length;
  }
  if (c.pos !== end) throw new CarryFormatError('a carry release longer than its format');
  return { pass, releasedEnd, groups };
}

export function emptyMark(): CopyMark {
  return { pass: 0, horizons: [] };
}

/** A record's carry kind from its decoded headers: CarryKind.None for a client's record. */
export function carryKindOf(headers: readonly { key: Buffer; value: Buffer | null }[]): CarryKind {
  const first = headers[0];
  if (!first || !first.key.equals(CARRY_HEADER_KEY)) return CarryKind.None;
  if (first.value === null) throw new CarryFormatError('a carry header without a value');
  return kindOf(first.value, 0, first.value.length);
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
