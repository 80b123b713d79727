/**
 * The partition answer Kafka gives when a compacted topic's batch holds records without a key
 * (LogValidator.validateKey and processRecordErrors, checked against Kafka 4.4): INVALID_RECORD,
 * one record error per keyless record, and from Produce v8 a summary naming the first three.
 */
import { ErrorCode } from '../../protocol/errors.js';

export interface RecordError {
  batchIndex: number;
  batchIndexErrorMessage: string | null;
}

export interface PartitionProduceResponse {
  index: number;
  errorCode: number;
  baseOffset: bigint;
  logAppendTimeMs: bigint;
  logStartOffset: bigint;
  recordErrors: RecordError[];
  errorMessage: string | null;
  [field: string]: unknown;
}

/** Kafka shows at most this many record errors in the summary message. */
const SUMMARY_ERRORS = 3;

export function keylessRecordMessage(topic: string, partition: number): string {
  return `Compacted topic cannot accept message without key in topic partition ${topic}-${partition}`;
}

/** Java's List<RecordError>.toString() inside InvalidRecordException's message. */
function summary(errors: RecordError[]): string {
  const shown = errors.slice(0, SUMMARY_ERRORS).map((e) => `RecordError(batchIndex=${e.batchIndex}, message='${e.batchIndexErrorMessage}')`);
  return (
    `One or more records have been rejected due to ${errors.length} record errors in total, ` +
    `and only showing the first three errors at most: [${shown.join(', ')}]`
  );
}

export function keylessRejection(topic: string, partition: number, keyless: readonly number[], logStartOffset: bigint): PartitionProduceResponse {
  const message = keylessRecordMessage(topic, partition);
  const recordErrors = keyless.map((batchIndex) => ({ batchIndex, batchIndexErrorMessage: message }));
  return {
    index: partition,
    errorCode: ErrorCode.INVALID_RECORD,
    baseOffset: -1n,
    logAppendTimeMs: -1n,
    logStartOffset,
    recordErrors,
    errorMessage: summary(recordErrors),
  };
}
