import { BATCH_HEADER_SIZE, TimestampType, type BatchHeader } from './batch-header.js';
import { decompress, decompressPrefix, type DecompressOptions } from './compression.js';
import { CorruptRecordError } from './errors.js';
import { Cursor } from './varint.js';

/*
 * Record (inside a batch's possibly-compressed payload):
 *   length varint (bytes after itself), attributes int8, timestampDelta varlong,
 *   offsetDelta varint, key length varint (-1 = null) + bytes, value length varint (-1 = null) +
 *   bytes, header count varint, headers: [key length varint + bytes, value length varint + bytes]
 * Everything handed out is a view of the payload: nothing is copied, so a filter can rebuild a
 * batch from the raw [start, end) ranges of the records it keeps.
 */

/** A record's bytes in the payload, its length prefix included. */
export interface RecordSpan {
  start: number;
  end: number;
}

export interface RecordHeader {
  key: Buffer;
  value: Buffer | null;
}

export interface DecodedRecord extends RecordSpan {
  attributes: number;
  /** A number: exact for any |delta| up to 2^53 (see varint.ts). */
  timestampDelta: number;
  offsetDelta: number;
  key: Buffer | null;
  value: Buffer | null;
  headers: RecordHeader[];
  /** The (decompressed) records payload that start/end, key, value and headers point into. */
  payload: Buffer;
}

/** What the key index needs from a record; headers are validated but not collected. */
export interface RecordKey extends RecordSpan {
  offsetDelta: number;
  /** Absolute timestamp: baseTimestamp + delta, or the batch's maxTimestamp for LogAppendTime. */
  timestamp: number;
  key: Buffer | null;
  valueIsNull: boolean;
  /** How many headers the record has, and where they start in the payload (they run to `end`). */
  headerCount: number;
  headersStart: number;
  payload: Buffer;
}

/** Length varint (1 byte) + attributes, timestamp, offset, key, value, header count (1 each). */
const MIN_RECORD_SIZE = 7;
const MIN_BODY_SIZE = MIN_RECORD_SIZE - 1;

function corrupt(why: string): CorruptRecordError {
  return new CorruptRecordError(`corrupt record: ${why}`);
}

/** The fields of the record just read, reused across records so the walk allocates nothing. */
export class RecordScan {
  start = 0;
  end = 0;
  attributes = 0;
  timestampDelta = 0;
  offsetDelta = 0;
  keyStart = 0;
  keyLength = -1;
  valueLength = -1;
  valueStart = 0;
  headerCount = 0;
  /** Where the headers start (they run to `end`). */
  headersStart = 0;
}

/** Reads one record at c.pos into s, collecting its headers when `headers` is given. */
function readRecord(c: Cursor, s: RecordScan, headers: RecordHeader[] | null): void {
  const payloadEnd = c.limit;
  s.start = c.pos;
  const bodyLength = c.varint();
  if (bodyLength < MIN_BODY_SIZE || bodyLength > payloadEnd - c.pos) {
    throw corrupt(`length ${bodyLength} at byte ${s.start} does not fit the ${payloadEnd - c.pos} bytes left`);
  }
  const end = c.pos + bodyLength;
  c.limit = end;
  s.attributes = c.int8();
  s.timestampDelta = c.varlong();
  s.offsetDelta = c.varint();
  s.keyLength = readBytesLength(c, 'key');
  s.keyStart = c.pos;
  c.pos += Math.max(s.keyLength, 0);
  s.valueLength = readBytesLength(c, 'value');
  s.valueStart = c.pos;
  c.pos += Math.max(s.valueLength, 0);
  const headerCount = c.varint();
  // Each header takes at least two bytes (two length varints).
  if (headerCount < 0 || headerCount > (end - c.pos) / 2) throw corrupt(`bad header count ${headerCount}`);
  s.headerCount = headerCount;
  s.headersStart = c.pos;
  const buf = c.buf;
  for (let i = 0; i < headerCount; i++) {
    const keyLength = readBytesLength(c, 'header key');
    if (keyLength < 0) throw corrupt('null header key');
    const keyStart = c.pos;
    c.pos += keyLength;
    const valueLength = readBytesLength(c, 'header value');
    const valueStart = c.pos;
    c.pos += Math.max(valueLength, 0);
    headers?.push({
      key: buf.subarray(keyStart, keyStart + keyLength),
      value: valueLength < 0 ? null : buf.subarray(valueStart, valueStart + valueLength),
    });
  }
  if (c.pos !== end) throw corrupt(`length says ${bodyLength} bytes but the fields end ${end - c.pos} bytes early`);
  s.end = end;
  c.limit = payloadEnd;
}

