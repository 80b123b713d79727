/** Malformed or unsupported wire data; the message names the API, version and field path. */
export class ProtocolError extends Error {
  override readonly name = 'ProtocolError';
}

/** The Kafka error codes the proxy produces or reacts to (values from Kafka's Errors enum). */
export const ErrorCode = {
  UNKNOWN_SERVER_ERROR: -1,
  NONE: 0,
  OFFSET_OUT_OF_RANGE: 1,
  CORRUPT_MESSAGE: 2,
  UNKNOWN_TOPIC_OR_PARTITION: 3,
  LEADER_NOT_AVAILABLE: 5,
  NOT_LEADER_OR_FOLLOWER: 6,
  REQUEST_TIMED_OUT: 7,
  MESSAGE_TOO_LARGE: 10,
  REPLICA_NOT_AVAILABLE: 9,
  NETWORK_EXCEPTION: 13,
  COORDINATOR_LOAD_IN_PROGRESS: 14,
  COORDINATOR_NOT_AVAILABLE: 15,
  NOT_COORDINATOR: 16,
  INVALID_TOPIC_EXCEPTION: 17,
  NOT_ENOUGH_REPLICAS: 19,
  NOT_ENOUGH_REPLICAS_AFTER_APPEND: 20,
  TOPIC_AUTHORIZATION_FAILED: 29,
  UNSUPPORTED_SASL_MECHANISM: 33,
  ILLEGAL_SASL_STATE: 34,
  UNSUPPORTED_VERSION: 35,
  TOPIC_ALREADY_EXISTS: 36,
  INVALID_PARTITIONS: 37,
  INVALID_REPLICATION_FACTOR: 38,
  INVALID_CONFIG: 40,
  NOT_CONTROLLER: 41,
  INVALID_REQUEST: 42,
  POLICY_VIOLATION: 44,
  KAFKA_STORAGE_ERROR: 56,
  SASL_AUTHENTICATION_FAILED: 58,
  FETCH_SESSION_ID_NOT_FOUND: 70,
  INVALID_FETCH_SESSION_EPOCH: 71,
  LISTENER_NOT_FOUND: 72,
  FENCED_LEADER_EPOCH: 74,
  UNKNOWN_LEADER_EPOCH: 75,
  UNSUPPORTED_COMPRESSION_TYPE: 76,
  OFFSET_NOT_AVAILABLE: 78,
  PREFERRED_LEADER_NOT_AVAILABLE: 80,
  ELIGIBLE_LEADERS_NOT_AVAILABLE: 83,
  INVALID_RECORD: 87,
  UNSTABLE_OFFSET_COMMIT: 88,
  THROTTLING_QUOTA_EXCEEDED: 89,
  UNKNOWN_TOPIC_ID: 100,
  INCONSISTENT_TOPIC_ID: 103,
  FETCH_SESSION_TOPIC_ID_ERROR: 106,
} as const;

export type ErrorCodeName = keyof typeof ErrorCode;

const NAMES = new Map<number, string>(Object.entries(ErrorCode).map(([name, code]) => [code, name]));

/** "UNSUPPORTED_VERSION (35)" for messages; a code kcompact has no name for reads "error 1234". */
export function errorName(code: number): string {
  const name = NAMES.get(code);
  return name === undefined ? `error ${code}` : `${name} (${code})`;
}
