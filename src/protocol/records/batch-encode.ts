import { Attributes, BATCH_HEADER_SIZE, LOG_OVERHEAD, Offsets, writeBatchHeader, type BatchFields, type BatchHeader } from './batch-header.js';
import { Compression, compress } from './compression.js';
import { crc32c } from './crc32c.js';
import { CorruptRecordError } from './errors.js';
import type { RecordHeader, RecordSpan } from './record-decode.js';
import { sizeOfVarint, sizeOfVarlong, writeVarint, writeVarlong } from './varint.js';

/** A record to encode; a DecodedRecord is one. */
export interface RecordInput {
  attributes?: number;
  timestampDelta: number | bigint;
  offsetDelta: number;
  key: Buffer | null;
  value: Buffer | null;
  headers?: readonly RecordHeader[];
}

/** Records already in wire form, back to back. */
export interface RawRecords {
  bytes: Buffer;
  count: number;
}

function sizeOfBytes(bytes: Buffer | null): number {
  return bytes === null ? 1 : sizeOfVarint(bytes.length) + bytes.length;
}

function writeBytes(out: Buffer, pos: number, bytes: Buffer | null): number {
  if (bytes === null) return writeVarint(out, pos, -1);
  pos = writeVarint(out, pos, bytes.length);
  return pos + bytes.copy(out, pos);
}

function bodySize(r: RecordInput): number {
  const headers = r.headers ?? [];
  let size = 1 + sizeOfVarlong(r.timestampDelta) + sizeOfVarint(r.offsetDelta);
  size += sizeOfBytes(r.key) + sizeOfBytes(r.value) + sizeOfVarint(headers.length);
  for (const h of headers) size += sizeOfBytes(h.key) + sizeOfBytes(h.value);
  return size;
}

/** Writes the records at `pos` of out (sized by the caller from `bodies`); returns the end. */
function writeRecords(out: Buffer, pos: number, records: readonly RecordInput[], bodies: Int32Array): number {
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    const headers = r.headers ?? [];
    pos = writeVarint(out, pos, bodies[i]!);
    out[pos++] = r.attributes ?? 0;
    pos = writeVarlong(out, pos, r.timestampDelta);
    pos = writeVarint(out, pos, r.offsetDelta);
    pos = writeBytes(out, pos, r.key);
    pos = writeBytes(out, pos, r.value);
    pos = writeVarint(out, pos, headers.length);
    for (const h of headers) {
      pos = writeBytes(out, pos, h.key);
      pos = writeBytes(out, pos, h.value);
    }
  }
  return pos;
}

/** Wraps an (already compressed, when codec is set) records body in a header. */
function assemble(fields: BatchFields, count: number, body: Buffer): Buffer {
  const out = Buffer.allocUnsafe(BATCH_HEADER_SIZE + body.length);
  body.copy(out, BATCH_HEADER_SIZE);
  writeBatchHeader(out, 0, fields, count, out.length);
  return out;
}

/**
 * A v2 batch of the given records compressed with codec: batchLength, recordCount and CRC are
 * computed, the compression bits of attributes set from codec, every other field kept as given.
 * A batch without records is written uncompressed, as Kafka writes empty batches: an empty
 * compressed body is not read everywhere (librdkafka takes a header-only Xerial stream for raw
 * snappy).
 */
export async function encodeBatch(fields: BatchFields, records: readonly RecordInput[] | RawRecords, codec: number): Promise<Buffer> {
  if (!Number.isInteger(codec) || codec < Compression.None || codec > Compression.Zstd) {
    throw new RangeError(`compression codec ${codec} is not one of Kafka's (0-4)`);
  }
  if (('bytes' in records ? records.count : records.length) === 0) codec = Compression.None;
  const withCodec = { ...fields, attributes: (fields.attributes & ~Attributes.compressionMask) | codec };
  if ('bytes' in records) {
    const body = codec === Compression.None ? records.bytes : await compress(codec, records.bytes);
    return assemble(withCodec, records.count, body);
  }
  const bodies = new Int32Array(records.length);
  let size = 0;
  for (let i = 0; i < records.length; i++) {
    const body = bodySize(records[i]!);
    bodies[i] = body;
    size += sizeOfVarint(body) + body;
  }
  if (codec === Compression.None) {
    // Encode straight into the batch: no intermediate buffer.
    const out = Buffer.allocUnsafe(BATCH_HEADER_SIZE + size);
    writeRecords(out, BATCH_HEADER_SIZE, records, bodies);
    writeBatchHeader(out, 0, withCodec, records.length, out.length);
    return out;
  }
  const plain = Buffer.allocUnsafe(size);
  writeRecords(plain, 0, records, bodies);
  return assemble(withCodec, records.length, await compress(codec, plain));
}

