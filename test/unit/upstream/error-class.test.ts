import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrorCode, ProtocolError } from '../../../src/protocol/errors.js';
import { isRetriable, isRetriableCode, isStaleMetadataCode, NoBrokerAnswered, UpstreamError } from '../../../src/upstream/error-class.js';
import { SaslAuthenticationError } from '../../../src/upstream/sasl-client.js';

test("retriable error codes follow Kafka's RetriableException family", () => {
  for (const code of [
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.REQUEST_TIMED_OUT,
    ErrorCode.NETWORK_EXCEPTION,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.NOT_CONTROLLER,
    ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.UNKNOWN_LEADER_EPOCH,
    ErrorCode.UNKNOWN_TOPIC_ID,
    ErrorCode.THROTTLING_QUOTA_EXCEEDED,
  ]) {
    assert.equal(isRetriableCode(code), true, `code ${code}`);
  }
  for (const code of [
    ErrorCode.NONE,
    ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.OFFSET_OUT_OF_RANGE,
    ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ErrorCode.POLICY_VIOLATION,
    ErrorCode.INVALID_CONFIG,
    ErrorCode.TOPIC_ALREADY_EXISTS,
    ErrorCode.UNSUPPORTED_VERSION,
    ErrorCode.SASL_AUTHENTICATION_FAILED,
    ErrorCode.INVALID_RECORD,
  ]) {
    assert.equal(isRetriableCode(code), false, `code ${code}`);
  }
});

test('stale metadata: leader, topic id and controller errors; every one of them is retriable', () => {
  for (const code of [
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.UNKNOWN_TOPIC_ID,
    ErrorCode.NOT_CONTROLLER,
  ]) {
    assert.equal(isStaleMetadataCode(code), true, `code ${code}`);
    assert.equal(isRetriableCode(code), true, `code ${code}`);
  }
  for (const code of [ErrorCode.NONE, ErrorCode.REQUEST_TIMED_OUT, ErrorCode.OFFSET_OUT_OF_RANGE, ErrorCode.TOPIC_AUTHORIZATION_FAILED]) {
    assert.equal(isStaleMetadataCode(code), false, `code ${code}`);
  }
});

test('an UpstreamError names what failed and the code by name, and is classified by its code', () => {
  const err = new UpstreamError('Fetch of orders-3 from upstream broker 2', ErrorCode.NOT_LEADER_OR_FOLLOWER);
  assert.equal(err.message, 'Fetch of orders-3 from upstream broker 2 failed with NOT_LEADER_OR_FOLLOWER (6)');
  assert.equal(err.retriable, true);
  assert.equal(err.staleMetadata, true);
  const refused = new UpstreamError('creating t', ErrorCode.POLICY_VIOLATION, 'no such policy');
  assert.match(refused.message, /POLICY_VIOLATION \(44\): no such policy$/);
  assert.equal(isRetriable(refused), false);
});

test('errors: connections that fail are retriable; codec errors and refused credentials are not', () => {
  assert.equal(isRetriable(new Error('upstream 127.0.0.1:9092 closed the connection')), true);
  assert.equal(isRetriable(new ProtocolError('Fetch v12 response: 3 bytes left after the body')), false);
  assert.equal(isRetriable(new SaslAuthenticationError('refused')), false);
  assert.equal(isRetriable('a string'), false);
});

test('no broker answered: retriable when any address failed in a way that may pass', () => {
  const refused = { address: 'a:1', err: new SaslAuthenticationError('refused') };
  const down = { address: 'b:2', err: new Error('connect ECONNREFUSED') };
  assert.equal(isRetriable(new NoBrokerAnswered([refused])), false);
  const both = new NoBrokerAnswered([refused, down]);
  assert.equal(isRetriable(both), true);
  assert.match(both.message, /^no upstream broker answered \(a:1: refused; b:2: connect ECONNREFUSED\); check/);
  assert.equal(both.cause, down.err);
});