/**
 * Reads the layout of the record at `pos` of a payload into `s` (headers checked, not collected)
 * and returns where the next record starts.
 */
export function scanRecordAt(payload: Buffer, pos: number, s: RecordScan): number {
  const c = new Cursor(payload, pos, payload.length);
  readRecord(c, s, null);
  return s.end;
}

/** A length varint (-1 = null) whose bytes must fit before the record's end. */
function readBytesLength(c: Cursor, what: string): number {
  const length = c.varint();
  if (length < -1 || length > c.limit - c.pos) throw corrupt(`${what} length ${length} does not fit the record`);
  return length;
}

function checkCount(payload: Buffer, header: BatchHeader): void {
  if (header.recordCount > payload.length / MIN_RECORD_SIZE) {
    throw corrupt(`batch claims ${header.recordCount} records in ${payload.length} bytes`);
  }
}

function checkEnd(c: Cursor, payload: Buffer): void {
  if (c.pos !== payload.length) throw corrupt(`${payload.length - c.pos} bytes after the last record`);
}

/**
 * The batch's records payload: a view of buf when uncompressed, else decompressed. Like Java, a
 * batch that declares no records yields an empty payload without looking at its body.
 */
export async function batchPayload(buf: Buffer, header: BatchHeader, options?: DecompressOptions): Promise<Buffer> {
  if (header.recordCount === 0) return buf.subarray(header.end, header.end);
  const raw = buf.subarray(header.start + BATCH_HEADER_SIZE, header.end);
  return header.compression === 0 ? raw : decompress(header.compression, raw, options);
}

/** Enough for most records' first bytes: one decode of this much usually holds the whole first record. */
const FIRST_RECORD_GUESS = 256;

/**
 * The payload from its start through (at least) its first record, decompressing little more than
 * that where the codec allows (compression.ts, decompressPrefix): a look at the first record of
 * a batch costs about that record, not the batch.
 */
export async function firstRecordPayload(buf: Buffer, header: BatchHeader, options?: DecompressOptions): Promise<Buffer> {
  if (header.recordCount === 0 || header.compression === 0) return batchPayload(buf, header, options);
  const raw = buf.subarray(header.start + BATCH_HEADER_SIZE, header.end);
  const head = await decompressPrefix(header.compression, raw, FIRST_RECORD_GUESS, options);
  if (head.length < FIRST_RECORD_GUESS) return head;
  const c = new Cursor(head, 0, head.length);
  const need = c.varint() + c.pos;
  return need <= head.length ? head : decompressPrefix(header.compression, raw, need, options);
}

/** Every record of a payload, with its key, value and headers as views of the payload. */
export function parseRecords(payload: Buffer, header: BatchHeader): DecodedRecord[] {
  checkCount(payload, header);
  const records: DecodedRecord[] = [];
  const c = new Cursor(payload, 0, payload.length);
  const s = new RecordScan();
  for (let i = 0; i < header.recordCount; i++) {
    const headers: RecordHeader[] = [];
    readRecord(c, s, headers);
    records.push({
      start: s.start,
      end: s.end,
      attributes: s.attributes,
      timestampDelta: s.timestampDelta,
      offsetDelta: s.offsetDelta,
      key: s.keyLength < 0 ? null : payload.subarray(s.keyStart, s.keyStart + s.keyLength),
      value: s.valueLength < 0 ? null : payload.subarray(s.valueStart, s.valueStart + s.valueLength),
      headers,
      payload,
    });
  }
  checkEnd(c, payload);
  return records;
}