/**
 * The batch with only `kept` of its records (spans of `payload`, in payload order, as returned by
 * decodeRecords or decodeRecordKeys): the kept records' bytes are copied verbatim, so their offset
 * and timestamp deltas, keys, values and headers are untouched. Every header field is kept except
 * batchLength, recordCount and CRC, which are recomputed, and the body is recompressed with the
 * batch's codec. Keeping every record returns the original bytes; keeping none returns the
 * 61-byte empty batch Kafka's cleaner writes (DefaultRecordBatch.writeEmptyHeader).
 *
 * The original CRC is checked first: a corrupt batch must fail here rather than leave with a
 * fresh, valid CRC. A caller that has checked these very bytes before says so with `crcChecked`
 * (the fetch view: the indexer checks every batch it covers).
 */
export async function rebuildBatch(header: BatchHeader, payload: Buffer, kept: readonly RecordSpan[], crcChecked = false): Promise<Buffer> {
  if (kept.length === header.recordCount) return header.bytes;
  if (kept.length > header.recordCount) {
    throw new RangeError(`kept ${kept.length} records of a batch holding ${header.recordCount}`);
  }
  if (!crcChecked && crc32c(header.bytes, Offsets.attributes) !== header.crc) {
    throw new CorruptRecordError(`record batch at offset ${header.baseOffset} fails its CRC check`);
  }
  if (kept.length === 0) return emptyBatch(header);
  let size = 0;
  let previousEnd = 0;
  for (const span of kept) {
    if (span.start < previousEnd || span.end <= span.start || span.end > payload.length) {
      throw new RangeError(`record span [${span.start}, ${span.end}) is not an ordered range of the payload`);
    }
    size += span.end - span.start;
    previousEnd = span.end;
  }
  const compressed = header.compression !== Compression.None;
  const bodyOffset = compressed ? 0 : BATCH_HEADER_SIZE;
  const target = Buffer.allocUnsafe(bodyOffset + size);
  copySpans(payload, kept, target, bodyOffset);
  const out = compressed ? withHeaderRoom(await compress(header.compression, target)) : target;
  header.bytes.copy(out, 0, 0, BATCH_HEADER_SIZE);
  return sealed(out, kept.length);
}

/**
 * A batch whose header was copied from the original, with what a rebuild changes written afresh:
 * its length, its record count and then the CRC over everything after it.
 */
function sealed(out: Buffer, recordCount: number): Buffer {
  out.writeInt32BE(out.length - LOG_OVERHEAD, Offsets.batchLength);
  out.writeInt32BE(recordCount, Offsets.recordCount);
  out.writeUInt32BE(crc32c(out, Offsets.attributes), Offsets.crc);
  return out;
}

function withHeaderRoom(body: Buffer): Buffer {
  const out = Buffer.allocUnsafe(BATCH_HEADER_SIZE + body.length);
  body.copy(out, BATCH_HEADER_SIZE);
  return out;
}

/** Copies the spans to out at pos, one copy per run of adjacent records. */
function copySpans(payload: Buffer, spans: readonly RecordSpan[], out: Buffer, pos: number): void {
  let runStart = spans[0]!.start;
  let runEnd = spans[0]!.end;
  for (let i = 1; i < spans.length; i++) {
    const span = spans[i]!;
    if (span.start !== runEnd) {
      pos += payload.copy(out, pos, runStart, runEnd);
      runStart = span.start;
    }
    runEnd = span.end;
  }
  payload.copy(out, pos, runStart, runEnd);
}

/**
 * Kafka's empty batch: same base offset, last offset delta, producer id/epoch, base sequence and
 * leader epoch; no compression; baseTimestamp -1; maxTimestamp, timestamp type, transactional and
 * control flags kept. Made from the original header's bytes rather than its parsed fields: a read
 * of small batches empties tens of thousands, and writing the 64-bit fields from BigInts made
 * viewing one measurably slower (docs/performance.md).
 */
function emptyBatch(header: BatchHeader): Buffer {
  const out = Buffer.allocUnsafe(BATCH_HEADER_SIZE);
  header.bytes.copy(out, 0, 0, BATCH_HEADER_SIZE);
  out.writeInt16BE(header.attributes & (Attributes.timestampType | Attributes.transactional | Attributes.control), Offsets.attributes);
  out.fill(0xff, Offsets.baseTimestamp, Offsets.baseTimestamp + 8);
  return sealed(out, 0);
}
