/**
 * The produce guard against Apache Kafka 4.4 itself: the same Produce requests go straight to a
 * topic Kafka compacts and, through kcompact with the guard, to a topic Kafka does not compact
 * but the proxy's config says is; the answers must be the same, word for word.
 */
import { TopicIds } from '../../src/proxy/topic-ids.js';
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import kafkajs from 'kafkajs';
import { ApiKey } from '../../src/protocol/messages.js';
import { encodeBatch } from '../../src/protocol/records/batch.js';
import { createProduceGuard, type ProduceGuard } from '../../src/compaction/produce-guard/produce-guard.js';
import { UpstreamPartitionReads } from '../../src/compaction/fetch-view/upstream-partition-reads.js';
import { UpstreamClusterClient } from '../../src/upstream/upstream-cluster-client.js';
import { createLogger, isLogLevel, setLogLevel } from '../../src/common/log.js';
import { parseHostPortList } from '../../src/common/host-port.js';
import { startProxy, type RunningProxy } from '../support/kcompact.js';
import { askOnce, RawConnection } from '../support/raw-client.js';
import { pollUntil, requirePeers, startKafka, type RunningKafka } from '../support/index.js';
import type { TopicConfigView } from '../../src/engine/api/topic-policy.js';

const DIRECT = 'guard-direct';
const PROXIED = 'guard-proxied';
const skip = requirePeers();
const log = createLogger({ component: 'produce-guard-test' });

let kafka: RunningKafka;
let proxy: RunningProxy;
let upstream: UpstreamClusterClient;
let pool: UpstreamPartitionReads;
let guard: ProduceGuard;
let proxyAddress: string;
const ids: Record<string, string> = {};

/** The proxy's view of topic configs: only PROXIED is compacted (Kafka itself keeps it with delete). */
const config: TopicConfigView = {
  compacted: (t) => (t === PROXIED ? ({ compact: true } as ReturnType<TopicConfigView['compacted']>) : undefined),
  compactedTopics: () => [PROXIED],
  onChange: () => () => undefined,
};

before(async () => {
  if (skip) return;
  const level = process.env.KCOMPACT_TEST_LOG_LEVEL ?? 'warn';
  setLogLevel(isLogLevel(level) ? level : 'warn');
  kafka = await startKafka({ compaction: 'reference' });
  const topics = new TopicIds();
  upstream = new UpstreamClusterClient({
    bootstrap: parseHostPortList(kafka.bootstrap),
    clientId: 'kcompact-reader',
    log,
    maxFrameBytes: 100 << 20,
    requestTimeoutMs: 10_000,
  });
  pool = new UpstreamPartitionReads({ upstream, topicIds: topics });
  guard = createProduceGuard({
    config,
    topicIds: topics,
    log,
    resolveTopicIds: (unknown) => pool.resolveTopicIds(unknown),
    logStartOffset: (topic, partition) => pool.logStartOffset(topic, partition),
  });
  proxy = await startProxy(kafka.bootstrap, { topics, filters: [guard] });
  proxyAddress = proxy.bootstrap;
  const created = await askOnce(kafka.bootstrap, ApiKey.CreateTopics, 7, {
    topics: [
      // compact,delete: Kafka refuses DeleteRecords on a compact-only topic (POLICY_VIOLATION).
      { name: DIRECT, numPartitions: 2, replicationFactor: 1, assignments: [], configs: [{ name: 'cleanup.policy', value: 'compact,delete' }] },
      { name: PROXIED, numPartitions: 2, replicationFactor: 1, assignments: [], configs: [] },
    ],
    timeoutMs: 10_000,
  });
  for (const t of created.topics) {
    assert.equal(t.errorCode, 0);
    ids[t.name] = t.topicId;
  }
  await pollUntil('both topics to take writes', 30_000, async () => {
    const offsets = await askOnce(kafka.bootstrap, ApiKey.ListOffsets, 7, {
      replicaId: -1,
      isolationLevel: 0,
      topics: [DIRECT, PROXIED].map((name) => ({
        name,
        partitions: [0, 1].map((partitionIndex) => ({ partitionIndex, currentLeaderEpoch: -1, timestamp: -1n })),
      })),
    });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    return offsets.topics.every((t: any) => t.partitions.every((p: any) => p.errorCode === 0)) || undefined;
  });
});

after(async () => {
  upstream?.close();
  await proxy?.stop();
  await kafka?.stop();
});

const fields = (count: number) => ({
  baseOffset: 0n,
  partitionLeaderEpoch: -1,
  attributes: 0,
  lastOffsetDelta: count - 1,
  baseTimestamp: BigInt(Date.now()),
  maxTimestamp: BigInt(Date.now()),
  producerId: -1n,
  producerEpoch: -1,
  baseSequence: -1,
});

function batch(keys: (string | null)[], codec: number): Promise<Buffer> {
  return encodeBatch(
    fields(keys.length),
    keys.map((k, i) => ({ timestampDelta: i, offsetDelta: i, key: k === null ? null : Buffer.from(k), value: Buffer.from(`v${i}`) })),
    codec,
  );
}

