/**
 * How the proxy's own requests judge what went wrong, decided here once: whether asking again
 * can succeed (Kafka's RetriableException family in Errors.java), and whether what the proxy
 * believes about the cluster (partition leaders, topic ids, the controller) is out of date and
 * must be asked for again before the retry (Kafka's InvalidMetadataException family, plus
 * NOT_CONTROLLER for the requests only the controller takes).
 */
import { ErrorCode, ProtocolError, errorName } from '../protocol/errors.js';
import { SaslAuthenticationError } from './sasl-client.js';

/** Error codes after which the same request may succeed when asked again. */
const RETRIABLE = new Set<number>([
  ErrorCode.CORRUPT_MESSAGE,
  ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
  ErrorCode.LEADER_NOT_AVAILABLE,
  ErrorCode.NOT_LEADER_OR_FOLLOWER,
  ErrorCode.REQUEST_TIMED_OUT,
  ErrorCode.REPLICA_NOT_AVAILABLE,
  ErrorCode.NETWORK_EXCEPTION,
  ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
  ErrorCode.COORDINATOR_NOT_AVAILABLE,
  ErrorCode.NOT_COORDINATOR,
  ErrorCode.NOT_ENOUGH_REPLICAS,
  ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
  ErrorCode.NOT_CONTROLLER,
  ErrorCode.KAFKA_STORAGE_ERROR,
  ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
  ErrorCode.INVALID_FETCH_SESSION_EPOCH,
  ErrorCode.LISTENER_NOT_FOUND,
  ErrorCode.FENCED_LEADER_EPOCH,
  ErrorCode.UNKNOWN_LEADER_EPOCH,
  ErrorCode.OFFSET_NOT_AVAILABLE,
  ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
  ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE,
  ErrorCode.UNSTABLE_OFFSET_COMMIT,
  ErrorCode.THROTTLING_QUOTA_EXCEEDED,
  ErrorCode.UNKNOWN_TOPIC_ID,
  ErrorCode.INCONSISTENT_TOPIC_ID,
  ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR,
]);

/** Error codes that say the leader, the topic id or the controller the request went by is stale. */
const STALE_METADATA = new Set<number>([
  ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
  ErrorCode.LEADER_NOT_AVAILABLE,
  ErrorCode.NOT_LEADER_OR_FOLLOWER,
  ErrorCode.REPLICA_NOT_AVAILABLE,
  ErrorCode.KAFKA_STORAGE_ERROR,
  ErrorCode.FENCED_LEADER_EPOCH,
  ErrorCode.UNKNOWN_LEADER_EPOCH,
  ErrorCode.UNKNOWN_TOPIC_ID,
  ErrorCode.INCONSISTENT_TOPIC_ID,
  ErrorCode.NOT_CONTROLLER,
]);

/** Whether the upstream may answer the same request differently if asked again (NONE is not an error). */
export function isRetriableCode(code: number): boolean {
  return RETRIABLE.has(code);
}

/** Whether the proxy must ask Metadata again before retrying after this error code. */
export function isStaleMetadataCode(code: number): boolean {
  return STALE_METADATA.has(code);
}

/** An error code the upstream answered one of the proxy's own requests with. */
export class UpstreamError extends Error {
  override readonly name = 'UpstreamError';

  constructor(
    /** What was asked and of what, e.g. "Fetch of orders-3 from upstream broker 2". */
    readonly what: string,
    readonly errorCode: number,
    detail?: string | null,
  ) {
    super(`${what} failed with ${errorName(errorCode)}${detail ? `: ${detail}` : ''}`);
  }

  get retriable(): boolean {
    return isRetriableCode(this.errorCode);
  }

  get staleMetadata(): boolean {
    return isStaleMetadataCode(this.errorCode);
  }
}

/** No upstream address answered; `failures` holds what each one did instead, in the order tried. */
export class NoBrokerAnswered extends Error {
  override readonly name = 'NoBrokerAnswered';

  constructor(
    readonly failures: readonly { address: string; err: unknown }[],
    what = 'no upstream broker answered',
  ) {
    super(`${what} (${describeFailures(failures)}); check the upstream setting and that the brokers are up`, { cause: failures.at(-1)?.err });
  }
}

/** "host:port: what happened; host:port: ...". */
export function describeFailures(failures: readonly { address: string; err: unknown }[]): string {
  return failures.map(({ address, err }) => `${address}: ${err instanceof Error ? err.message : String(err)}`).join('; ');
}

/**
 * Whether an error from one of the proxy's own requests may go away by itself: an error code
 * by the table above; a connection that failed, closed or timed out, yes; a request or answer
 * kcompact cannot encode or decode (ProtocolError) or refused credentials, no: those fail the
 * same way until the configuration or the upstream changes.
 */
export function isRetriable(err: unknown): boolean {
  if (err instanceof UpstreamError) return err.retriable;
  if (err instanceof NoBrokerAnswered) return err.failures.some((f) => isRetriable(f.err));
  if (err instanceof ProtocolError || err instanceof SaslAuthenticationError) return false;
  return err instanceof Error;
}
