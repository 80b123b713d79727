/*
 * Record batches (Kafka message format v2): the public entry point of this folder for reading,
 * filtering and writing the `records` of Produce and Fetch. Each part lives in its own module.
 */
export { Attributes, BATCH_HEADER_SIZE, TimestampType, readBatchHeader, verifyCrc, type BatchFields, type BatchHeader } from './batch-header.js';
export { iterateBatches, type BatchWalk } from './batch-walk.js';
export {
  batchPayload,
  decodeRecordKeys,
  decodeRecords,
  firstRecordPayload,
  parseRecords,
  RecordScan,
  RecordWalk,
  scanRecordAt,
  scanRecordKeys,
  type DecodedRecord,
  type RecordHeader,
  type RecordKey,
  type RecordSpan,
} from './record-decode.js';
export { encodeBatch, rebuildBatch, type RawRecords, type RecordInput } from './batch-encode.js';
export { ControlRecordType, decodeControlRecord, type ControlRecord } from './control-record.js';
export { CorruptRecordError } from './errors.js';
