import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ApiDef, APIS } from '../../../src/protocol/generated/messages.js';
import { decodeRequestHeader, decodeResponseHeader, responseHeaderVersion } from '../../../src/protocol/headers.js';
import {
  decodeRequest,
  decodeResponse,
  encodeRequest,
  encodeRequestFrame,
  encodeResponse,
  encodeResponseFrame,
  type Struct,
} from '../../../src/protocol/messages.js';
import { sampleStruct, seededRng } from './sample-body.js';

const SAMPLES_PER_VERSION = 6;

for (const maybeApi of APIS) {
  if (!maybeApi?.validVersions) continue;
  const api: ApiDef = maybeApi;
  const [min, max] = maybeApi.validVersions;
  for (const direction of ['request', 'response'] as const) {
    test(`${api.name} ${direction}: every version round-trips`, () => {
      const encode = direction === 'request' ? encodeRequest : encodeResponse;
      const decode = direction === 'request' ? decodeRequest : decodeResponse;
      for (let version = min; version <= max; version++) {
        const flexible: boolean = api.flexibleVersions !== null && version >= api.flexibleVersions[0];
        for (let sample = 0; sample < SAMPLES_PER_VERSION; sample++) {
          const label: string = `${api.name} v${version} ${direction} (sample ${sample})`;
          const rnd = seededRng(api.apiKey * 100_003 + version * 101 + sample * 2 + (direction === 'request' ? 0 : 1));
          const body = sampleStruct(api[direction], version, flexible, rnd);
          const bytes = encode(api.apiKey, version, body);
          const decoded: Struct = decode(api.apiKey, version, bytes);
          assert.deepStrictEqual(decoded, body, `${label}: decode(encode(body)) differs from body`);
          assert.ok(encode(api.apiKey, version, decoded).equals(bytes), `${label}: re-encoding is not byte-identical`);
        }
      }
    });
  }

  test(`${api.name}: frames carry the right header version for every version`, () => {
    for (let version = min; version <= max; version++) {
      const label: string = `${api.name} v${version}`;
      const flexible: boolean = api.flexibleVersions !== null && version >= api.flexibleVersions[0];
      const request = sampleStruct(api.request, version, flexible, seededRng(version));
      const requestFrame = encodeRequestFrame({ apiKey: api.apiKey, apiVersion: version, correlationId: 1000 + version, clientId: 'frame-test' }, request);
      assert.equal(requestFrame.readInt32BE(0), requestFrame.length - 4, `${label}: request size prefix`);
      const header = decodeRequestHeader(requestFrame.subarray(4));
      assert.equal(header.headerVersion, flexible ? 2 : 1, `${label}: request header version`);
      assert.equal(header.correlationId, 1000 + version, `${label}: correlation id`);
      assert.equal(header.clientId, 'frame-test', `${label}: client id`);
      assert.deepStrictEqual(decodeRequest(api.apiKey, version, requestFrame, 4 + header.bodyOffset!), request, label);

      const response = sampleStruct(api.response, version, flexible, seededRng(version + 1));
      const responseFrame = encodeResponseFrame(api.apiKey, version, 2000 + version, response);
      assert.equal(responseFrame.readInt32BE(0), responseFrame.length - 4, `${label}: response size prefix`);
      const headerVersion = responseHeaderVersion(api.apiKey, version);
      assert.equal(headerVersion, flexible && api.name !== 'ApiVersions' ? 1 : 0, `${label}: response header version`);
      const rh = decodeResponseHeader(responseFrame.subarray(4), headerVersion);
      assert.equal(rh.correlationId, 2000 + version, `${label}: response correlation id`);
      assert.deepStrictEqual(decodeResponse(api.apiKey, version, responseFrame, 4 + rh.bodyOffset), response, label);
    }
  });
}
