import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ProtocolError } from '../../../src/protocol/errors.js';
import { APIS } from '../../../src/protocol/generated/messages.js';
import { ApiKey, decodeRequest, decodeResponse, decodeResponseLeniently, encodeRequest, encodeResponse } from '../../../src/protocol/messages.js';
import { sampleStruct, seededRng } from './sample-body.js';

type Direction = 'request' | 'response';

interface Sample {
  label: string;
  apiKey: number;
  version: number;
  direction: Direction;
  bytes: Buffer;
}

function sample(apiKey: number, version: number, direction: Direction, seed: number): Sample {
  const api = APIS[apiKey]!;
  const flexible = api.flexibleVersions !== null && version >= api.flexibleVersions[0];
  // Re-draw until the body is big enough to be interesting to cut and corrupt.
  for (let s = seed; ; s++) {
    const body = sampleStruct(api[direction], version, flexible, seededRng(s));
    const bytes = direction === 'request' ? encodeRequest(apiKey, version, body) : encodeResponse(apiKey, version, body);
    if (bytes.length >= 40 || s > seed + 50) return { label: `${api.name} v${version} ${direction}`, apiKey, version, direction, bytes };
  }
}

const SAMPLES: Sample[] = [
  sample(ApiKey.Fetch, 16, 'response', 1),
  sample(ApiKey.Fetch, 4, 'response', 2),
  sample(ApiKey.Fetch, 17, 'request', 3),
  sample(ApiKey.Metadata, 12, 'response', 4),
  sample(ApiKey.Metadata, 8, 'response', 5),
  sample(ApiKey.Produce, 9, 'request', 6),
  sample(ApiKey.Produce, 13, 'response', 7),
  sample(ApiKey.ApiVersions, 4, 'response', 8),
  sample(ApiKey.CreateTopics, 7, 'request', 9),
  sample(ApiKey.DescribeConfigs, 4, 'response', 10),
  sample(ApiKey.ConsumerGroupHeartbeat, 1, 'response', 11),
];

/** Array elements in a decoded body, at any depth (a Buffer is one field, not elements). */
function elements(value: unknown): number {
  if (Array.isArray(value)) return value.reduce((n: number, v) => n + 1 + elements(v), 0);
  if (value === null || typeof value !== 'object' || Buffer.isBuffer(value)) return 0;
  return Object.values(value).reduce((n: number, v) => n + elements(v), 0);
}

/**
 * Decodes; anything thrown must be a ProtocolError, and what decodes must re-encode. What
 * decodes has no more array elements than the input has bytes: every element takes at least a
 * byte, so a count is checked against the bytes left before anything is allocated, and the work
 * of a decode is bounded by its input, whatever the bytes claim.
 */
function decodeOrProtocolError(s: Sample, bytes: Buffer, what: string): void {
  let body;
  try {
    body = s.direction === 'request' ? decodeRequest(s.apiKey, s.version, bytes) : decodeResponse(s.apiKey, s.version, bytes);
  } catch (e) {
    if (!(e instanceof ProtocolError)) assert.fail(`${s.label}, ${what}: threw ${String(e)} instead of a ProtocolError`);
    assert.ok(e.message.startsWith(`${s.label}: `), `${s.label}, ${what}: message "${e.message}" does not name the message`);
    return;
  }
  const n = elements(body);
  assert.ok(n <= bytes.length, `${s.label}, ${what}: ${n} array elements out of ${bytes.length} bytes`);
  if (s.direction === 'request') encodeRequest(s.apiKey, s.version, body);
  else encodeResponse(s.apiKey, s.version, body);
}

test('every strict prefix of an encoded message decodes or throws ProtocolError', () => {
  for (const s of SAMPLES) {
    for (let n = 0; n < s.bytes.length; n++) decodeOrProtocolError(s, s.bytes.subarray(0, n), `prefix of ${n} bytes`);
  }
});

test('random byte corruption decodes or throws ProtocolError, its work bounded by its input', () => {
  const rnd = seededRng(20240229);
  for (let i = 0; i < 5000; i++) {
    const s = SAMPLES[i % SAMPLES.length]!;
    const bytes = Buffer.from(s.bytes);
    const flips = 1 + Math.floor(rnd() * 3);
    for (let f = 0; f < flips; f++) bytes[Math.floor(rnd() * bytes.length)] = Math.floor(rnd() * 256);
    decodeOrProtocolError(s, bytes, `corruption #${i}`);
  }
});

