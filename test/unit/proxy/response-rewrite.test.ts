import { test } from 'node:test';
import assert from 'node:assert/strict';
import { responseRewriters } from '../../../src/proxy/response-rewrite.js';
import { clampApiVersions, DECODED_APIS } from '../../../src/proxy/api-versions.js';
import { BrokerMap } from '../../../src/proxy/broker-map.js';
import { TopicIds } from '../../../src/proxy/topic-ids.js';
import { ApiKey, apiSchema, decodeResponse, encodeResponse } from '../../../src/protocol/messages.js';

function context() {
  const opened: number[] = [];
  const brokers = new BrokerMap({ advertisedHost: 'proxy.local', brokerPortBase: 30000, onNewNode: (id) => opened.push(id) });
  return { ctx: { brokers, topics: new TopicIds() }, opened };
}

/** Runs the rewriter on an encoded-then-decoded body, as the proxy does, and re-encodes it. */
function rewrite(apiKey: number, version: number, body: object) {
  const { ctx, opened } = context();
  const decoded = decodeResponse(apiKey, version, encodeResponse(apiKey, version, body));
  const changed = responseRewriters.get(apiKey)!.rewrite(decoded, ctx, version);
  return { body: decodeResponse(apiKey, version, encodeResponse(apiKey, version, decoded)) as any, changed, ctx, opened }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

const endpoint = (nodeId: number) => ({ nodeId, host: `up-${nodeId}.internal`, port: 9092, rack: 'r1' });

test('Produce v10+ and Fetch v16+ NodeEndpoints point at the proxy and open listeners', () => {
  for (const [apiKey, from] of [
    [ApiKey.Produce, 10],
    [ApiKey.Fetch, 16],
  ] as const) {
    assert.equal(responseRewriters.get(apiKey)!.minVersion, from);
    for (let v = from; v <= apiSchema(apiKey)!.maxVersion; v++) {
      const { body, changed, ctx, opened } = rewrite(apiKey, v, { responses: [], nodeEndpoints: [endpoint(3), endpoint(7)] });
      assert.equal(changed, true, `api ${apiKey} v${v}`);
      assert.deepEqual(
        body.nodeEndpoints.map((e: { nodeId: number; host: string; port: number; rack: string }) => [e.nodeId, e.host, e.port, e.rack]),
        [
          [3, 'proxy.local', 30003, 'r1'],
          [7, 'proxy.local', 30007, 'r1'],
        ],
      );
      assert.deepEqual(opened, [3, 7]);
      assert.deepEqual(ctx.brokers.upstreamOf(7), { host: 'up-7.internal', port: 9092 });
    }
  }
});

test('ShareFetch and ShareAcknowledge NodeEndpoints are rewritten', () => {
  for (const apiKey of [ApiKey.ShareFetch, ApiKey.ShareAcknowledge]) {
    const v = apiSchema(apiKey)!.maxVersion;
    const { body } = rewrite(apiKey, v, { responses: [], nodeEndpoints: [endpoint(1)] });
    assert.equal(body.nodeEndpoints[0].port, 30001);
  }
});

test('error entries (node -1, empty host) are left as the upstream sent them', () => {
  const { body, changed } = rewrite(ApiKey.FindCoordinator, 3, { errorCode: 15, errorMessage: 'x', nodeId: -1, host: '', port: -1 });
  assert.equal(changed, false);
  assert.deepEqual([body.nodeId, body.host, body.port], [-1, '', -1]);
});

test('an already-rewritten response is reported unchanged, so its bytes pass through', () => {
  const { ctx } = context();
  const body = { brokers: [{ nodeId: 0, host: 'proxy.local', port: 30000, rack: null }], topics: [] };
  ctx.brokers.learn(0, 'up-0', 1);
  assert.equal(responseRewriters.get(ApiKey.Metadata)!.rewrite(body, ctx, 12), false);
});

test('DescribeCluster controller answers (endpointType 2) are not rewritten', () => {
  const { changed } = rewrite(ApiKey.DescribeCluster, 1, { endpointType: 2, brokers: [{ brokerId: 3000, host: 'ctl', port: 9093, rack: null }] });
  assert.equal(changed, false);
});

test('Metadata and CreateTopics teach topic ids; a re-created topic replaces its old id', () => {
  const { ctx } = context();
  const id1 = 'AAAAAAAAAAAAAAAAAAAAAQ';
  const id2 = 'AAAAAAAAAAAAAAAAAAAAAg';
  responseRewriters.get(ApiKey.Metadata)!.rewrite({ brokers: [], topics: [{ name: 't', topicId: id1 }] }, ctx, 12);
  assert.equal(ctx.topics.name(id1), 't');
  responseRewriters.get(ApiKey.CreateTopics)!.rewrite({ topics: [{ name: 't', topicId: id2 }] }, ctx, 7);
  assert.equal(ctx.topics.name(id2), 't');
  assert.equal(ctx.topics.name(id1), undefined);
  assert.equal(ctx.topics.id('t'), id2);
  responseRewriters.get(ApiKey.DeleteTopics)!.rewrite({ responses: [{ name: 't', topicId: id2, errorCode: 0 }] }, ctx, 6);
  assert.equal(ctx.topics.name(id2), undefined, 'a deleted topic is forgotten');
  ctx.topics.learn('u', 'AAAAAAAAAAAAAAAAAAAAAA');
  assert.equal(ctx.topics.id('u'), undefined, 'the zero uuid means no id');
});

test('broker ports that would pass 65535 are not handed out', () => {
  const brokers = new BrokerMap({ advertisedHost: 'h', brokerPortBase: 65000 });
  const entry = { nodeId: 1000, host: 'up', port: 9092 };
  assert.equal(responseRewriters.get(ApiKey.Metadata)!.rewrite({ brokers: [entry], topics: [] }, { brokers, topics: new TopicIds() }, 12), false);
  assert.equal(entry.port, 9092);
});

test('ApiVersions clamp: decoded APIs to our versions, opaque ones untouched, empty ranges dropped', () => {
  const fetchMax = apiSchema(ApiKey.Fetch)!.maxVersion;
  const body = {
    errorCode: 0,
    apiKeys: [
      { apiKey: ApiKey.Fetch, minVersion: 0, maxVersion: fetchMax + 5 },
      { apiKey: ApiKey.Produce, minVersion: 0, maxVersion: 2 },
      { apiKey: ApiKey.JoinGroup, minVersion: 0, maxVersion: 99 },
      { apiKey: 9999, minVersion: 0, maxVersion: 3 },
    ],
  };
  assert.equal(clampApiVersions(body), true);
  assert.deepEqual(body.apiKeys, [
    { apiKey: ApiKey.Fetch, minVersion: apiSchema(ApiKey.Fetch)!.minVersion, maxVersion: fetchMax },
    { apiKey: ApiKey.JoinGroup, minVersion: 0, maxVersion: 99 },
    { apiKey: 9999, minVersion: 0, maxVersion: 3 },
  ]);
  assert.ok(!DECODED_APIS.has(ApiKey.JoinGroup));
  const same = { errorCode: 0, apiKeys: [{ apiKey: ApiKey.Metadata, minVersion: 0, maxVersion: 12 }] };
  assert.equal(clampApiVersions(same), false);
});