function produceBody(version: number, topic: string, partitions: { index: number; records: Buffer }[], acks = -1) {
  const byId = version >= 13;
  return { transactionalId: null, acks, timeoutMs: 10_000, topicData: [{ ...(byId ? { topicId: ids[topic] } : { name: topic }), partitionData: partitions }] };
}

/**
 * The answer with topic names and ids made neutral, so the two topics' answers compare, and
 * partitions in index order: Kafka lists them in the order of a hash map of its own (seen here:
 * a rejected partition 1 before an accepted partition 0 of one topic, the other way round of
 * another), which clients do not rely on.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function neutral(body: any): string {
  const sorted = {
    ...body,
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    responses: body.responses.map((t: any) => ({ ...t, partitionResponses: [...t.partitionResponses].sort((a: any, b: any) => a.index - b.index) })),
  };
  return JSON.stringify(sorted, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v))
    .replaceAll(DIRECT, 'TOPIC')
    .replaceAll(PROXIED, 'TOPIC')
    .replaceAll(ids[DIRECT]!, 'ID')
    .replaceAll(ids[PROXIED]!, 'ID');
}

async function both(version: number, partitions: { index: number; records: Buffer }[]) {
  const direct = await askOnce(kafka.bootstrap, ApiKey.Produce, version, produceBody(version, DIRECT, partitions));
  const proxied = await askOnce(proxyAddress, ApiKey.Produce, version, produceBody(version, PROXIED, partitions));
  return { direct, proxied };
}

test('keyless records get the same answer as from Kafka compacting the topic itself, every version and codec', { skip, timeout: 120_000 }, async () => {
  for (const version of [3, 5, 7, 8, 9, 11, 12, 13]) {
    for (const codec of [0, 3, 4]) {
      const { direct, proxied } = await both(version, [
        { index: 0, records: await batch(['a', '', 'b'], codec) },
        { index: 1, records: await batch([null, 'x', null, null, '', null], codec) },
      ]);
      assert.equal(neutral(proxied), neutral(direct), `Produce v${version}, codec ${codec}`);
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      const errors = direct.responses[0].partitionResponses.map((p: any) => [p.index, p.errorCode]).sort();
      // Kafka refuses zstd before Produce v7 ahead of any record check.
      assert.deepEqual(
        errors,
        codec === 4 && version < 7
          ? [
              [0, 76],
              [1, 76],
            ]
          : [
              [0, 0],
              [1, 87],
            ],
      );
    }
  }
  // Three codecs over eight versions, but Kafka refuses zstd before v7 before looking at keys.
  assert.equal(guard.stats.rejectedBatches, 22);
});

test('the rejection reports the log start offset as Kafka does', { skip, timeout: 60_000 }, async () => {
  for (const topic of [DIRECT, PROXIED]) {
    const deleted = await askOnce(kafka.bootstrap, ApiKey.DeleteRecords, 2, {
      topics: [{ name: topic, partitions: [{ partitionIndex: 0, offset: 5n }] }],
      timeoutMs: 10_000,
    });
    assert.equal(deleted.topics[0].partitions[0].errorCode, 0);
  }
  const { direct, proxied } = await both(9, [{ index: 0, records: await batch([null], 2) }]);
  assert.equal(direct.responses[0].partitionResponses[0].logStartOffset, 5n, neutral(direct));
  assert.equal(neutral(proxied), neutral(direct));
});

test('acks=0 with a keyless record: both close the connection', { skip, timeout: 60_000 }, async () => {
  for (const [address, topic] of [
    [kafka.bootstrap, DIRECT],
    [proxyAddress, PROXIED],
  ] as const) {
    const conn = await RawConnection.open(address);
    conn.request(ApiKey.Produce, 9, produceBody(9, topic, [{ index: 0, records: await batch([null], 0) }], 0), 1);
    assert.equal(await conn.closesWithin(10_000), true, `${address} closes`);
  }
});

test('a client sees INVALID_RECORD from the proxy as from Kafka; keyed records land', { skip, timeout: 60_000 }, async () => {
  const errors: string[] = [];
  for (const [address, topic] of [
    [kafka.bootstrap, DIRECT],
    [proxyAddress, PROXIED],
  ] as const) {
    const producer = new kafkajs.Kafka({ clientId: 'guard-test', brokers: [address], logLevel: kafkajs.logLevel.NOTHING, retry: { retries: 0 } }).producer();
    await producer.connect();
    try {
      await producer.send({ topic, messages: [{ partition: 1, key: null, value: 'no key' }] });
      errors.push('accepted');
    } catch (e) {
      errors.push(`${(e as { type?: string }).type}: ${(e as Error).message}`);
    }
    const sent = await producer.send({ topic, messages: [{ partition: 1, key: '', value: 'empty key' }] });
    assert.equal(sent[0]!.errorCode, 0);
    await producer.disconnect();
  }
  assert.equal(errors[0], errors[1]);
  assert.match(errors[0]!, /INVALID_RECORD/);
});