/**
 * A batch's records read one at a time into a RecordScan (headers checked, not collected), for
 * the index's ingest: scanRecordKeys's object and key view per record, allocated nothing here.
 */
export class RecordWalk {
  private readonly c: Cursor;
  private left: number;
  private readonly logAppendTime: boolean;
  private readonly baseTimestamp: number;
  private readonly maxTimestamp: number;

  constructor(
    private readonly payload: Buffer,
    header: BatchHeader,
  ) {
    checkCount(payload, header);
    this.c = new Cursor(payload, 0, payload.length);
    this.left = header.recordCount;
    this.logAppendTime = header.timestampType === TimestampType.LogAppendTime;
    this.baseTimestamp = Number(header.baseTimestamp);
    this.maxTimestamp = Number(header.maxTimestamp);
  }

  /** Reads the next record into `s`; false after the last, once the payload is found to end there. */
  next(s: RecordScan): boolean {
    if (this.left === 0) {
      checkEnd(this.c, this.payload);
      return false;
    }
    this.left--;
    readRecord(this.c, s, null);
    return true;
  }

  /** The record's absolute timestamp, as scanRecordKeys gives it. */
  timestampOf(s: RecordScan): number {
    return this.logAppendTime ? this.maxTimestamp : this.baseTimestamp + s.timestampDelta;
  }
}

/** The key index's view of each record: offset, timestamp, key, tombstone or not. */
export function scanRecordKeys(payload: Buffer, header: BatchHeader): RecordKey[] {
  const walk = new RecordWalk(payload, header);
  const s = new RecordScan();
  const keys: RecordKey[] = [];
  while (walk.next(s)) {
    keys.push({
      start: s.start,
      end: s.end,
      offsetDelta: s.offsetDelta,
      timestamp: walk.timestampOf(s),
      key: s.keyLength < 0 ? null : payload.subarray(s.keyStart, s.keyStart + s.keyLength),
      valueIsNull: s.valueLength < 0,
      headerCount: s.headerCount,
      headersStart: s.headersStart,
      payload,
    });
  }
  return keys;
}

/** Decompresses (when needed) and decodes every record of the batch. */
export async function decodeRecords(buf: Buffer, header: BatchHeader, options?: DecompressOptions): Promise<DecodedRecord[]> {
  return parseRecords(await batchPayload(buf, header, options), header);
}

/** Decompresses (when needed) and reads what the key index needs from each record. */
export async function decodeRecordKeys(buf: Buffer, header: BatchHeader, options?: DecompressOptions): Promise<RecordKey[]> {
  return scanRecordKeys(await batchPayload(buf, header, options), header);
}

/**
 * Visits the headers of a record a scan found (RecordKey's headerCount and headersStart), as
 * positions in the payload: nothing is allocated, for the index's look at every record's headers.
 * The scan already checked that they fit.
 */
export function eachHeader(
  payload: Buffer,
  headersStart: number,
  headerCount: number,
  visit: (keyStart: number, keyEnd: number, valueStart: number, valueEnd: number) => void,
): void {
  const c = new Cursor(payload, headersStart, payload.length);
  for (let i = 0; i < headerCount; i++) {
    const keyLength = c.varint();
    const keyStart = c.pos;
    c.pos += keyLength;
    const valueLength = c.varint();
    const valueStart = c.pos;
    c.pos += Math.max(valueLength, 0);
    visit(keyStart, keyStart + keyLength, valueStart, valueLength < 0 ? -1 : valueStart + valueLength);
  }
}
