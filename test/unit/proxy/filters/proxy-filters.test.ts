import assert from 'node:assert/strict';
import { wholeFrame } from '../../../../src/protocol/wire/byte-parts.js';
import { test } from 'node:test';
import { ErrorCode } from '../../../../src/protocol/errors.js';
import { ApiKey, apiSchema, decodeResponse, encodeResponseFrame } from '../../../../src/protocol/messages.js';
import { clampApiVersions } from '../../../../src/proxy/api-versions.js';
import { FilterChain } from '../../../../src/proxy/filter/filter-chain.js';
import { apiVersionsFilter } from '../../../../src/proxy/filters/api-versions-filter.js';
import { fetchVersionFilter } from '../../../../src/proxy/filters/fetch-version-filter.js';
import { saslHandshakeFilter } from '../../../../src/proxy/filters/sasl-handshake-filter.js';
import { brokerAddressFilter } from '../../../../src/proxy/filters/broker-address-filter.js';
import { BrokerMap } from '../../../../src/proxy/broker-map.js';
import { FilterHarness } from '../../../support/filter-harness.js';

const MAX_API_VERSIONS = apiSchema(ApiKey.ApiVersions)!.maxVersion;

test('ApiVersions clamp: decoded APIs to our versions, opaque ones untouched, empty ranges dropped', () => {
  const fetchMax = apiSchema(ApiKey.Fetch)!.maxVersion;
  const decoded = new Set([ApiKey.Fetch, ApiKey.Produce, ApiKey.Metadata]);
  const body = {
    apiKeys: [
      { apiKey: ApiKey.Fetch, minVersion: 0, maxVersion: fetchMax + 5 },
      { apiKey: ApiKey.Produce, minVersion: 0, maxVersion: 2 },
      { apiKey: ApiKey.JoinGroup, minVersion: 0, maxVersion: 99 },
      { apiKey: 9999, minVersion: 0, maxVersion: 3 },
    ],
  };
  assert.equal(clampApiVersions(body, decoded), true);
  assert.deepEqual(body.apiKeys, [
    { apiKey: ApiKey.Fetch, minVersion: apiSchema(ApiKey.Fetch)!.minVersion, maxVersion: fetchMax },
    { apiKey: ApiKey.JoinGroup, minVersion: 0, maxVersion: 99 },
    { apiKey: 9999, minVersion: 0, maxVersion: 3 },
  ]);
  const same = { apiKeys: [{ apiKey: ApiKey.Metadata, minVersion: 0, maxVersion: 12 }] };
  assert.equal(clampApiVersions(same, decoded), false);
});

test('the ApiVersions filter clamps to what its chain decodes, and passes an answer it need not change as it came', async () => {
  const chain = new FilterChain([apiVersionsFilter, brokerAddressFilter(new BrokerMap({ advertisedHost: 'p', brokerPortBase: 30000 }))]);
  assert.ok(chain.decodedApis.has(ApiKey.Metadata) && chain.decodedApis.has(ApiKey.ApiVersions));
  assert.ok(!chain.decodedApis.has(ApiKey.JoinGroup) && !chain.decodedApis.has(ApiKey.CreateTopics));
  const harness = new FilterHarness(apiVersionsFilter);
  // Alone in its chain, the filter decodes only ApiVersions: Metadata's range passes as offered.
  const run = await harness.response(ApiKey.ApiVersions, 3, {
    errorCode: 0,
    apiKeys: [
      { apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion: MAX_API_VERSIONS + 1 },
      { apiKey: ApiKey.Metadata, minVersion: 0, maxVersion: 99 },
    ],
  });
  assert.equal(run.kind, 'forward');
  if (run.kind !== 'forward') return;
  assert.equal(run.changed, true);
  assert.deepEqual(
    run.body.apiKeys.map((k) => [k.apiKey, k.minVersion, k.maxVersion]),
    [
      [ApiKey.ApiVersions, 0, MAX_API_VERSIONS],
      [ApiKey.Metadata, 0, 99],
    ],
  );
  const same = await harness.response(ApiKey.ApiVersions, 3, { errorCode: 0, apiKeys: [{ apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion: 3 }] });
  assert.ok(same.kind === 'forward' && !same.changed, 'nothing to clamp: the bytes that came');
});

