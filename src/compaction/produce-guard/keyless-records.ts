/**
 * Which records of a Produce partition's data have a null key, judged the way Kafka's
 * LogValidator judges a compacted topic's batch. Data Kafka would reject for another reason
 * first (zstd before Produce v7, a bad CRC, a control batch, an offset range that disagrees with
 * the count, a sequence missing for a producer id, more than one batch, a cut-off batch) is left
 * for the upstream to reject with its own error, so the client sees the error Kafka would give.
 */
import { Compression } from '../../protocol/records/compression.js';
import { batchPayload, CorruptRecordError, iterateBatches, verifyCrc, type BatchHeader } from '../../protocol/records/batch.js';
import { Cursor } from '../../protocol/records/varint.js';
import { CARRY_HEADER_KEY } from '../../protocol/carry/carry-record.js';

/**
 * What the upstream must judge, or the batch indices (0-based) of the records without a key and
 * of the records that pose as kcompact's own carry records (docs/carrying.md): in a batch without
 * a producer, a record whose first header is kcompact.carry. Any record of the batch, not only the
 * first: a store that re-batches what it serves (Event Hubs) hands each record out as a batch of
 * its own, and a batch without a producer whose first record starts with the header is taken for
 * kcompact's.
 */
export type KeyCheck = { judge: 'upstream' } | { judge: 'proxy'; keyless: number[]; reserved: number[] };

const UPSTREAM: KeyCheck = { judge: 'upstream' };

/** Produce v7 introduced zstd; Kafka refuses it earlier with UNSUPPORTED_COMPRESSION_TYPE. */
const FIRST_ZSTD_VERSION = 7;

function kafkaWouldRejectFirst(records: Buffer, batch: BatchHeader, produceVersion: number): boolean {
  if (batch.compression === Compression.Zstd && produceVersion < FIRST_ZSTD_VERSION) return true;
  if (!verifyCrc(records, batch)) return true;
  if (batch.isControl) return true;
  if (batch.recordCount <= 0 || batch.lastOffsetDelta + 1 !== batch.recordCount) return true;
  return batch.producerId >= 0n && batch.baseSequence < 0;
}

export async function checkKeys(records: Buffer | null, produceVersion: number): Promise<KeyCheck> {
  if (!records || records.length === 0) return UPSTREAM;
  try {
    const { batches, truncatedTail } = iterateBatches(records);
    if (batches.length !== 1 || truncatedTail.length !== 0) return UPSTREAM;
    const batch = batches[0]!;
    if (kafkaWouldRejectFirst(records, batch, produceVersion)) return UPSTREAM;
    const payload = await batchPayload(records, batch);
    // Records are walked to their first header only when the header's name is in the payload
    // at all: searching the bytes costs less than reading up to every record's headers.
    const carryToo = batch.producerId < 0n && payload.indexOf(CARRY_HEADER_KEY) !== -1;
    return scanRecords(payload, batch.recordCount, carryToo) ?? UPSTREAM;
  } catch (err) {
    if (err instanceof CorruptRecordError) return UPSTREAM;
    throw err;
  }
}

const NOT_CARRY = -1;
const CARRY_KEY_LENGTH = CARRY_HEADER_KEY.length;

/**
 * The indices of records whose key length is -1 and, when `carryToo`, of those whose first
 * header's key is kcompact.carry (whatever its value: one kcompact cannot read is refused all the
 * same). Only the fields up to the first header's key are read, and each record is skipped by
 * its length: a full decode would allocate per record and cost many times as much
 * (docs/performance.md) on a produce path that sees every byte. Records whose lengths do not add
 * up to the payload are the upstream's to reject (undefined).
 */
function scanRecords(payload: Buffer, count: number, carryToo: boolean): KeyCheck | undefined {
  const keyless: number[] = [];
  const reserved: number[] = [];
  const c = new Cursor(payload, 0, payload.length);
  for (let i = 0; i < count; i++) {
    const length = c.varint();
    const end = c.pos + length;
    if (length <= 0 || end > payload.length) return undefined;
    c.limit = end;
    c.pos += 1; // attributes
    c.varlong(); // timestamp delta
    c.varint(); // offset delta
    const keyLength = c.varint();
    if (keyLength === -1) keyless.push(i);
    if (carryToo && firstHeaderKeyLength(c, keyLength) === CARRY_KEY_LENGTH && c.pos + CARRY_KEY_LENGTH <= end) {
      if (payload.compare(CARRY_HEADER_KEY, 0, CARRY_KEY_LENGTH, c.pos, c.pos + CARRY_KEY_LENGTH) === 0) reserved.push(i);
    }
    c.pos = end;
    c.limit = payload.length;
  }
  return c.pos === payload.length ? { judge: 'proxy', keyless, reserved } : undefined;
}

/** With `c` just past a record's key length: skips key and value and reads the first header's key length (NOT_CARRY without headers). */
function firstHeaderKeyLength(c: Cursor, keyLength: number): number {
  if (keyLength > 0) c.pos += keyLength;
  const valueLength = c.varint();
  if (valueLength > 0) c.pos += valueLength;
  if (c.pos >= c.limit || c.varint() < 1) return NOT_CARRY;
  return c.varint();
}
