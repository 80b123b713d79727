import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiKey, apiSchema, decodeResponse, decodeResponseLeniently, encodeResponseFrame } from '../../../src/protocol/messages.js';
import { ErrorCode } from '../../../src/protocol/errors.js';
import { decodeApiVersionsResponse, readApiVersionsEntry } from '../../../src/protocol/api-versions-response.js';

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

test('readApiVersionsEntry: the ApiVersions entry of an answer that does not decode, in the layout of the version asked or of v0', () => {
  const lists = [
    { apiKey: ApiKey.Metadata, minVersion: 0, maxVersion: 12 },
    { apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion: 2 },
  ];
  const trailing = (version: number) =>
    Buffer.concat([encodeResponseFrame(ApiKey.ApiVersions, version, 1, { errorCode: ErrorCode.UNSUPPORTED_VERSION, apiKeys: lists }), Buffer.alloc(5)]);
  for (const [asked, laidOut] of [
    [NEWEST, NEWEST],
    [NEWEST, 0],
    [1, 1],
    [0, 0],
  ] as const) {
    assert.deepEqual(readApiVersionsEntry(trailing(laidOut), BODY, asked), lists[1], `asked v${asked}, laid out as v${laidOut}`);
  }
  assert.equal(readApiVersionsEntry(encodeResponseFrame(ApiKey.ApiVersions, NEWEST, 1, { errorCode: 0, apiKeys: [lists[0]!] }), BODY, NEWEST), undefined);
  assert.equal(readApiVersionsEntry(Buffer.from([0, 0, 0, 5, 0, 0, 0, 1, 0]), BODY, NEWEST), undefined, 'not even an error code');
});

test('decodeResponseLeniently ignores bytes after the body, which decodeResponse refuses', () => {
  const frame = Buffer.concat([encodeResponseFrame(ApiKey.ApiVersions, 2, 1, { errorCode: 0, apiKeys: KEYS }), Buffer.from([0])]);
  assert.throws(() => decodeResponse(ApiKey.ApiVersions, 2, frame, BODY), /ApiVersions v2 response: 1 bytes left after the body/);
  assert.deepEqual(decodeResponseLeniently(ApiKey.ApiVersions, 2, frame, BODY).apiKeys, KEYS);
});