test('a too-new ApiVersions request is answered v0 UNSUPPORTED_VERSION without reaching the upstream', async () => {
  const chain = new FilterChain([apiVersionsFilter]);
  // A version newer than the codec knows has no decodable header beyond its first fields.
  const frame = Buffer.from([0, 0, 0, 10, 0, ApiKey.ApiVersions, 0, MAX_API_VERSIONS + 1, 0, 0, 0, 42, 0, 0]);
  const header = {
    apiKey: ApiKey.ApiVersions,
    apiVersion: MAX_API_VERSIONS + 1,
    correlationId: 42,
    headerVersion: null,
    clientId: null,
    unknownTags: [],
    bodyOffset: null,
  };
  const routed = await chain.request(frame, header, true);
  assert.equal(routed.kind, 'respond');
  if (routed.kind !== 'respond') return;
  const answer = wholeFrame(routed.frame);
  assert.equal(answer.readInt32BE(4), 42);
  const body = decodeResponse(ApiKey.ApiVersions, 0, answer, 8);
  assert.equal(body.errorCode, ErrorCode.UNSUPPORTED_VERSION);
  assert.deepEqual(body.apiKeys, [{ apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion: MAX_API_VERSIONS }]);
  const ok = await new FilterHarness(apiVersionsFilter).request(ApiKey.ApiVersions, MAX_API_VERSIONS, { clientSoftwareName: 'c', clientSoftwareVersion: '1' });
  assert.ok(ok.kind === 'forward' && !ok.changed && ok.awaitsResponse === false);
});

test('SaslHandshake v0 closes the connection with the way out; v1 streams through', async () => {
  const harness = new FilterHarness(saslHandshakeFilter);
  const run = await harness.request(ApiKey.SaslHandshake, 0, { mechanism: 'PLAIN' });
  assert.equal(run.kind, 'close');
  if (run.kind !== 'close') return;
  assert.equal(run.reason, 'refused SaslHandshake v0');
  assert.match(run.error!.message, /SaslHandshake v1 and SaslAuthenticate/);
  assert.equal(harness.chain.decodesRequest(ApiKey.SaslHandshake, 1), false, 'v1 is not decoded at all');
});

test('Fetch v16+ passed through is asked as v15; a Fetch whose response a filter reads keeps its version', async () => {
  const chain = new FilterChain([fetchVersionFilter]);
  for (let v = 4; v <= apiSchema(ApiKey.Fetch)!.maxVersion; v++) assert.equal(chain.passThroughVersion(ApiKey.Fetch, v), v >= 16 ? 15 : v);
  for (const apiKey of [ApiKey.Produce, ApiKey.Metadata, ApiKey.ShareFetch]) assert.equal(chain.passThroughVersion(apiKey, 16), 16);
  assert.equal(chain.decodesRequest(ApiKey.Fetch, 17), false, 'the downgrade needs no decoding');
  assert.equal(chain.decodedApis.has(ApiKey.Fetch), false);
});

/** librdkafka's mock cluster's answer to ApiVersions v3 (it speaks up to v2): read at v3, 5 bytes are left after the body. */
function mockClusterAnswer(correlationId: number): Buffer {
  const frame = Buffer.alloc(4 + 4 + 13);
  frame.writeInt32BE(frame.length - 4, 0);
  frame.writeInt32BE(correlationId, 4);
  frame.writeInt16BE(ErrorCode.UNSUPPORTED_VERSION, 8);
  frame.writeInt8(1, 10); // a one-byte count holding the count itself, not count + 1
  frame.writeInt16BE(ApiKey.ApiVersions, 11);
  frame.writeInt16BE(0, 13);
  frame.writeInt16BE(2, 15);
  return frame; // then a throttle time of 0 and no tags
}

test('an upstream ApiVersions answer that does not decode reaches the client as Kafka answers a version it lacks, naming v0', async () => {
  const upstream = mockClusterAnswer(9);
  assert.throws(() => decodeResponse(ApiKey.ApiVersions, 3, upstream, 8), /5 bytes left after the body/);
  const routed = await new FilterChain([apiVersionsFilter]).response(ApiKey.ApiVersions, 3, 9, upstream, null);
  assert.ok(!('kind' in routed), 'answered, not closed');
  const answer = wholeFrame(routed as Parameters<typeof wholeFrame>[0]);
  assert.equal(answer.readInt32BE(4), 9);
  const body = decodeResponse(ApiKey.ApiVersions, 0, answer, 8);
  assert.equal(body.errorCode, ErrorCode.UNSUPPORTED_VERSION);
  assert.deepEqual(body.apiKeys, [{ apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion: 0 }]);
});

test('a hooked response with bytes after its body is read as clients read it, and passes as it came', async () => {
  const chain = new FilterChain([brokerAddressFilter(new BrokerMap({ advertisedHost: 'p', brokerPortBase: 30000 }))]);
  // librdkafka's mock cluster ends flexible bodies with a second empty tag section.
  const clean = encodeResponseFrame(ApiKey.Metadata, 12, 5, { brokers: [], topics: [] });
  const upstream = Buffer.concat([clean, Buffer.from([0])]);
  upstream.writeInt32BE(upstream.length - 4, 0);
  const routed = await chain.response(ApiKey.Metadata, 12, 5, upstream, null);
  assert.equal(routed, upstream);
});
