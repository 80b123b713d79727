import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  isIncremental,
  isSessionless,
  sessionFields,
  sessionlessFrame,
  sessionNotFound,
  type FetchFrame,
} from '../../../../src/compaction/fetch-view/fetch-session.js';
import { ApiKey, decodeRequest, decodeResponse, encodeResponseFrame } from '../../../../src/protocol/messages.js';
import { decodeRequestHeader, decodeResponseHeader, responseHeaderVersion } from '../../../../src/protocol/headers.js';
import { fetchFrame } from './fake-log.js';

function request(version: number, sessionId: number, sessionEpoch: number): FetchFrame {
  const frame = fetchFrame({
    version,
    sessionId,
    sessionEpoch,
    topics: [{ topic: 't', topicId: 'AAAAAAAAAAAAAAAAAAAAAQ', partitions: [{ partition: 0, fetchOffset: 3 }] }],
  });
  return { apiVersion: version, header: decodeRequestHeader(frame.subarray(4)), frame };
}

for (let version = 4; version <= 18; version++) {
  test(`Fetch v${version}: session fields are read and rewritten in place`, () => {
    const req = request(version, 1234, 7);
    if (version < 7) {
      assert.equal(sessionFields(req), null);
      assert.equal(isSessionless(null), true);
      return;
    }
    assert.deepEqual(sessionFields(req), { sessionId: 1234, sessionEpoch: 7 });
    assert.equal(isIncremental(sessionFields(req)), true);
    const patched = sessionlessFrame(req);
    const body = decodeRequest(ApiKey.Fetch, version, patched, 4 + req.header.bodyOffset!);
    const original = decodeRequest(ApiKey.Fetch, version, req.frame, 4 + req.header.bodyOffset!);
    assert.deepEqual(body, { ...original, sessionId: 0, sessionEpoch: -1 });
    assert.equal(patched.length, req.frame.length);
    assert.equal(req.frame.readInt32BE(0), patched.readInt32BE(0));
  });
}

test('a full request is not incremental; a sessionless one needs no rewrite', () => {
  assert.equal(isIncremental(sessionFields(request(12, 0, 0))), false);
  assert.equal(isSessionless(sessionFields(request(12, 0, 0))), false);
  assert.equal(isSessionless(sessionFields(request(12, 0, -1))), true);
  assert.equal(isIncremental(sessionFields(request(12, 55, -1))), false, 'closing a session with a full request');
});

test('an incremental request is answered FETCH_SESSION_ID_NOT_FOUND', () => {
  const frame = encodeResponseFrame(ApiKey.Fetch, 15, 9, sessionNotFound());
  const header = decodeResponseHeader(frame.subarray(4), responseHeaderVersion(ApiKey.Fetch, 15));
  const body = decodeResponse(ApiKey.Fetch, 15, frame, 4 + header.bodyOffset);
  assert.equal(body.errorCode, 70);
  assert.equal(body.sessionId, 0);
  assert.deepEqual(body.responses, []);
});
