import { BATCH_HEADER_SIZE, LOG_OVERHEAD, Offsets, readBatchHeader, type BatchHeader } from './batch-header.js';
import { CorruptRecordError } from './errors.js';

export interface BatchWalk {
  /** The complete batches, in order. */
  batches: BatchHeader[];
  /**
   * What follows the last complete batch: the start of a batch the broker cut at the fetch's byte
   * limit. Kafka sends it as is and clients skip it, so a rewritten response must carry it on
   * unchanged. Empty when the data ends on a batch boundary.
   */
  truncatedTail: Buffer;
}

/**
 * Splits a Fetch partition's `records` (a concatenation of v2 batches) into batch headers. A
 * complete batch that is malformed, or not magic 2, is a CorruptRecordError.
 */
export function iterateBatches(buf: Buffer): BatchWalk {
  const batches: BatchHeader[] = [];
  let pos = 0;
  while (pos + LOG_OVERHEAD <= buf.length) {
    const batchLength = buf.readInt32BE(pos + Offsets.batchLength);
    if (batchLength < BATCH_HEADER_SIZE - LOG_OVERHEAD) {
      throw new CorruptRecordError(`record batch at byte ${pos} has length ${batchLength}, smaller than a header`);
    }
    if (pos + LOG_OVERHEAD + batchLength > buf.length) break;
    const header = readBatchHeader(buf, pos);
    batches.push(header);
    pos = header.end;
  }
  return { batches, truncatedTail: buf.subarray(pos) };
}
