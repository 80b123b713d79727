import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError, apiErrorOf } from '../../../src/tables/api-error.js';
import { TableError } from '../../../src/engine/api/table-reads.js';
import { NoBrokerAnswered, UpstreamError } from '../../../src/upstream/error-class.js';
import { ErrorCode } from '../../../src/protocol/errors.js';
import { WriteOutcomeUnknown } from '../../../src/tables/table-writer.js';

test('every answer body is {error, ..., fix}', () => {
  const e = new ApiError(412, 'precondition failed', 'read again', { partition: 1, offset: 9 });
  assert.deepEqual(e.body, { error: 'precondition failed', partition: 1, offset: 9, fix: 'read again' });
  assert.deepEqual(Object.keys(e.body), ['error', 'partition', 'offset', 'fix']);
});

test("the index's TableError keeps its status, with a fix; its 503 asks to retry", () => {
  for (const status of [400, 404, 409, 503] as const) {
    const e = apiErrorOf(new TableError(status, `index says ${status}`), 'GET key');
    assert.equal(e.status, status);
    assert.equal(e.message, `index says ${status}`);
    assert.ok(e.fix.length > 0);
    assert.equal(e.headers['retry-after'], status === 503 ? '1' : undefined);
  }
  assert.match(apiErrorOf(new TableError(409, 'not compacted'), 'x').fix, /cleanup\.policy=compact/);
});

test("the store's error codes: too large 413, passing 503 with Retry-After, others 502, each naming the code", () => {
  const cases: [number, number][] = [
    [ErrorCode.MESSAGE_TOO_LARGE, 413],
    [ErrorCode.INVALID_RECORD, 400],
    [ErrorCode.NOT_ENOUGH_REPLICAS, 503],
    [ErrorCode.REQUEST_TIMED_OUT, 503],
    [ErrorCode.TOPIC_AUTHORIZATION_FAILED, 502],
    [ErrorCode.UNSUPPORTED_VERSION, 502],
  ];
  for (const [code, status] of cases) {
    const e = apiErrorOf(new UpstreamError('Produce to t-0', code), 'PUT key of t');
    assert.equal(e.status, status, String(code));
    assert.match(e.message, /^PUT key of t: Produce to t-0 failed with /);
    assert.equal(typeof e.body.storeError, 'string');
    if (status === 503) assert.equal(e.headers['retry-after'], '1');
  }
});

test('an unknown outcome and an unreachable store are 503; a fault of kcompact is 500', () => {
  const unknown = apiErrorOf(new WriteOutcomeUnknown('went out, no answer'), 'PUT');
  assert.equal(unknown.status, 503);
  assert.match(unknown.fix, /read the key/);
  assert.equal(apiErrorOf(new Error('upstream 10.0.0.1:9092 closed the connection'), 'GET').status, 503);
  assert.equal(apiErrorOf(Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }), 'GET').status, 503);
  assert.equal(apiErrorOf(new NoBrokerAnswered([{ address: 'a:1', err: new Error('refused') }]), 'GET').status, 503);
  const bug = apiErrorOf(new TypeError('x is undefined'), 'GET key of t');
  assert.equal(bug.status, 500);
  assert.match(bug.message, /GET key of t failed: x is undefined/);
  const given = new ApiError(404, 'nope', 'fix');
  assert.equal(apiErrorOf(given, 'x'), given);
});
