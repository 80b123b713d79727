/**
 * Every refusal of the table API as one shape, `{"error": ..., "fix": ...}` with an HTTP status
 * (docs/tables.md, "Errors"), and the one mapping from what can fail underneath (the index's
 * TableError, the store's error codes, a store out of reach) to it.
 */
import { ErrorCode, errorName } from '../protocol/errors.js';
import { NoBrokerAnswered, UpstreamError } from '../upstream/error-class.js';
import { TableError } from '../engine/api/table-reads.js';
import { WriteOutcomeUnknown } from './table-writer.js';

/** Seconds a client should wait before asking again after a 503 (Retry-After). */
export const RETRY_AFTER_S = 1;

export class ApiError extends Error {
  override readonly name = 'ApiError';

  constructor(
    readonly status: number,
    message: string,
    /** What the caller should do about it. */
    readonly fix: string,
    /** More fields of the answer (a write's partition and offset, the index's position). */
    readonly extra: Readonly<Record<string, unknown>> = {},
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }

  get body(): Record<string, unknown> {
    return { error: this.message, ...this.extra, fix: this.fix };
  }
}

/** 503 with Retry-After: the same request can succeed a moment later. */
export function unavailable(message: string, fix: string, extra: Record<string, unknown> = {}): ApiError {
  return new ApiError(503, message, fix, extra, { 'retry-after': String(RETRY_AFTER_S) });
}

const TABLE_ERROR_FIX: Record<TableError['status'], string> = {
  400: 'check the request against docs/tables.md',
  404: 'check the topic and partition: GET /v1/topics/{topic} says how many partitions the topic has',
  409: 'the table API serves compacted topics only: create or alter the topic with cleanup.policy=compact through kcompact, or read it with a Kafka consumer',
  503: 'retry in a moment',
};

/** Store error codes that say the request itself cannot be taken, whatever the retry. */
const REFUSED_WRITES: Readonly<Record<number, [status: number, fix: string]>> = {
  [ErrorCode.MESSAGE_TOO_LARGE]: [413, "write a smaller value: the store's max.message.bytes (or the topic's) is below this record"],
  [ErrorCode.INVALID_RECORD]: [
    400,
    'the store refused the record as invalid; check its key and value against the topic (a schema-validating store may refuse it)',
  ],
  [ErrorCode.POLICY_VIOLATION]: [403, "the store's policy refused the record; see the store's own error text"],
  [ErrorCode.TOPIC_AUTHORIZATION_FAILED]: [502, "grant the proxy's own upstream principal (upstreamSaslUsername) access to the topic"],
};

/** What an error thrown while answering becomes; `what` says what was being done, for messages. */
export function apiErrorOf(err: unknown, what: string): ApiError {
  if (err instanceof ApiError) return err;
  if (err instanceof TableError) {
    const fix = TABLE_ERROR_FIX[err.status];
    return err.status === 503 ? unavailable(err.message, fix) : new ApiError(err.status, err.message, fix);
  }
  if (err instanceof WriteOutcomeUnknown) {
    return unavailable(err.message, 'read the key: if it holds what you wrote, the write was appended; otherwise write it again');
  }
  if (err instanceof UpstreamError) {
    const refused = REFUSED_WRITES[err.errorCode];
    if (refused) return new ApiError(refused[0], `${what}: ${err.message}`, refused[1], { storeError: errorName(err.errorCode) });
    if (err.retriable)
      return unavailable(`${what}: ${err.message}`, 'retry in a moment: the store answered with an error that passes', {
        storeError: errorName(err.errorCode),
      });
    return new ApiError(502, `${what}: ${err.message}`, "see the store's documentation for this error code; the proxy's log has the request", {
      storeError: errorName(err.errorCode),
    });
  }
  const message = err instanceof Error ? err.message : String(err);
  if (passing(err))
    return unavailable(`${what}: the store did not answer (${message})`, 'retry in a moment; if it lasts, check that the proxy reaches the store');
  return new ApiError(500, `${what} failed: ${message}`, "this is a fault of kcompact's; the proxy's log has the details");
}

/**
 * The upstream client and the engine fail with plain Errors when a connection fails, closes or
 * times out (or the worker restarts); a TypeError or the like is a fault of kcompact's, not
 * something a retry mends.
 */
function passing(err: unknown): boolean {
  if (err instanceof NoBrokerAnswered) return true;
  if (!(err instanceof Error)) return false;
  return Object.getPrototypeOf(err) === Error.prototype || typeof (err as NodeJS.ErrnoException).code === 'string';
}
