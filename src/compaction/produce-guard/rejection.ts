/**
 * The partition answer Kafka gives when a compacted topic's batch holds records without a key
 * (LogValidator.validateKey and processRecordErrors, checked against Kafka 4.4): INVALID_RECORD,
 * one record error per keyless record, and from Produce v8 a summary naming the first three.
 */
import { ErrorCode } from '../../protocol/errors.js';
import type { ProduceResponseBatchIndexAndErrorMessage, ProduceResponsePartitionProduceResponse } from '../../protocol/messages.js';

/** Kafka shows at most this many record errors in the summary message. */
const SUMMARY_ERRORS = 3;

export function keylessRecordMessage(topic: string, partition: number): string {
  return `Compacted topic cannot accept message without key in topic partition ${topic}-${partition}`;
}

/** Java's List<RecordError>.toString() inside InvalidRecordException's message. */
function summary(errors: ProduceResponseBatchIndexAndErrorMessage[]): string {
  const shown = errors.slice(0, SUMMARY_ERRORS).map((e) => `RecordError(batchIndex=${e.batchIndex}, message='${e.batchIndexErrorMessage}')`);
  return (
    `One or more records have been rejected due to ${errors.length} record errors in total, ` +
    `and only showing the first three errors at most: [${shown.join(', ')}]`
  );
}

export function reservedHeaderMessage(topic: string, partition: number): string {
  return `Records of compacted topic partition ${topic}-${partition} cannot start with the header kcompact.carry without a producer id: kcompact writes such records itself`;
}

export function keylessRejection(
  topic: string,
  partition: number,
  keyless: readonly number[],
  logStartOffset: bigint,
): ProduceResponsePartitionProduceResponse {
  return recordRejection(partition, keyless, keylessRecordMessage(topic, partition), logStartOffset);
}

/** The records of a batch that pose as kcompact's own carry records (docs/carrying.md), refused like keyless ones. */
export function reservedHeaderRejection(
  topic: string,
  partition: number,
  reserved: readonly number[],
  logStartOffset: bigint,
): ProduceResponsePartitionProduceResponse {
  return recordRejection(partition, reserved, reservedHeaderMessage(topic, partition), logStartOffset);
}

function recordRejection(partition: number, indices: readonly number[], message: string, logStartOffset: bigint): ProduceResponsePartitionProduceResponse {
  const recordErrors = indices.map((batchIndex) => ({ batchIndex, batchIndexErrorMessage: message }));
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