test('random garbage for every api and version decodes or throws ProtocolError', () => {
  const rnd = seededRng(7);
  for (const api of APIS) {
    if (!api?.validVersions) continue;
    for (let version = api.validVersions[0]; version <= api.validVersions[1]; version++) {
      for (const direction of ['request', 'response'] as const) {
        const bytes = Buffer.alloc(Math.floor(rnd() * 64));
        for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(rnd() * 256);
        decodeOrProtocolError({ label: `${api.name} v${version} ${direction}`, apiKey: api.apiKey, version, direction, bytes }, bytes, 'garbage');
      }
    }
  }
});

test('a huge element count is rejected before allocating', () => {
  // Metadata v8 response: throttleTimeMs, then a brokers count of 2^31-1 with 10 bytes left.
  const bytes = Buffer.concat([Buffer.from('000000007fffffff', 'hex'), Buffer.alloc(10)]);
  assert.throws(() => decodeResponse(ApiKey.Metadata, 8, bytes), {
    name: 'ProtocolError',
    message: 'Metadata v8 response: brokers: count 2147483647 exceeds remaining 10 bytes',
  });
  // Compact form: uvarint 2^32-1 means 2^32-2 elements.
  const compact = Buffer.concat([Buffer.from('00000000ffffffff0f', 'hex'), Buffer.alloc(10)]);
  assert.throws(() => decodeResponse(ApiKey.Metadata, 12, compact), /brokers: count 4294967294 exceeds remaining 10 bytes/);
  // A string length beyond the input, and a tagged-field count beyond it.
  assert.throws(() => decodeRequest(ApiKey.ApiVersions, 3, Buffer.from('7f', 'hex')), /clientSoftwareName: length 126 exceeds remaining 0 bytes/);
  assert.throws(() => decodeRequest(ApiKey.ApiVersions, 3, Buffer.from('0101ff0100', 'hex')), /\(tagged fields\): count 255 exceeds remaining 1 bytes/);
});

test('malformed calls are ProtocolErrors naming the problem', () => {
  assert.throws(() => decodeResponse(4242, 0, Buffer.alloc(0)), { name: 'ProtocolError', message: 'unknown api key 4242' });
  assert.throws(() => decodeResponse(ApiKey.Fetch, 3, Buffer.alloc(0)), /Fetch v3 response: unsupported version \(supported: 4-18\)/);
  assert.throws(() => decodeRequest(ApiKey.LeaderAndIsr, 0, Buffer.alloc(0)), /LeaderAndIsr v0 request: unsupported version \(supported: none\)/);
  assert.throws(() => encodeRequest(-1, 0, {}), ProtocolError);
  assert.throws(() => decodeRequest(ApiKey.ApiVersions, 2, Buffer.alloc(3)), /ApiVersions v2 request: 3 bytes left after the body/);
  assert.throws(() => decodeRequest(ApiKey.ApiVersions, 2, Buffer.alloc(3), 2, 9), /ApiVersions v2 request: range \[2, 9\) is outside a buffer of 3 bytes/);
  assert.throws(() => decodeRequest(ApiKey.ApiVersions, 2, 'not a buffer' as unknown as Buffer), ProtocolError);
});

/** The key as a plain number, so that the encoders take bodies of the wrong type to reject. */
const untyped = (apiKey: number): number => apiKey;

