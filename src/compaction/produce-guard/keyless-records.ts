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
import { CarryKind, carryKindAt } from '../carry/carry-record.js';

/**
 * What the upstream must judge, or the batch indices (0-based) of the records without a key, and
 * whether the batch poses as kcompact's own carry records (docs/carrying.md): a batch without a
 * producer whose first record's first header is kcompact.carry would be taken for one.
 */
export type KeyCheck = { judge: 'upstream' } | { judge: 'proxy'; keyless: number[]; reserved: boolean };

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
    const keyless = keylessIndices(payload, batch.recordCount);
    return keyless ? { judge: 'proxy', keyless, reserved: batch.producerId < 0n && posesAsCarried(payload) } : UPSTREAM;
  } catch (err) {
    if (err instanceof CorruptRecordError) return UPSTREAM;
    throw err;
  }
}

function posesAsCarried(payload: Buffer): boolean {
  try {
    return carryKindAt(payload, 0) !== CarryKind.None;
  } catch (err) {
    // A kcompact.carry header kcompact cannot read is refused all the same.
    if (err instanceof CorruptRecordError) return true;
    throw err;
  }
}

/**
 * The indices of records whose key length is -1. Only the fields up to the key are read, and
 * each record is skipped by its length: a full decode would allocate per record and cost many
 * times as much (docs/performance.md) on a produce path that sees every byte. Records whose
 * lengths do not add up to the payload are the upstream's to reject (undefined).
 */
function keylessIndices(payload: Buffer, count: number): number[] | undefined {
  const keyless: number[] = [];
  const c = new Cursor(payload, 0, payload.length);
  for (let i = 0; i < count; i++) {
    const length = c.varint();
    const end = c.pos + length;
    if (length <= 0 || end > payload.length) return undefined;
    c.limit = end;
    c.pos += 1; // attributes
    c.varlong(); // timestamp delta
    c.varint(); // offset delta
    if (c.varint() === -1) keyless.push(i);
    c.pos = end;
    c.limit = payload.length;
  }
  return c.pos === payload.length ? keyless : undefined;
}
