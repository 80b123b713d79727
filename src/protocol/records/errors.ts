/**
 * Record data that cannot be trusted: malformed batches or records, a failed CRC, data that does
 * not decompress (or decompresses past the allowed size), an unknown codec or magic. The proxy
 * answers it with Kafka's CORRUPT_MESSAGE (error code 2), which is what a broker says about the
 * same bytes.
 */
export class CorruptRecordError extends Error {
  override readonly name = 'CorruptRecordError';
  /** Kafka's CORRUPT_MESSAGE error code. */
  readonly errorCode = 2;

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