test('encoding rejects wrong values with the field path', () => {
  const fetchResponse = (partition: object) => ({ responses: [{ partitions: [{}, partition] }] });
  assert.throws(() => encodeResponse(untyped(ApiKey.Fetch), 16, fetchResponse({ highWatermark: 'x' })), {
    name: 'ProtocolError',
    message: 'Fetch v16 response: responses[0].partitions[1].highWatermark: expected a bigint, got string x',
  });
  assert.throws(
    () => encodeResponse(untyped(ApiKey.Fetch), 16, fetchResponse({ errorCode: 40000 })),
    /responses\[0\]\.partitions\[1\]\.errorCode: expected an int16, got 40000/,
  );
  assert.throws(() => encodeResponse(untyped(ApiKey.Fetch), 16, fetchResponse({ records: 'abc' })), /records: expected a Buffer, got string/);
  assert.throws(() => encodeResponse(untyped(ApiKey.Fetch), 16, { responses: [{ topicId: 'short' }] }), /responses\[0\]\.topicId: invalid uuid "short"/);
  assert.throws(() => encodeResponse(untyped(ApiKey.Fetch), 16, { responses: null }), /responses: null in a non-nullable array/);
  assert.throws(() => encodeResponse(untyped(ApiKey.Fetch), 16, { responses: {} }), /responses: expected an array/);
  assert.throws(() => encodeResponse(untyped(ApiKey.Fetch), 16, { responses: [null] }), /responses\[0\]: expected an object, got null/);
  assert.throws(() => encodeResponse(untyped(ApiKey.Metadata), 12, { brokers: [{ host: null }] }), /brokers\[0\]\.host: expected a string, got null/);
  assert.throws(() => encodeResponse(untyped(ApiKey.Metadata), 12, { brokers: [{ host: 'h'.repeat(40000) }] }), /exceeds 32767/);
  assert.throws(() => encodeResponse(untyped(ApiKey.Metadata), 12, { topics: [{ isInternal: 1 }] }), /topics\[0\]\.isInternal: expected a boolean/);
  assert.throws(
    () => encodeResponse(untyped(ApiKey.Fetch), 16, fetchResponse({ currentLeader: { leaderId: 'x' } })),
    /partitions\[1\]\.currentLeader\.leaderId: expected an int32, got string/,
  );
  assert.throws(
    () => encodeResponse(untyped(ApiKey.Fetch), 16, { _unknownTags: [{ tag: 0, data: Buffer.alloc(1) }] }),
    /_unknownTags\[0\]: tag 0 belongs to field nodeEndpoints/,
  );
  assert.throws(() => encodeResponse(untyped(ApiKey.Fetch), 16, { _unknownTags: [{ tag: 5, data: 'x' }] }), /_unknownTags\[0\]: data is not a Buffer/);
  assert.throws(
    () => encodeResponse(untyped(ApiKey.Metadata), 8, { _unknownTags: [{ tag: 5, data: Buffer.alloc(0) }] }),
    /_unknownTags: tagged fields need a flexible version/,
  );
  assert.throws(() => encodeResponse(untyped(ApiKey.Metadata), 12, 'body' as unknown as object), /Metadata v12 response: expected an object, got string/);
});

test('a null in a bytes or records field that allows none: refused, and read as empty as clients read answers', () => {
  const MARK = Buffer.from([0xab, 0xcd]);
  /** The encoded body with the field holding MARK rewritten as a null. */
  const withNull = (body: Buffer, written: Buffer, nullLength: Buffer) => {
    const at = body.indexOf(Buffer.concat([written, MARK]));
    assert.ok(at >= 0 && body.indexOf(Buffer.concat([written, MARK]), at + 1) < 0, 'the field is found once');
    return Buffer.concat([body.subarray(0, at), nullLength, body.subarray(at + written.length + MARK.length)]);
  };
  // kfake's ShareFetch answer for a partition it only acknowledged (flexible: compact length 0 is null).
  const partition = { partitionIndex: 0, records: MARK, acquiredRecords: [{ firstOffset: 3n, lastOffset: 4n, deliveryCount: 1 }] };
  const shareFetch = encodeResponse(ApiKey.ShareFetch, 2, { responses: [{ topicId: 'AAAAAAAAAAAAAAAAAAAAAA', partitions: [partition] }] });
  const nulled = withNull(shareFetch, Buffer.from([3]), Buffer.from([0]));
  assert.throws(
    () => decodeResponse(ApiKey.ShareFetch, 2, nulled),
    /ShareFetch v2 response: responses\[0\]\.partitions\[0\]\.records: null in a non-nullable field/,
  );
  const read = decodeResponseLeniently(ApiKey.ShareFetch, 2, nulled).responses[0]!.partitions[0]!;
  assert.deepEqual(read.records, Buffer.alloc(0));
  assert.deepEqual(read.acquiredRecords, partition.acquiredRecords, 'the fields after it read on');
  // A non-flexible version: int32 length -1.
  const sasl = encodeResponse(ApiKey.SaslAuthenticate, 0, { errorCode: 0, errorMessage: null, authBytes: MARK });
  const saslNulled = withNull(sasl, Buffer.from([0, 0, 0, 2]), Buffer.from([0xff, 0xff, 0xff, 0xff]));
  assert.throws(() => decodeResponse(ApiKey.SaslAuthenticate, 0, saslNulled), /authBytes: null in a non-nullable field/);
  assert.deepEqual(decodeResponseLeniently(ApiKey.SaslAuthenticate, 0, saslNulled).authBytes, Buffer.alloc(0));
  // Requests stay strict: a broker refuses them.
  const request = encodeRequest(ApiKey.SaslAuthenticate, 0, { authBytes: MARK });
  assert.throws(
    () => decodeRequest(ApiKey.SaslAuthenticate, 0, withNull(request, Buffer.from([0, 0, 0, 2]), Buffer.from([0xff, 0xff, 0xff, 0xff]))),
    /null in a non-nullable field/,
  );
});
