/**
 * kcompact in front of librdkafka's mock cluster (test/peers/python/mock_cluster.py), a
 * Kafka-protocol store that tests everywhere use and that answers ApiVersions above the v2 it
 * speaks with a body no version describes. The proxy's own client falls back to v0 as Java and
 * librdkafka do, the proxy starts, and clients through it (kafkajs; librdkafka, which meets the
 * same answer on the proxy's answer path) produce and read. The store has no CreateTopics, so a
 * compacted topic is a static one (--topics); docs/semantics.md says what works.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import kafkajs from 'kafkajs';
import { parseHostPortList } from '../../src/common/host-port.js';
import { ApiKey } from '../../src/protocol/messages.js';
import { UpstreamClient } from '../../src/upstream/client.js';
import { startCliProxy, type CliProxy } from '../support/kcompact-cli.js';
import { requirePeers } from '../support/peers.js';
import { pythonScriptsDir, venvPython } from '../support/paths.js';
import { makeTempDir, pollUntil, startBackground, tail, type BackgroundProcess, type TempDir } from '../support/processes.js';
import { ckConsume, ckProduce, python } from '../support/runners.js';

const skip = requirePeers(['python venv']);
const COMPACTED = 'mock-compacted';
const OPTIONS = { clientId: 'mock-cluster-test', maxFrameBytes: 1 << 24, requestTimeoutMs: 10_000 };

let temp: TempDir;
let mock: BackgroundProcess;
let bootstrap: string;
let proxy: CliProxy;

before(async () => {
  if (skip) return;
  temp = makeTempDir('kcompact-mock-cluster-');
  const stdoutFile = path.join(temp.path, 'stdout.log');
  const stderrFile = path.join(temp.path, 'stderr.log');
  mock = startBackground(venvPython, [path.join(pythonScriptsDir, 'mock_cluster.py'), '--brokers', '3'], { stdoutFile, stderrFile });
  bootstrap = await pollUntil(
    'librdkafka mock cluster',
    30_000,
    async () => {
      const out = fs.readFileSync(stdoutFile, 'utf8');
      return out.includes('\n') ? (JSON.parse(out.slice(0, out.indexOf('\n'))) as { bootstrap: string }).bootstrap : undefined;
    },
    () => {
      const s = mock.exitStatus();
      return s ? `exited (code ${s.code}, signal ${s.signal}); stderr tail:\n${tail(fs.readFileSync(stderrFile, 'utf8'))}` : undefined;
    },
  );
  // segment.ms: a later round of records rolls the first one's segment, so that it can be cleaned.
  const topics = [{ topic: COMPACTED, configs: { 'cleanup.policy': 'compact', 'segment.ms': '100' } }];
  proxy = await startCliProxy({ upstream: bootstrap, args: ['--topics', JSON.stringify(topics)] });
});

after(async () => {
  await proxy?.stop();
  await mock?.stop(5_000);
  temp?.remove();
});

test("kcompact's own client negotiates with every mock broker: ApiVersions v0 after the answer above v2 does not read", { skip }, async () => {
  for (const address of parseHostPortList(bootstrap)) {
    const client = await UpstreamClient.connect(address, OPTIONS);
    try {
      assert.ok(client.version(ApiKey.Metadata) >= 9, `${address.host}:${address.port} Metadata v${client.version(ApiKey.Metadata)}`);
      assert.throws(() => client.version(ApiKey.CreateTopics), /does not support API 19/);
    } finally {
      client.close();
    }
  }
});

test('the proxy starts, finds the three brokers and says what the store cannot do', { skip }, async () => {
  const logs = proxy.logs();
  const discovered = logs.find((l) => l.msg === 'upstream brokers discovered');
  assert.equal((discovered?.brokers as unknown[] | undefined)?.length, 3, JSON.stringify(discovered));
  const configs = logs.find((l) => l.msg.startsWith('topic configs cannot be stored in the upstream'));
  assert.match(JSON.stringify(configs?.err), /cannot create topics: .*does not support API 19/);
  // Clients are not offered what the store lacks.
  const client = await UpstreamClient.connect(parseHostPortList(proxy.bootstrap)[0]!, OPTIONS);
  try {
    assert.throws(() => client.version(ApiKey.CreateTopics), /does not support API 19/);
  } finally {
    client.close();
  }
});

test('kafkajs through the proxy produces a record and reads it back', { skip }, async () => {
  const topic = 'mock-kafkajs';
  const kafka = new kafkajs.Kafka({ clientId: 'mock-cluster-test', brokers: [proxy.bootstrap], logLevel: kafkajs.logLevel.NOTHING, retry: { retries: 5 } });
  const producer = kafka.producer({ allowAutoTopicCreation: true });
  await producer.connect();
  const [sent] = await producer.send({ topic, messages: [{ key: 'k', value: 'through kcompact' }], acks: -1 });
  await producer.disconnect();
  assert.equal(sent?.errorCode, 0);
  const consumer = kafka.consumer({ groupId: 'mock-kafkajs', maxWaitTimeInMs: 200 });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    const read = await new Promise<{ partition: number; offset: string; value: string }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('kafkajs read nothing within 30 s')), 30_000);
      consumer
        .run({
          eachMessage: async ({ partition, message }) => {
            clearTimeout(timer);
            resolve({ partition, offset: message.offset, value: String(message.value) });
          },
        })
        .catch(reject);
    });
    assert.deepEqual(read, { partition: sent!.partition, offset: sent!.baseOffset, value: 'through kcompact' });
  } finally {
    await consumer.disconnect();
  }
});

test('librdkafka through the proxy (ApiVersions v3 answered as Kafka answers a version it lacks) produces and reads', { skip }, async () => {
  const produced = await ckProduce(proxy.bootstrap, { topic: 'mock-librdkafka', count: 20, keys: 5 });
  assert.equal(produced.count, 20);
  const read = await ckConsume(proxy.bootstrap, { topic: 'mock-librdkafka', count: 20, timeoutMs: 20_000 });
  assert.deepEqual(
    Object.fromEntries(Object.entries(read.partitions).map(([p, r]) => [p, r.count])),
    Object.fromEntries(Object.entries(produced.partitions).map(([p, r]) => [p, r.count])),
  );
});

test('a static compacted topic: keyless records refused with INVALID_RECORD, and a clean leaves each key its latest record', { skip }, async () => {
  await assert.rejects(python('ck.py', ['produce', '--brokers', proxy.bootstrap, '--topic', COMPACTED, '--count', '1', '--keys', '0']), /INVALID_RECORD/);
  await ckProduce(proxy.bootstrap, { topic: COMPACTED, count: 30, keys: 3 });
  await new Promise((resolve) => setTimeout(resolve, 200));
  await ckProduce(proxy.bootstrap, { topic: COMPACTED, start: 30, count: 3, keys: 3 });
  await pollUntil('the proxy indexed 33 records', 20_000, async () => {
    const status = JSON.parse((await proxy.http('/status')).body) as { compactedTopics: { topic: string; indexedRecords: number }[] };
    return status.compactedTopics.find((t) => t.topic === COMPACTED)?.indexedRecords === 33 ? true : undefined;
  });
  const compacted = await proxy.http(`/compact?topic=${COMPACTED}`, 'POST');
  assert.equal(compacted.status, 200, compacted.body);
  // The first round's segment is cleaned to one record per key; the second round is the active segment.
  const read = await ckConsume(proxy.bootstrap, { topic: COMPACTED, count: 6, timeoutMs: 20_000 });
  assert.equal(read.count, 6);
});
