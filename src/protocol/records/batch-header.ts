import { crc32c } from './crc32c.js';
import { CorruptRecordError } from './errors.js';

/*
 * Record batch (message format v2) header, byte offsets from the batch start:
 *   0 baseOffset int64        8 batchLength int32     12 partitionLeaderEpoch int32
 *  16 magic int8             17 crc uint32           21 attributes int16
 *  23 lastOffsetDelta int32  27 baseTimestamp int64  35 maxTimestamp int64
 *  43 producerId int64       51 producerEpoch int16  53 baseSequence int32
 *  57 recordCount int32      61 records (compressed together when the codec is not none)
 * batchLength counts the bytes after itself; the CRC-32C covers attributes to the end.
 */
export const BATCH_HEADER_SIZE = 61;
/** baseOffset + batchLength: the bytes batchLength does not count. */
export const LOG_OVERHEAD = 12;
export const CURRENT_MAGIC = 2;

export const Offsets = {
  baseOffset: 0,
  batchLength: 8,
  partitionLeaderEpoch: 12,
  magic: 16,
  crc: 17,
  attributes: 21,
  lastOffsetDelta: 23,
  baseTimestamp: 27,
  maxTimestamp: 35,
  producerId: 43,
  producerEpoch: 51,
  baseSequence: 53,
  recordCount: 57,
} as const;

export const Attributes = {
  compressionMask: 0x07,
  timestampType: 0x08,
  transactional: 0x10,
  control: 0x20,
  deleteHorizon: 0x40,
} as const;

export const TimestampType = { CreateTime: 0, LogAppendTime: 1 } as const;
export type TimestampType = (typeof TimestampType)[keyof typeof TimestampType];

/** The header fields a writer chooses (length, count and CRC are computed). */
export interface BatchFields {
  baseOffset: bigint;
  partitionLeaderEpoch: number;
  attributes: number;
  lastOffsetDelta: number;
  baseTimestamp: bigint;
  maxTimestamp: bigint;
  producerId: bigint;
  producerEpoch: number;
  baseSequence: number;
}

export interface BatchHeader extends BatchFields {
  /** Where the batch starts and ends in the buffer it was read from. */
  start: number;
  end: number;
  /** The whole batch, a view of that buffer (no copy). */
  bytes: Buffer;
  batchLength: number;
  magic: number;
  /** As stored (unsigned). */
  crc: number;
  recordCount: number;
  /** Codec id from attributes bits 0-2; 5-7 are not defined by Kafka and fail to decode. */
  compression: number;
  timestampType: TimestampType;
  isTransactional: boolean;
  isControl: boolean;
  /** Set by the cleaner (KIP-534): baseTimestamp then holds the delete horizon. */
  hasDeleteHorizon: boolean;
}

/**
 * Reads the header of the complete v2 batch at `offset`. The whole batch (12 + batchLength bytes)
 * must be in buf; anything that is not a well-formed v2 header is a CorruptRecordError.
 */
export function readBatchHeader(buf: Buffer, offset: number): BatchHeader {
  if (offset < 0 || offset + BATCH_HEADER_SIZE > buf.length) {
    throw new CorruptRecordError(`record batch at ${offset} is shorter than the ${BATCH_HEADER_SIZE}-byte header`);
  }
  const batchLength = buf.readInt32BE(offset + Offsets.batchLength);
  if (batchLength < BATCH_HEADER_SIZE - LOG_OVERHEAD) {
    throw new CorruptRecordError(`record batch length ${batchLength} is smaller than the header`);
  }
  const end = offset + LOG_OVERHEAD + batchLength;
  if (end > buf.length) {
    throw new CorruptRecordError(`record batch length ${batchLength} runs past the end of the data`);
  }
  const magic = buf.readInt8(offset + Offsets.magic);
  if (magic !== CURRENT_MAGIC) {
    throw new CorruptRecordError(`unsupported record batch magic ${magic} (only v2 batches are supported)`);
  }
  const recordCount = buf.readInt32BE(offset + Offsets.recordCount);
  if (recordCount < 0) throw new CorruptRecordError(`negative record count ${recordCount}`);
  const attributes = buf.readInt16BE(offset + Offsets.attributes);
  return {
    start: offset,
    end,
    bytes: buf.subarray(offset, end),
    baseOffset: buf.readBigInt64BE(offset + Offsets.baseOffset),
    batchLength,
    partitionLeaderEpoch: buf.readInt32BE(offset + Offsets.partitionLeaderEpoch),
    magic,
    crc: buf.readUInt32BE(offset + Offsets.crc),
    attributes,
    lastOffsetDelta: buf.readInt32BE(offset + Offsets.lastOffsetDelta),
    baseTimestamp: buf.readBigInt64BE(offset + Offsets.baseTimestamp),
    maxTimestamp: buf.readBigInt64BE(offset + Offsets.maxTimestamp),
    producerId: buf.readBigInt64BE(offset + Offsets.producerId),
    producerEpoch: buf.readInt16BE(offset + Offsets.producerEpoch),
    baseSequence: buf.readInt32BE(offset + Offsets.baseSequence),
    recordCount,
    compression: attributes & Attributes.compressionMask,
    timestampType: attributes & Attributes.timestampType ? TimestampType.LogAppendTime : TimestampType.CreateTime,
    isTransactional: (attributes & Attributes.transactional) !== 0,
    isControl: (attributes & Attributes.control) !== 0,
    hasDeleteHorizon: (attributes & Attributes.deleteHorizon) !== 0,
  };
}

/** Whether the stored CRC-32C matches the batch bytes (attributes to the end). */
export function verifyCrc(buf: Buffer, header: BatchHeader): boolean {
  return crc32c(buf, header.start + Offsets.attributes, header.end) === header.crc;
}

/**
 * Writes the 61-byte header at `pos` of a batch whose records (count of them) already fill
 * out[pos + 61, end), then its CRC over attributes..end.
 */
export function writeBatchHeader(out: Buffer, pos: number, fields: BatchFields, recordCount: number, end: number): void {
  out.writeBigInt64BE(fields.baseOffset, pos + Offsets.baseOffset);
  out.writeInt32BE(end - pos - LOG_OVERHEAD, pos + Offsets.batchLength);
  out.writeInt32BE(fields.partitionLeaderEpoch, pos + Offsets.partitionLeaderEpoch);
  out.writeInt8(CURRENT_MAGIC, pos + Offsets.magic);
  out.writeInt16BE(fields.attributes, pos + Offsets.attributes);
  out.writeInt32BE(fields.lastOffsetDelta, pos + Offsets.lastOffsetDelta);
  out.writeBigInt64BE(fields.baseTimestamp, pos + Offsets.baseTimestamp);
  out.writeBigInt64BE(fields.maxTimestamp, pos + Offsets.maxTimestamp);
  out.writeBigInt64BE(fields.producerId, pos + Offsets.producerId);
  out.writeInt16BE(fields.producerEpoch, pos + Offsets.producerEpoch);
  out.writeInt32BE(fields.baseSequence, pos + Offsets.baseSequence);
  out.writeInt32BE(recordCount, pos + Offsets.recordCount);
  out.writeUInt32BE(crc32c(out, pos + Offsets.attributes, end), pos + Offsets.crc);
}
