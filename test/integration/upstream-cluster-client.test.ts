/**
 * The proxy's upstream client against kfake with three brokers: the bootstrap loop passes over
 * addresses that refuse or never answer, Metadata fills the cache, a stale leader is forgotten
 * on the leader's own error and found again, and connections that fail or are dropped are
 * opened again on next use.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, test } from 'node:test';
import { UpstreamPartitionReads } from '../../src/compaction/fetch-view/upstream-partition-reads.js';
import { parseHostPortList } from '../../src/common/host-port.js';
import { createLogger } from '../../src/common/log.js';
import { ErrorCode } from '../../src/protocol/errors.js';
import { ApiKey } from '../../src/protocol/messages.js';
import { TopicIds } from '../../src/proxy/topic-ids.js';
import { NoBrokerAnswered, UpstreamError } from '../../src/upstream/error-class.js';
import { UpstreamClusterClient } from '../../src/upstream/upstream-cluster-client.js';
import { requirePeers, startKfake, type RunningKfake } from '../support/index.js';

const skip = requirePeers();
const log = createLogger({ component: 'upstream-client-test' });
const TOPIC = 'shared-client';

let kfake: RunningKfake;
/** Accepts connections and never answers: a broker that hangs. */
let silent: net.Server;
let silentConnections = 0;
/** A port nothing listens on. */
let refusedPort: number;

async function listen(server: net.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  return (server.address() as net.AddressInfo).port;
}

function clientOf(bootstrap: string, requestTimeoutMs = 10_000): UpstreamClusterClient {
  return new UpstreamClusterClient({
    bootstrap: parseHostPortList(bootstrap),
    clientId: 'upstream-client-test',
    maxFrameBytes: 1 << 24,
    requestTimeoutMs,
    log,
  });
}

