import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiKey, apiSchema, encodeResponseFrame } from '../../../src/protocol/messages.js';
import { ErrorCode } from '../../../src/protocol/errors.js';
import { decodeApiVersionsResponse } from '../../../src/protocol/api-versions-response.js';

const NEWEST = apiSchema(ApiKey.ApiVersions)!.maxVersion;
const KEYS = [{ apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion: NEWEST }];
/** ApiVersions responses use header v0: the body follows the size prefix and the correlation id. */
const BODY = 8;

test('an ApiVersions answer is read at the version asked, whatever its error code', () => {
  for (const errorCode of [ErrorCode.NONE, ErrorCode.UNSUPPORTED_VERSION]) {
    const frame = encodeResponseFrame(ApiKey.ApiVersions, NEWEST, 1, { errorCode, apiKeys: KEYS, throttleTimeMs: 5 });
    const { body, version } = decodeApiVersionsResponse(frame, BODY, NEWEST);
    assert.equal(version, NEWEST);
    assert.equal(body.errorCode, errorCode);
    assert.deepEqual(body.apiKeys, KEYS);
  }
});

test('a v0 body that does not parse at the version asked is read as v0, whatever its error code', () => {
  for (const errorCode of [ErrorCode.NONE, ErrorCode.UNSUPPORTED_VERSION]) {
    const frame = encodeResponseFrame(ApiKey.ApiVersions, 0, 1, { errorCode, apiKeys: KEYS });
    const { body, version } = decodeApiVersionsResponse(frame, BODY, NEWEST);
    assert.equal(version, 0);
    assert.equal(body.errorCode, errorCode);
    assert.deepEqual(body.apiKeys, KEYS);
  }
});

test('a body that parses at neither version fails with the error of the version asked', () => {
  const frame = Buffer.concat([encodeResponseFrame(ApiKey.ApiVersions, 0, 1, { errorCode: ErrorCode.NONE, apiKeys: KEYS }), Buffer.from([1, 2, 3])]);
  assert.throws(() => decodeApiVersionsResponse(frame, BODY, NEWEST), new RegExp(`ApiVersions v${NEWEST}`));
  assert.throws(() => decodeApiVersionsResponse(frame, BODY, 0), /ApiVersions v0/);
});
