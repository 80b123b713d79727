/**
 * Wire-level behaviour of the transparent proxy against kfake (3 brokers): address rewriting in
 * every response that carries brokers, ApiVersions clamping, pipelining, acks=0, frame limits,
 * and backpressure. Requests are built with the project's codec and sent on bare sockets so the
 * exact bytes and orders are under the test's control.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ApiKey, apiSchema } from '../../src/protocol/messages.js';
import { encodeBatch } from '../../src/protocol/records/batch.js';
import { startProxy, type RunningProxy } from '../support/kcompact.js';
import { RawConnection, askOnce as ask } from '../support/raw-client.js';
import { requirePeers, startKfake, type RunningKfake } from '../support/index.js';

let kfake: RunningKfake;
let proxy: RunningProxy;
const skip = requirePeers();

before(async () => {
  if (skip) return;
  kfake = await startKfake({ brokers: 3, partitions: 3 });
  proxy = await startProxy(kfake.bootstrap);
});

after(async () => {
  await proxy?.stop();
  await kfake?.stop();
});

const local = (nodeId: number) => ({ host: '127.0.0.1', port: proxy.brokerPortBase + nodeId });

test('Metadata at every version lists the proxy ports, each reaching its own broker', { skip }, async () => {
  const schema = apiSchema(ApiKey.Metadata)!;
  for (let v = Math.max(schema.minVersion, 1); v <= schema.maxVersion; v++) {
    const body = await ask(proxy.bootstrap, ApiKey.Metadata, v, { topics: [] });
    const brokers = body.brokers.map((b: { nodeId: number; host: string; port: number }) => ({ nodeId: b.nodeId, host: b.host, port: b.port }));
    assert.deepEqual(
      brokers.sort((a: { nodeId: number }, b: { nodeId: number }) => a.nodeId - b.nodeId),
      [0, 1, 2].map((id) => ({ nodeId: id, ...local(id) })),
      `Metadata v${v}`,
    );
  }
  // Port N reaches node N: a produce is accepted only through the port of the partition's leader.
  const topic = 'placement';
  await ask(proxy.bootstrap, ApiKey.CreateTopics, 7, {
    topics: [{ name: topic, numPartitions: 3, replicationFactor: 1, assignments: [], configs: [] }],
    timeoutMs: 5000,
  });
  const meta = await ask(proxy.bootstrap, ApiKey.Metadata, 12, { topics: [{ name: topic }] });
  const batch = await encodeBatch(
    {
      baseOffset: 0n,
      partitionLeaderEpoch: -1,
      attributes: 0,
      lastOffsetDelta: 0,
      baseTimestamp: 1700000000000n,
      maxTimestamp: 1700000000000n,
      producerId: -1n,
      producerEpoch: -1,
      baseSequence: -1,
    },
    [{ timestampDelta: 0, offsetDelta: 0, key: Buffer.from('k'), value: Buffer.from('v') }],
    0,
  );
  for (const p of meta.topics[0].partitions as { partitionIndex: number; leaderId: number }[]) {
    for (const node of [0, 1, 2]) {
      const res = await ask(`127.0.0.1:${local(node).port}`, ApiKey.Produce, 9, {
        transactionalId: null,
        acks: 1,
        timeoutMs: 5000,
        topicData: [{ name: topic, partitionData: [{ index: p.partitionIndex, records: batch }] }],
      });
      const code = res.responses[0].partitionResponses[0].errorCode;
      assert.equal(code, node === p.leaderId ? 0 : 6, `partition ${p.partitionIndex} (leader ${p.leaderId}) through the port of node ${node}`);
    }
  }
});

test('FindCoordinator single (v0-v3) and batched (v4+) forms are rewritten', { skip }, async () => {
  for (const v of [1, 2, 3]) {
    const body = await ask(proxy.bootstrap, ApiKey.FindCoordinator, v, { key: 'group-a', keyType: 0 });
    assert.equal(body.errorCode, 0, `v${v}`);
    assert.deepEqual({ host: body.host, port: body.port }, local(body.nodeId), `FindCoordinator v${v}`);
  }
  const max = apiSchema(ApiKey.FindCoordinator)!.maxVersion;
  for (let v = 4; v <= max; v++) {
    const body = await ask(proxy.bootstrap, ApiKey.FindCoordinator, v, { keyType: 0, coordinatorKeys: ['g1', 'g2', 'g3', 'g4'] });
    assert.equal(body.coordinators.length, 4);
    for (const c of body.coordinators) {
      assert.equal(c.errorCode, 0);
      assert.deepEqual({ host: c.host, port: c.port }, local(c.nodeId), `FindCoordinator v${v} ${c.key}`);
    }
  }
});

test('DescribeCluster lists the proxy ports', { skip }, async () => {
  for (let v = 0; v <= apiSchema(ApiKey.DescribeCluster)!.maxVersion; v++) {
    const body = await ask(proxy.bootstrap, ApiKey.DescribeCluster, v, { includeClusterAuthorizedOperations: false, endpointType: 1 });
    assert.equal(body.errorCode, 0, `v${v}`);
    for (const b of body.brokers) assert.deepEqual({ host: b.host, port: b.port }, local(b.brokerId), `DescribeCluster v${v}`);
  }
});

/** The APIs the plain proxy's filters decode (no compaction here), whose versions it clamps. */
const DECODED_APIS = new Set<number>([
  ApiKey.ApiVersions,
  ApiKey.SaslHandshake,
  ApiKey.Metadata,
  ApiKey.FindCoordinator,
  ApiKey.DescribeCluster,
  ApiKey.Produce,
  ApiKey.Fetch,
  ApiKey.ShareFetch,
  ApiKey.ShareAcknowledge,
  ApiKey.CreateTopics,
  ApiKey.DeleteTopics,
]);