before(async () => {
  if (skip) return;
  kfake = await startKfake({ brokers: 3 });
  silent = net.createServer((socket) => {
    silentConnections++;
    socket.on('error', () => {});
  });
  await listen(silent);
  const closed = net.createServer();
  refusedPort = await listen(closed);
  await new Promise<void>((resolve) => closed.close(() => resolve()));
  const admin = clientOf(kfake.bootstrap);
  try {
    const controller = await admin.controller();
    const created = await controller.request(ApiKey.CreateTopics, controller.version(ApiKey.CreateTopics), {
      topics: [{ name: TOPIC, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 10_000,
    });
    assert.equal(created.topics[0]?.errorCode, ErrorCode.NONE);
  } finally {
    admin.close();
  }
});

after(async () => {
  silent?.close();
  await kfake?.stop();
});

test('the bootstrap loop passes over an address that refuses and one that never answers, then sticks to the one that did', { skip }, async () => {
  const kfakeFirst = kfake.bootstrap.split(',')[0]!;
  const silentAddress = `127.0.0.1:${(silent.address() as net.AddressInfo).port}`;
  const client = clientOf(`127.0.0.1:${refusedPort},${silentAddress},${kfakeFirst}`, 1_000);
  try {
    const before = silentConnections;
    const answer = await client.metadata([]);
    assert.equal(answer.brokers.length, 3);
    assert.equal(silentConnections, before + 1);
    assert.equal(`${client.answeredBy!.host}:${client.answeredBy!.port}`, kfakeFirst);
    await client.metadata([TOPIC]);
    await client.any();
    assert.equal(silentConnections, before + 1, 'the address that answered is asked first, the others not again');
  } finally {
    client.close();
  }
});

test('when no address answers, the error names each one and what it did', { skip }, async () => {
  const silentAddress = `127.0.0.1:${(silent.address() as net.AddressInfo).port}`;
  const client = clientOf(`127.0.0.1:${refusedPort},${silentAddress}`, 500);
  try {
    const err = await client.metadata([]).then(
      () => assert.fail('no broker should answer'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof NoBrokerAnswered);
    assert.equal(err.failures.length, 2);
    assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${refusedPort}: .*ECONNREFUSED`));
    assert.match(err.message, new RegExp(`${silentAddress}: .*did not answer ApiVersions within 500 ms`));
  } finally {
    client.close();
  }
  // Readiness asks only for a connection: no ApiVersions, no credentials.
  const probe = clientOf(`127.0.0.1:${refusedPort},${silentAddress}`, 500);
  try {
    assert.equal((await probe.reachable(500)).port, (silent.address() as net.AddressInfo).port);
  } finally {
    probe.close();
  }
  const down = clientOf(`127.0.0.1:${refusedPort}`, 500);
  try {
    await assert.rejects(down.reachable(500), new RegExp(`no upstream bootstrap address accepts connections \\(127\\.0\\.0\\.1:${refusedPort}: `));
  } finally {
    down.close();
  }
});

test('Metadata fills the cache: brokers, controller, topic id and leader', { skip }, async () => {
  const client = clientOf(kfake.bootstrap);
  try {
    await client.metadata([TOPIC]);
    const leader = client.cache.leader(TOPIC, 0);
    assert.ok(leader && leader.leaderId >= 0);
    assert.ok(client.cache.topicId(TOPIC));
    for (const b of kfake.brokers) assert.deepEqual(client.cache.broker(b.nodeId), { host: b.host, port: b.port });
    assert.ok(client.cache.controller >= 0);
    const controller = await client.controller();
    assert.equal(controller, await client.broker(client.cache.controller), 'one connection per broker, whatever it is asked for');
  } finally {
    client.close();
  }
});

test("a leader's stale-metadata error makes the next request ask Metadata again and reach the real leader", { skip }, async () => {
  const client = clientOf(kfake.bootstrap);
  const reads = new UpstreamPartitionReads({ upstream: client, topicIds: new TopicIds() });
  try {
    const answer = await client.metadata([TOPIC]);
    const real = client.cache.leader(TOPIC, 0)!.leaderId;
    const wrong = answer.brokers.find((b) => b.nodeId !== real)!.nodeId;
    // What a leader change behind the proxy's back leaves: the cache names a broker that no longer leads.
    client.cache.learn({ ...answer, topics: answer.topics.map((t) => ({ ...t, partitions: t.partitions.map((p) => ({ ...p, leaderId: wrong })) })) });
    const err = await reads.logStartOffset(TOPIC, 0).then(
      () => assert.fail('the wrong broker should refuse'),
      (e: unknown) => e,
    );
    assert.ok(err instanceof UpstreamError, String(err));
    assert.equal(err.errorCode, ErrorCode.NOT_LEADER_OR_FOLLOWER);
    assert.equal(err.retriable, true);
    assert.equal(client.cache.leader(TOPIC, 0), undefined, 'the stale leader is forgotten');
    assert.equal(await reads.logStartOffset(TOPIC, 0), 0n);
    assert.equal(client.cache.leader(TOPIC, 0)?.leaderId, real);
  } finally {
    client.close();
  }
});

test('a connection that failed or was dropped is opened again on next use', { skip }, async () => {
  const client = clientOf(kfake.bootstrap);
  try {
    const nodeId = kfake.brokers[1]!.nodeId;
    const first = await client.broker(nodeId);
    assert.equal(await client.broker(nodeId), first, 'reused while it lives');
    first.close();
    const second = await client.broker(nodeId);
    assert.notEqual(second, first);
    assert.equal(second.closed, false);
    client.dropBroker(nodeId);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(second.closed, true, 'dropping closes it');
    const third = await client.broker(nodeId);
    assert.notEqual(third, second);
    const metadata = await third.request(ApiKey.Metadata, third.version(ApiKey.Metadata), { topics: [], allowAutoTopicCreation: false });
    assert.equal(metadata.brokers.length, 3);
    client.close();
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(third.closed, true, 'closing the client closes its connections');
    await assert.rejects(client.any(), /closed/);
  } finally {
    client.close();
  }
});

test('admin requests take a lane of their own: a request held by the broker does not hold up reads', { skip }, async () => {
  const client = clientOf(kfake.bootstrap);
  try {
    const meta = await client.metadata([TOPIC]);
    const leaderId = meta.topics[0]!.partitions[0]!.leaderId;
    const main = await client.broker(leaderId);
    const admin = await client.broker(leaderId, 'admin');
    assert.notEqual(main, admin, 'two connections to the same broker');
    assert.equal(await client.broker(leaderId, 'admin'), admin, 'the lane keeps its connection');
    // A Fetch at the log end waits on the admin lane; a ListOffsets on the main lane answers meanwhile.
    const listEnd = () =>
      main.request(ApiKey.ListOffsets, main.version(ApiKey.ListOffsets), {
        replicaId: -1,
        isolationLevel: 0,
        topics: [{ name: TOPIC, partitions: [{ partitionIndex: 0, timestamp: -1n }] }],
      });
    const end = (await listEnd()).topics[0]!.partitions[0]!.offset;
    let fetchAnswered = false;
    const waiting = admin
      .request(ApiKey.Fetch, admin.version(ApiKey.Fetch), {
        replicaId: -1,
        maxWaitMs: 5000,
        minBytes: 1 << 30,
        maxBytes: 1 << 20,
        isolationLevel: 0,
        sessionEpoch: -1,
        topics: [{ topic: TOPIC, topicId: meta.topics[0]!.topicId, partitions: [{ partition: 0, fetchOffset: end, partitionMaxBytes: 1 << 20 }] }],
        forgottenTopicsData: [],
        rackId: '',
      })
      .then(() => (fetchAnswered = true));
    await listEnd();
    assert.equal(fetchAnswered, false, 'the main lane answered while the admin lane still waited');
    await waiting;
    client.dropBroker(leaderId);
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(main.closed && admin.closed, 'dropping a broker closes its connections in every lane');
  } finally {
    client.close();
  }
});
