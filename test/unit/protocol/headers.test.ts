import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProtocolError } from '../../../src/protocol/errors.js';
import {
  decodeRequestHeader,
  decodeResponseHeader,
  encodeRequestHeader,
  encodeResponseHeader,
  requestHeaderVersion,
  responseHeaderVersion,
} from '../../../src/protocol/headers.js';
import { ApiKey } from '../../../src/protocol/messages.js';

const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

test('header versions follow the flexible versions of each API', () => {
  assert.equal(requestHeaderVersion(ApiKey.Fetch, 11), 1);
  assert.equal(requestHeaderVersion(ApiKey.Fetch, 12), 2);
  assert.equal(responseHeaderVersion(ApiKey.Fetch, 11), 0);
  assert.equal(responseHeaderVersion(ApiKey.Fetch, 12), 1);
  assert.equal(requestHeaderVersion(ApiKey.Metadata, 8), 1);
  assert.equal(requestHeaderVersion(ApiKey.Metadata, 9), 2);
  // SaslHandshake has no flexible version at all.
  assert.equal(requestHeaderVersion(ApiKey.SaslHandshake, 1), 1);
  assert.equal(responseHeaderVersion(ApiKey.SaslHandshake, 1), 0);
});

test('ApiVersions responses always use header v0, even for flexible or unknown versions', () => {
  assert.equal(requestHeaderVersion(ApiKey.ApiVersions, 2), 1);
  assert.equal(requestHeaderVersion(ApiKey.ApiVersions, 3), 2);
  for (const v of [0, 3, 4, 99]) assert.equal(responseHeaderVersion(ApiKey.ApiVersions, v), 0, `ApiVersions v${v}`);
});

test('header versions of unknown api keys or versions throw ProtocolError', () => {
  assert.throws(() => requestHeaderVersion(ApiKey.Fetch, 3), ProtocolError);
  assert.throws(() => requestHeaderVersion(ApiKey.Fetch, 19), ProtocolError);
  assert.throws(() => responseHeaderVersion(999, 0), ProtocolError);
  assert.throws(() => requestHeaderVersion(ApiKey.LeaderAndIsr, 0), /LeaderAndIsr v0/);
});

test('request header v1: api key, version, correlation id, int16 client id', () => {
  // Metadata v8, correlation id 7, client id "abc", then one body byte.
  const frame = hex('0003 0008 00000007 0003 616263 ff');
  const h = decodeRequestHeader(frame);
  assert.deepStrictEqual(h, {
    apiKey: 3,
    apiVersion: 8,
    correlationId: 7,
    headerVersion: 1,
    clientId: 'abc',
    unknownTags: [],
    bodyOffset: 13,
  });
  assert.deepStrictEqual(encodeRequestHeader({ apiKey: 3, apiVersion: 8, correlationId: 7, clientId: 'abc' }), frame.subarray(0, 13));
});

test('request header v1 with a null client id', () => {
  const frame = hex('0003 0008 00000009 ffff');
  const h = decodeRequestHeader(frame);
  assert.equal(h.clientId, null);
  assert.equal(h.bodyOffset, 10);
  assert.deepStrictEqual(encodeRequestHeader({ apiKey: 3, apiVersion: 8, correlationId: 9, clientId: null }), frame);
});

test('request header v2 keeps the int16 client id and adds tagged fields, unknown tags kept', () => {
  // Metadata v12, correlation id 0x01020304, client id "k", two tags: 3 -> [aa bb], 7 -> [].
  const frame = hex('0003 000c 01020304 0001 6b 02 03 02 aabb 07 00 99');
  const h = decodeRequestHeader(frame);
  assert.equal(h.headerVersion, 2);
  assert.equal(h.clientId, 'k');
  assert.deepStrictEqual(h.unknownTags, [
    { tag: 3, data: hex('aabb') },
    { tag: 7, data: Buffer.alloc(0) },
  ]);
  assert.equal(h.bodyOffset, frame.length - 1);
  assert.deepStrictEqual(
    encodeRequestHeader({ apiKey: 3, apiVersion: 12, correlationId: 0x01020304, clientId: 'k', unknownTags: h.unknownTags }),
    frame.subarray(0, frame.length - 1),
  );
});

test('an unknown api key or version still yields api key, version and correlation id', () => {
  for (const [key, version] of [
    [ApiKey.ApiVersions, 77],
    [4242, 0],
    [ApiKey.Fetch, 2],
  ] as const) {
    const frame = Buffer.alloc(20, 0xee);
    frame.writeInt16BE(key, 0);
    frame.writeInt16BE(version, 2);
    frame.writeInt32BE(31337, 4);
    assert.deepStrictEqual(decodeRequestHeader(frame), {
      apiKey: key,
      apiVersion: version,
      correlationId: 31337,
      headerVersion: null,
      clientId: null,
      unknownTags: [],
      bodyOffset: null,
    });
  }
});

test('truncated or malformed request headers throw ProtocolError', () => {
  assert.throws(() => decodeRequestHeader(hex('0003 0008 0000')), ProtocolError);
  assert.throws(() => decodeRequestHeader(hex('0003 0008 00000007 0005 6162')), /Metadata v8 request header: clientId: length 5 exceeds remaining 2 bytes/);
  assert.throws(() => decodeRequestHeader(hex('0003 000c 00000007 0000 05 01')), ProtocolError);
  assert.throws(() => encodeRequestHeader({ apiKey: 3, apiVersion: 99, correlationId: 1 }), ProtocolError);
  assert.throws(() => encodeRequestHeader({ apiKey: 3, apiVersion: 8, correlationId: 1, unknownTags: [{ tag: 1, data: Buffer.alloc(1) }] }), ProtocolError);
});

test('response header v0 is the correlation id only', () => {
  const frame = hex('0000002a 0102');
  assert.deepStrictEqual(decodeResponseHeader(frame, 0), { correlationId: 42, unknownTags: [], bodyOffset: 4 });
  assert.deepStrictEqual(encodeResponseHeader(42, 0), frame.subarray(0, 4));
});

test('response header v1 adds tagged fields, unknown tags kept', () => {
  const frame = hex('ffffffff 01 05 03 010203 0102');
  const h = decodeResponseHeader(frame, 1);
  assert.deepStrictEqual(h, { correlationId: -1, unknownTags: [{ tag: 5, data: hex('010203') }], bodyOffset: 10 });
  assert.deepStrictEqual(encodeResponseHeader(-1, 1, h.unknownTags), frame.subarray(0, 10));
  assert.deepStrictEqual(encodeResponseHeader(-1, 1), hex('ffffffff 00'));
});

test('malformed response headers throw ProtocolError', () => {
  assert.throws(() => decodeResponseHeader(hex('000000'), 0), ProtocolError);
  assert.throws(() => decodeResponseHeader(hex('00000001 02 01'), 1), ProtocolError);
  assert.throws(() => decodeResponseHeader(hex('00000001'), 2), ProtocolError);
  assert.throws(() => encodeResponseHeader(1, 0, [{ tag: 0, data: Buffer.alloc(0) }]), ProtocolError);
});