test('ApiVersions is the upstream answer clamped to what the proxy decodes', { skip }, async () => {
  const direct = await ask(kfake.bootstrap, ApiKey.ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' });
  const proxied = await ask(proxy.bootstrap, ApiKey.ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' });
  assert.equal(proxied.errorCode, 0);
  const byKey = new Map(proxied.apiKeys.map((k: { apiKey: number }) => [k.apiKey, k]));
  for (const d of direct.apiKeys as { apiKey: number; minVersion: number; maxVersion: number }[]) {
    const p = byKey.get(d.apiKey) as { minVersion: number; maxVersion: number } | undefined;
    const ours = apiSchema(d.apiKey);
    if (DECODED_APIS.has(d.apiKey)) {
      const min = Math.max(d.minVersion, ours!.minVersion);
      const max = Math.min(d.maxVersion, ours!.maxVersion);
      if (min > max) assert.equal(p, undefined, `api ${d.apiKey} has no common version and must be withheld`);
      else assert.deepEqual([p!.minVersion, p!.maxVersion], [min, max], `api ${d.apiKey}`);
    } else {
      assert.deepEqual([p!.minVersion, p!.maxVersion], [d.minVersion, d.maxVersion], `opaque api ${d.apiKey} passes unchanged`);
    }
  }
  assert.deepEqual(proxied.finalizedFeatures, direct.finalizedFeatures);
});

test('a too-new ApiVersions gets a v0 UNSUPPORTED_VERSION answer naming the versions spoken', { skip }, async () => {
  const conn = await RawConnection.open(proxy.bootstrap);
  // A v99 request: header v2 layout, body unknown to everyone.
  const frame = Buffer.from([0, 0, 0, 12, 0, 18, 0, 99, 0, 0, 0, 42, 0, 1, 120, 0]);
  frame.writeInt32BE(frame.length - 4, 0);
  conn.send(frame);
  const res = await conn.response(ApiKey.ApiVersions, 0);
  assert.equal(res.correlationId, 42);
  assert.equal(res.body.errorCode, 35);
  assert.deepEqual(
    res.body.apiKeys.map((k: { apiKey: number; minVersion: number; maxVersion: number }) => [k.apiKey, k.minVersion, k.maxVersion]),
    [[18, 0, apiSchema(ApiKey.ApiVersions)!.maxVersion]],
  );
  conn.close();
});

test('ApiVersions v5 to an upstream that stops at v4 gets its UNSUPPORTED_VERSION answer, and v4 works', { skip }, async () => {
  const conn = await RawConnection.open(proxy.bootstrap);
  conn.request(ApiKey.ApiVersions, 5, { clientSoftwareName: 't', clientSoftwareVersion: '1', clusterId: null, nodeId: -1 }, 7);
  const res = await conn.response(ApiKey.ApiVersions, 0);
  assert.equal(res.body.errorCode, 35);
  assert.deepEqual(
    res.body.apiKeys.find((k: { apiKey: number }) => k.apiKey === ApiKey.ApiVersions),
    { apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion: 4 },
  );
  conn.request(ApiKey.ApiVersions, 4, { clientSoftwareName: 't', clientSoftwareVersion: '1' }, 8);
  assert.equal((await conn.response(ApiKey.ApiVersions, 4)).body.errorCode, 0);
  conn.close();
});

test('pipelined requests come back in order with their own correlation ids', { skip }, async () => {
  const conn = await RawConnection.open(proxy.bootstrap);
  const plan: [number, number, object][] = [];
  for (let i = 0; i < 120; i++) {
    if (i % 3 === 0) plan.push([ApiKey.ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' }]);
    else if (i % 3 === 1) plan.push([ApiKey.Metadata, 12, { topics: [] }]);
    else plan.push([ApiKey.DescribeCluster, 0, {}]);
  }
  // One write holding every request, correlation ids deliberately not increasing.
  const { encodeRequestFrame } = await import('../../src/protocol/messages.js');
  conn.send(Buffer.concat(plan.map(([k, v, b], i) => encodeRequestFrame({ apiKey: k, apiVersion: v, correlationId: 1000 - i * 7, clientId: 'p' }, b))));
  for (let i = 0; i < plan.length; i++) {
    const [k, v] = plan[i]!;
    const res = await conn.response(k, v);
    assert.equal(res.correlationId, 1000 - i * 7, `response ${i}`);
  }
  conn.close();
});

test('an oversized frame closes that connection only', { skip }, async () => {
  const small = await startProxy(kfake.bootstrap, { maxFrameBytes: 64 * 1024 });
  try {
    const conn = await RawConnection.open(small.bootstrap);
    const header = Buffer.alloc(4);
    header.writeInt32BE(64 * 1024 + 1, 0);
    conn.send(header);
    assert.ok(await conn.closesWithin(5000), 'proxy closes a connection announcing an oversized frame');
    const neg = await RawConnection.open(small.bootstrap);
    neg.send(Buffer.from([0xff, 0xff, 0xff, 0xf0]));
    assert.ok(await neg.closesWithin(5000), 'and one announcing a negative size');
    const body = await ask(small.bootstrap, ApiKey.Metadata, 12, { topics: [] });
    assert.equal(body.brokers.length, 3, 'other connections are still served');
  } finally {
    await small.stop();
  }
});

test('a client that stops reading pauses the upstream instead of buffering without bound', { skip }, async () => {
  const topic = 'backpressure';
  await ask(proxy.bootstrap, ApiKey.CreateTopics, 7, {
    topics: [{ name: topic, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
    timeoutMs: 5000,
  });
  const meta = await ask(proxy.bootstrap, ApiKey.Metadata, 12, { topics: [{ name: topic }] });
  // Metadata lists partitions in no particular order.
  const leader = meta.topics[0].partitions.find((p: { partitionIndex: number }) => p.partitionIndex === 0).leaderId as number;
  const topicId = meta.topics[0].topicId as string;
  const value = Buffer.alloc(64 * 1024, 1);
  const producer = await RawConnection.open(`127.0.0.1:${local(leader).port}`);
  for (let b = 0; b < 32; b++) {
    const batch = await encodeBatch(
      {
        baseOffset: 0n,
        partitionLeaderEpoch: -1,
        attributes: 0,
        lastOffsetDelta: 7,
        baseTimestamp: 1700000000000n,
        maxTimestamp: 1700000000000n,
        producerId: -1n,
        producerEpoch: -1,
        baseSequence: -1,
      },
      Array.from({ length: 8 }, (_, i) => ({ timestampDelta: 0, offsetDelta: i, key: null, value })),
      0,
    );
    producer.request(
      ApiKey.Produce,
      9,
      { transactionalId: null, acks: 1, timeoutMs: 5000, topicData: [{ name: topic, partitionData: [{ index: 0, records: batch }] }] },
      b,
    );
    assert.equal((await producer.response(ApiKey.Produce, 9)).body.responses[0].partitionResponses[0].errorCode, 0);
  }
  producer.close();
  // 16 MiB in the log; 60 fetches of all of it would be ~1 GiB if the proxy buffered it all.
  const reader = await RawConnection.open(`127.0.0.1:${local(leader).port}`);
  reader.socket.pause();
  const fetch = {
    replicaId: -1,
    maxWaitMs: 0,
    minBytes: 1,
    maxBytes: 32 << 20,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [
      {
        topicId,
        partitions: [{ partition: 0, currentLeaderEpoch: -1, fetchOffset: 0n, lastFetchedEpoch: -1, logStartOffset: -1n, partitionMaxBytes: 32 << 20 }],
      },
    ],
    forgottenTopicsData: [],
    rackId: '',
  };
  for (let i = 0; i < 60; i++) reader.request(ApiKey.Fetch, 13, fetch, i);
  const deadline = Date.now() + 3000;
  let peak = 0;
  while (Date.now() < deadline) {
    peak = Math.max(peak, proxy.server.bufferedBytes());
    await new Promise((r) => setTimeout(r, 50));
  }
  // Each response is ~16 MiB, so buffering all 60 would pass 900 MiB; a paused upstream keeps
  // the proxy to about one response in flight.
  assert.ok(peak < 64 << 20, `proxy buffered ${peak} bytes for a client that does not read`);
  reader.socket.resume();
  for (let i = 0; i < 60; i++) {
    const res = await reader.response(ApiKey.Fetch, 13, 30_000);
    assert.equal(res.correlationId, i);
    assert.equal(res.body.responses[0].partitions[0].errorCode, 0);
    assert.ok(res.frame.length > 8 << 20, `fetch ${i} returned ${res.frame.length} bytes`);
  }
  reader.close();
});
