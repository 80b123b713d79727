/**
 * Wire-level behaviour that needs a real broker behind the proxy (kfake neither answers after an
 * acks=0 Produce nor survives garbage frames nor speaks ApiVersions v5): acks=0 requests, garbage
 * from clients, and KIP-1242's cluster and node check.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ApiKey } from '../../src/protocol/messages.js';
import { encodeBatch } from '../../src/protocol/records/batch.js';
import { startProxy, type RunningProxy } from '../support/kcompact.js';
import { RawConnection, askOnce as ask } from '../support/raw-client.js';
import { requirePeers, startKafka, type RunningKafka } from '../support/index.js';

let kafka: RunningKafka;
let proxy: RunningProxy;
const skip = requirePeers();

before(async () => {
  if (skip) return;
  kafka = await startKafka({ compaction: 'off' });
  proxy = await startProxy(kafka.bootstrap);
});

after(async () => {
  await proxy?.stop();
  await kafka?.stop();
});

const local = (nodeId: number) => ({ host: '127.0.0.1', port: proxy.brokerPortBase + nodeId });

test('acks=0 Produce gets no response and the records still land', { skip }, async () => {
  const topic = 'acks0';
  await ask(proxy.bootstrap, ApiKey.CreateTopics, 7, {
    topics: [{ name: topic, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
    timeoutMs: 5000,
  });
  const meta = await ask(proxy.bootstrap, ApiKey.Metadata, 12, { topics: [{ name: topic }] });
  const leader = meta.topics[0].partitions[0].leaderId as number;
  // Now, not a fixed date: Kafka's retention check deletes a log whose timestamps are a week old.
  const now = BigInt(Date.now());
  const batch = await encodeBatch(
    {
      baseOffset: 0n,
      partitionLeaderEpoch: -1,
      attributes: 0,
      lastOffsetDelta: 2,
      baseTimestamp: now,
      maxTimestamp: now,
      producerId: -1n,
      producerEpoch: -1,
      baseSequence: -1,
    },
    [0, 1, 2].map((i) => ({ timestampDelta: 0, offsetDelta: i, key: Buffer.from(`k${i}`), value: Buffer.from(`v${i}`) })),
    0,
  );
  const conn = await RawConnection.open(`127.0.0.1:${local(leader).port}`);
  for (const [version, corr] of [
    [3, 1],
    [9, 2],
    [11, 3],
  ] as const) {
    conn.request(
      ApiKey.Produce,
      version,
      { transactionalId: null, acks: 0, timeoutMs: 1000, topicData: [{ name: topic, partitionData: [{ index: 0, records: batch }] }] },
      corr,
    );
  }
  conn.request(ApiKey.Metadata, 12, { topics: [] }, 99);
  const res = await conn.response(ApiKey.Metadata, 12);
  assert.equal(res.correlationId, 99, 'the first response is the Metadata one: no response was awaited for acks=0');
  conn.request(
    ApiKey.ListOffsets,
    7,
    { replicaId: -1, isolationLevel: 0, topics: [{ name: topic, partitions: [{ partitionIndex: 0, timestamp: -1n }] }] },
    100,
  );
  const offsets = await conn.response(ApiKey.ListOffsets, 7);
  assert.equal(offsets.body.topics[0].partitions[0].offset, 9n, 'three acks=0 batches of three records landed');
  conn.close();
});

test('garbage from a client closes its connection and nothing else', { skip }, async () => {
  let seed = 12345;
  const rand = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
  for (let i = 0; i < 40; i++) {
    const conn = await RawConnection.open(proxy.bootstrap);
    const len = 1 + Math.floor(rand() * 200);
    const frame = Buffer.alloc(4 + len);
    frame.writeInt32BE(len, 0);
    for (let j = 4; j < frame.length; j++) frame[j] = Math.floor(rand() * 256);
    // Point some at decoded APIs so the proxy's own parsing is exercised too.
    if (len >= 4 && i % 2 === 0) frame.writeInt16BE([0, 3, 18, 10][i % 4]!, 4);
    conn.send(frame);
    await conn.closesWithin(300);
    conn.close();
  }
  const body = await ask(proxy.bootstrap, ApiKey.Metadata, 12, { topics: [] });
  assert.equal(body.brokers.length, 1);
  assert.deepEqual({ host: body.brokers[0].host, port: body.brokers[0].port }, local(body.brokers[0].nodeId));
});

test('ApiVersions v5 is answered in one round trip, and a client that names another cluster is told to rebootstrap', { skip }, async () => {
  const meta = await ask(proxy.bootstrap, ApiKey.Metadata, 12, { topics: [] });
  const nodeId = meta.brokers[0].nodeId as number;
  const hello = { clientSoftwareName: 't', clientSoftwareVersion: '1' };
  // A bootstrap connection knows neither (KIP-1242: both or none); a broker's port knows both.
  for (const [address, known] of [
    [proxy.bootstrap, false],
    [`127.0.0.1:${local(nodeId).port}`, true],
  ] as const) {
    const right = await ask(address, ApiKey.ApiVersions, 5, { ...hello, clusterId: known ? meta.clusterId : null, nodeId: known ? nodeId : -1 });
    assert.equal(right.errorCode, 0, address);
    assert.deepEqual(
      right.apiKeys.find((k: { apiKey: number }) => k.apiKey === ApiKey.ApiVersions),
      { apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion: 5 },
    );
  }
  const wrong = await ask(`127.0.0.1:${local(nodeId).port}`, ApiKey.ApiVersions, 5, { ...hello, clusterId: 'another-cluster', nodeId });
  assert.equal(wrong.errorCode, 129, 'REBOOTSTRAP_REQUIRED, as Kafka answers it');
  const direct = await ask(kafka.bootstrap, ApiKey.ApiVersions, 5, { ...hello, clusterId: 'another-cluster', nodeId });
  assert.equal(direct.errorCode, 129);
});
