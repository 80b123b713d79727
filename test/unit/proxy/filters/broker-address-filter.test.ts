import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BrokerMap } from '../../../../src/proxy/broker-map.js';
import { TopicIds } from '../../../../src/proxy/topic-ids.js';
import { brokerAddressFilter } from '../../../../src/proxy/filters/broker-address-filter.js';
import { topicIdFilter } from '../../../../src/proxy/filters/topic-id-filter.js';
import { ApiKey, apiSchema, type ApiKeyNumber, type BodyInit, type ResponseBodies } from '../../../../src/protocol/messages.js';
import { FilterHarness } from '../../../support/filter-harness.js';

function context() {
  const opened: number[] = [];
  const brokers = new BrokerMap({ advertisedHost: 'proxy.local', brokerPortBase: 30000, onNewNode: (id) => opened.push(id) });
  return { brokers, topics: new TopicIds(), opened };
}

/** Plays an upstream response through the broker-address filter, as the proxy does. */
async function rewrite<K extends ApiKeyNumber>(apiKey: K, version: number, body: BodyInit<ResponseBodies[K]>, ctx = context()) {
  const run = await new FilterHarness(brokerAddressFilter(ctx.brokers)).response(apiKey, version, body);
  assert.equal(run.kind, 'forward');
  if (run.kind !== 'forward') throw new Error('closed');
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  return { body: run.body as any, changed: run.changed, ctx, opened: ctx.opened };
}

/** Plays an upstream response through the topic-id filter. */
async function learn<K extends ApiKeyNumber>(topics: TopicIds, apiKey: K, version: number, body: BodyInit<ResponseBodies[K]>) {
  const run = await new FilterHarness(topicIdFilter(topics)).response(apiKey, version, body);
  assert.ok(run.kind === 'forward' && !run.changed, 'topic ids are learned, the response is passed on as it came');
}

const endpoint = (nodeId: number) => ({ nodeId, host: `up-${nodeId}.internal`, port: 9092, rack: 'r1' });

test('Produce v10+ and Fetch v16+ NodeEndpoints point at the proxy and open listeners', async () => {
  for (const [apiKey, from] of [
    [ApiKey.Produce, 10],
    [ApiKey.Fetch, 16],
  ] as const) {
    const filter = new FilterHarness(brokerAddressFilter(context().brokers));
    assert.equal(filter.chain.decodesResponse(apiKey, from - 1), false, `api ${apiKey} below v${from} streams`);
    assert.equal(filter.chain.decodesResponse(apiKey, from), true);
    for (let v = from; v <= apiSchema(apiKey)!.maxVersion; v++) {
      const { body, changed, ctx, opened } = await rewrite(apiKey, v, { responses: [], nodeEndpoints: [endpoint(3), endpoint(7)] });
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

test('ShareFetch and ShareAcknowledge NodeEndpoints are rewritten', async () => {
  for (const apiKey of [ApiKey.ShareFetch, ApiKey.ShareAcknowledge]) {
    const v = apiSchema(apiKey)!.maxVersion;
    const { body } = await rewrite(apiKey, v, { responses: [], nodeEndpoints: [endpoint(1)] });
    assert.equal(body.nodeEndpoints[0].port, 30001);
  }
});

test('error entries (node -1, empty host) are left as the upstream sent them', async () => {
  const { body, changed } = await rewrite(ApiKey.FindCoordinator, 3, { errorCode: 15, errorMessage: 'x', nodeId: -1, host: '', port: -1 });
  assert.equal(changed, false);
  assert.deepEqual([body.nodeId, body.host, body.port], [-1, '', -1]);
});

test('an already-rewritten response is reported unchanged, so its bytes pass through', async () => {
  const ctx = context();
  ctx.brokers.learn(0, 'up-0', 1);
  const { changed } = await rewrite(ApiKey.Metadata, 12, { brokers: [{ nodeId: 0, host: 'proxy.local', port: 30000, rack: null }], topics: [] }, ctx);
  assert.equal(changed, false);
});

test('DescribeCluster controller answers (endpointType 2) are not rewritten', async () => {
  const { changed } = await rewrite(ApiKey.DescribeCluster, 1, { endpointType: 2, brokers: [{ brokerId: 3000, host: 'ctl', port: 9093, rack: null }] });
  assert.equal(changed, false);
});

test('Metadata and CreateTopics teach topic ids; a re-created topic replaces its old id', async () => {
  const ctx = context();
  const id1 = 'AAAAAAAAAAAAAAAAAAAAAQ';
  const id2 = 'AAAAAAAAAAAAAAAAAAAAAg';
  await learn(ctx.topics, ApiKey.Metadata, 12, { brokers: [], topics: [{ name: 't', topicId: id1, partitions: [] }] });
  assert.equal(ctx.topics.name(id1), 't');
  await learn(ctx.topics, ApiKey.CreateTopics, 7, { topics: [{ name: 't', topicId: id2 }] });
  assert.equal(ctx.topics.name(id2), 't');
  assert.equal(ctx.topics.name(id1), undefined);
  assert.equal(ctx.topics.id('t'), id2);
  await learn(ctx.topics, ApiKey.DeleteTopics, 6, { responses: [{ name: 't', topicId: id2, errorCode: 0 }] });
  assert.equal(ctx.topics.name(id2), undefined, 'a deleted topic is forgotten');
  ctx.topics.learn('u', 'AAAAAAAAAAAAAAAAAAAAAA');
  assert.equal(ctx.topics.id('u'), undefined, 'the zero uuid means no id');
});

test('broker ports that would pass 65535 are not handed out', async () => {
  const ctx = { ...context(), brokers: new BrokerMap({ advertisedHost: 'h', brokerPortBase: 65000 }) };
  const { body, changed } = await rewrite(ApiKey.Metadata, 12, { brokers: [{ nodeId: 1000, host: 'up', port: 9092, rack: null }], topics: [] }, ctx);
  assert.equal(changed, false);
  assert.equal(body.brokers[0].port, 9092);
});
