/**
 * Store profiles (issue 33): real brokers set up to have exactly what a named Kafka-protocol
 * store has and to refuse what it lacks, as the store's public documentation says, so kcompact
 * can be run in front of each and its limits shown rather than assumed.
 *
 * - 'no-delete-records' (Azure Event Hubs, Confluent Freight): kfake with DeleteRecords left out
 *   of ApiVersions. Event Hubs does not list it at all, so its clients (and kcompact) never get
 *   as far as an error code; a request sent anyway closes the connection, as Kafka does for a
 *   key it does not serve.
 * - 'delete-records-denied': the nearest Apache Kafka can come to the same, with ACLs
 *   (StandardAuthorizer): DeleteRecords is listed and answered TOPIC_AUTHORIZATION_FAILED.
 * - 'shared-produce-quota' (OCI Streaming's 1 MB/s per partition, Event Hubs' throughput units):
 *   Kafka 4.4 with producer_byte_rate on the default user entity. Every unauthenticated client is
 *   User:ANONYMOUS, so clients and kcompact's own connections share one budget, and Kafka
 *   answers with throttle_time_ms and mutes the connection (KIP-219).
 * - 'no-idempotence' (OCI Streaming, Confluent Freight: no idempotent or transactional
 *   producers): kfake with InitProducerId and every transaction API left out of ApiVersions, as
 *   OCI's "unimplemented APIs". Kafka's ACLs cannot do it: since KIP-679 (Kafka 3.2) a principal
 *   with WRITE on any topic gets InitProducerId even where IDEMPOTENT_WRITE is denied.
 * - 'tiered-storage' (Apache Kafka with KIP-405 tiered storage): Kafka 4.4 with
 *   LocalTieredStorage (test/peers/java/src) as its RemoteStorageManager and Kafka's own
 *   TopicBasedRemoteLogMetadataManager; a topic asks remote.storage.enable=true, which Kafka
 *   refuses beside cleanup.policy=compact. Local retention is short, so rolled segments really
 *   move to the remote tier and reads of them are remote reads.
 * - 'gzip-only' (Azure Event Hubs takes uncompressed and gzip batches only, and serves records in
 *   batches of its own, not as written): kfake refusing a produced batch with any other codec
 *   with UNSUPPORTED_COMPRESSION_TYPE, and answering every Fetch with each stored batch cut into
 *   one uncompressed batch per record (kfake's --rebatch), offsets and records as stored.
 *
 * Capped retention (OCI Streaming, Event Hubs) is startKafka({ compaction: 'capped' }).
 */
import fs from 'node:fs';
import path from 'node:path';
import { ApiKey } from '../../src/protocol/messages.js';
import { ErrorCode, errorName } from '../../src/protocol/errors.js';
import { decodeRecords, encodeBatch, iterateBatches, verifyCrc } from '../../src/protocol/records/batch.js';
import { ZERO_UUID } from '../../src/proxy/topic-ids.js';
import { Compression } from '../../src/protocol/records/compression.js';
import { startKafka, type RunningKafka } from './kafka.js';
import { startKfake, type RunningKfake } from './kfake.js';
import { javaClassesDir } from './paths.js';
import { makeTempDir, pollUntil, type TempDir } from './processes.js';
import { askOnce, RawConnection } from './raw-client.js';
import { fetchBody } from './raw-reader.js';

export type StoreProfileName = 'no-delete-records' | 'delete-records-denied' | 'shared-produce-quota' | 'no-idempotence' | 'tiered-storage' | 'gzip-only';

export interface StoreProfileSpec {
  /** The stores it stands for. */
  stores: string;
  /** What those stores lack, as their documentation says. */
  lacks: string;
  /** What the test bed runs. */
  built: string;
}

export const STORE_PROFILES: Readonly<Record<StoreProfileName, StoreProfileSpec>> = {
  'no-delete-records': {
    stores: 'Azure Event Hubs, Confluent Freight',
    lacks: 'DeleteRecords',
    built: 'kfake, DeleteRecords left out of ApiVersions (a request for it closes the connection)',
  },
  'delete-records-denied': {
    stores: 'Azure Event Hubs, Confluent Freight',
    lacks: 'DeleteRecords',
    built: 'the nearest Apache Kafka: Kafka 4.4, StandardAuthorizer, ACLs allowing everything but DELETE on topics (TOPIC_AUTHORIZATION_FAILED)',
  },
  'shared-produce-quota': {
    stores: 'OCI Streaming (1 MB/s per partition), Azure Event Hubs (throughput units)',
    lacks: 'produce throughput beyond a quota shared by every client',
    built: 'Kafka 4.4, producer_byte_rate on the default user entity (every client is User:ANONYMOUS)',
  },
  'no-idempotence': {
    stores: 'OCI Streaming, Confluent Freight',
    lacks: 'idempotent and transactional producers',
    built: 'kfake, InitProducerId and the transaction APIs left out of ApiVersions',
  },
  'tiered-storage': {
    stores: 'Apache Kafka with tiered storage (KIP-405)',
    lacks: 'cleanup.policy=compact on a topic with remote.storage.enable=true',
    built: 'Kafka 4.4, LocalTieredStorage and TopicBasedRemoteLogMetadataManager, short local retention',
  },
  'gzip-only': {
    stores: 'Azure Event Hubs',
    lacks: 'batches compressed with snappy, lz4 or zstd, and serving batches as written',
    built:
      'kfake refusing produced batches with those codecs (UNSUPPORTED_COMPRESSION_TYPE) and serving every stored batch as one uncompressed batch per record',
  },
};

/** The quota of 'shared-produce-quota', small so that a test sees throttling within seconds. */
export const SHARED_PRODUCE_BYTE_RATE = 256 * 1024;

/** The transaction APIs a store without transactions does not list (kmsg's names). */
const TRANSACTION_APIS = [
  'InitProducerID',
  'AddPartitionsToTxn',
  'AddOffsetsToTxn',
  'EndTxn',
  'WriteTxnMarkers',
  'TxnOffsetCommit',
  'DescribeTransactions',
  'ListTransactions',
];

export interface RunningStoreProfile {
  name: StoreProfileName;
  spec: StoreProfileSpec;
  bootstrap: string;
  kind: 'kafka' | 'kfake';
  /** Configs a topic on this store is created with, as its users would give them. */
  topicConfigs: Readonly<Record<string, string>>;
  /**
   * Asks the store itself, around kcompact, for what the named store lacks; resolves to how the
   * store refused, and throws when it did not refuse as the named store would.
   */
  proveRefusal(): Promise<string>;
  /** Bytes the store holds for the topic, every partition, its remote tier included. */
  storeBytes(topic: string): Promise<number>;
  /** The store's log start of a partition (ListOffsets EARLIEST asked of the store). */
  storeStart(topic: string, partition?: number): Promise<number>;
  /** 'tiered-storage': bytes of the topic's segments in the remote tier. */
  remoteBytes?(topic: string): Promise<number>;
  stderrTail(lines?: number): string;
  stop(): Promise<void>;
}

/** The keys a store lists in ApiVersions. */
async function listedApis(bootstrap: string): Promise<Set<number>> {
  const answer = await askOnce(bootstrap, ApiKey.ApiVersions, 3, { clientSoftwareName: 'kcompact-profile', clientSoftwareVersion: '1' });
  if (answer.errorCode !== ErrorCode.NONE) throw new Error(`ApiVersions: ${errorName(answer.errorCode)}`);
  return new Set((answer.apiKeys as { apiKey: number }[]).map((k) => k.apiKey));
}

/** Sends one request the store does not list; resolves once the store closed the connection, as Kafka does for a key it does not serve. */
async function closesOn(bootstrap: string, apiKey: number, version: number, body: object): Promise<void> {
  const conn = await RawConnection.open(bootstrap);
  try {
    conn.request(apiKey, version, body, 1);
    const answered = await conn.response(apiKey, version, 10_000).then(
      () => true,
      () => false,
    );
    if (answered || !conn.isClosed) throw new Error(`the store answered API ${apiKey} v${version}, which it does not list`);
  } finally {
    conn.close();
  }
}

async function deleteRecordsError(bootstrap: string, topic: string): Promise<number> {
  const answer = await askOnce(bootstrap, ApiKey.DeleteRecords, 2, {
    topics: [{ name: topic, partitions: [{ partitionIndex: 0, offset: 0 }] }],
    timeoutMs: 10_000,
  });
  return answer.topics[0].partitions[0].errorCode as number;
}

async function createTopicDirect(
  bootstrap: string,
  topic: string,
  configs: Record<string, string>,
): Promise<{ errorCode: number; errorMessage: string | null }> {
  const answer = await askOnce(bootstrap, ApiKey.CreateTopics, 7, {
    topics: [
      { name: topic, numPartitions: 1, replicationFactor: 1, assignments: [], configs: Object.entries(configs).map(([name, value]) => ({ name, value })) },
    ],
    timeoutMs: 30_000,
    validateOnly: false,
  });
  return answer.topics[0];
}

async function storeStartOf(bootstrap: string, topic: string, partition: number): Promise<number> {
  const answer = await askOnce(bootstrap, ApiKey.ListOffsets, 7, {
    replicaId: -1,
    isolationLevel: 0,
    topics: [{ name: topic, partitions: [{ partitionIndex: partition, currentLeaderEpoch: -1, timestamp: -2n }] }],
  });
  const p = answer.topics[0].partitions[0];
  if (p.errorCode !== ErrorCode.NONE) throw new Error(`ListOffsets EARLIEST of ${topic}-${partition}: ${errorName(p.errorCode)}`);
  return Number(p.offset);
}

/** DescribeLogDirs of the topic on every broker of the store (each partition counted once: the leader's). */
async function logDirBytes(brokers: readonly string[], topic: string): Promise<number> {
  const sizes = new Map<number, number>();
  for (const b of brokers) {
    const answer = await askOnce(b, ApiKey.DescribeLogDirs, 4, { topics: null });
    for (const result of answer.results as {
      errorCode: number;
      topics: { name: string; partitions: { partitionIndex: number; partitionSize: bigint }[] }[];
    }[]) {
      if (result.errorCode !== ErrorCode.NONE) continue;
      for (const t of result.topics) {
        if (t.name !== topic) continue;
        for (const p of t.partitions) sizes.set(p.partitionIndex, Math.max(sizes.get(p.partitionIndex) ?? 0, Number(p.partitionSize)));
      }
    }
  }
  return [...sizes.values()].reduce((a, b) => a + b, 0);
}

/** A v2 batch of `count` records of `valueBytes` each, compressed with `codec`. */
async function probeBatch(count: number, valueBytes: number, codec: number): Promise<Buffer> {
  const now = BigInt(Date.now());
  return encodeBatch(
    {
      baseOffset: 0n,
      partitionLeaderEpoch: -1,
      attributes: 0,
      lastOffsetDelta: count - 1,
      baseTimestamp: now,
      maxTimestamp: now,
      producerId: -1n,
      producerEpoch: -1,
      baseSequence: -1,
    },
    Array.from({ length: count }, (_, i) => ({
      timestampDelta: 0,
      offsetDelta: i,
      key: Buffer.from(`probe-${i}`),
      // Random bytes: a compressed probe must not shrink below the quota's notice.
      value: Buffer.from(Array.from({ length: valueBytes }, () => Math.floor(Math.random() * 256))),
    })),
    codec,
  );
}

/** One produce on `conn`; the partition's error, the offset given the batch and the response's throttle time. */
async function produceOn(
  conn: RawConnection,
  topic: string,
  batch: Buffer,
  correlationId: number,
): Promise<{ errorCode: number; baseOffset: number; throttleTimeMs: number }> {
  conn.request(
    ApiKey.Produce,
    9,
    { transactionalId: null, acks: -1, timeoutMs: 30_000, topicData: [{ name: topic, partitionData: [{ index: 0, records: batch }] }] },
    correlationId,
  );
  const res = await conn.response(ApiKey.Produce, 9, 60_000);
  const p = res.body.responses[0].partitionResponses[0];
  return { errorCode: p.errorCode, baseOffset: Number(p.baseOffset), throttleTimeMs: res.body.throttleTimeMs };
}

interface Store {
  bootstrap: string;
  brokers: string[];
  stderrTail(lines?: number): string;
  stop(): Promise<void>;
}

function fromKfake(k: RunningKfake): Store {
  return { bootstrap: k.bootstrap, brokers: k.brokers.map((b) => `${b.host}:${b.port}`), stderrTail: (n) => k.stderrTail(n), stop: () => k.stop() };
}

function fromKafka(k: RunningKafka, also?: TempDir): Store {
  return {
    bootstrap: k.bootstrap,
    brokers: [k.bootstrap],
    stderrTail: (n) => k.stderrTail(n),
    stop: async () => {
      try {
        await k.stop();
      } finally {
        also?.remove();
      }
    },
  };
}

function profile(
  name: StoreProfileName,
  kind: 'kafka' | 'kfake',
  store: Store,
  proveRefusal: () => Promise<string>,
  more: Partial<Pick<RunningStoreProfile, 'topicConfigs' | 'remoteBytes' | 'storeBytes'>> = {},
): RunningStoreProfile {
  return {
    name,
    spec: STORE_PROFILES[name],
    kind,
    bootstrap: store.bootstrap,
    topicConfigs: more.topicConfigs ?? {},
    proveRefusal,
    storeBytes: more.storeBytes ?? ((topic) => logDirBytes(store.brokers, topic)),
    storeStart: (topic, partition = 0) => storeStartOf(store.bootstrap, topic, partition),
    ...(more.remoteBytes && { remoteBytes: more.remoteBytes }),
    stderrTail: store.stderrTail,
    stop: store.stop,
  };
}

/** kcompact's own topic, which every store in front of which it ran holds: a topic a probe can use without making one. */
const PROBE_TOPIC = 'kcompact-profile-probe';

async function withheldProfile(name: StoreProfileName, withhold: string[], probe: (bootstrap: string) => Promise<string>): Promise<RunningStoreProfile> {
  const kfake = await startKfake({ brokers: 1, withhold });
  return profile(name, 'kfake', fromKfake(kfake), () => probe(kfake.bootstrap));
}

async function noDeleteRecords(): Promise<RunningStoreProfile> {
  return withheldProfile('no-delete-records', ['DeleteRecords'], async (bootstrap) => {
    if ((await listedApis(bootstrap)).has(ApiKey.DeleteRecords)) throw new Error('the store lists DeleteRecords in ApiVersions');
    await createTopicDirect(bootstrap, PROBE_TOPIC, {});
    await closesOn(bootstrap, ApiKey.DeleteRecords, 2, { topics: [{ name: PROBE_TOPIC, partitions: [{ partitionIndex: 0, offset: 0 }] }], timeoutMs: 10_000 });
    return 'ApiVersions lists no DeleteRecords; a DeleteRecords request sent anyway closes the connection';
  });
}

async function noIdempotence(): Promise<RunningStoreProfile> {
  return withheldProfile('no-idempotence', TRANSACTION_APIS, async (bootstrap) => {
    const listed = await listedApis(bootstrap);
    for (const key of [ApiKey.InitProducerId, ApiKey.AddPartitionsToTxn, ApiKey.EndTxn, ApiKey.TxnOffsetCommit]) {
      if (listed.has(key)) throw new Error(`the store lists API ${key} in ApiVersions`);
    }
    await closesOn(bootstrap, ApiKey.InitProducerId, 4, { transactionalId: null, transactionTimeoutMs: 60_000, producerId: -1n, producerEpoch: -1 });
    return 'ApiVersions lists no InitProducerId, AddPartitionsToTxn, EndTxn or TxnOffsetCommit; an InitProducerId sent anyway closes the connection';
  });
}

/** ACL resource types, operations, pattern and permission types as the protocol numbers them. */
const ACL = { topic: 2, cluster: 4, literal: 3, all: 2, delete: 6, allow: 3, deny: 2 } as const;

async function deleteRecordsDenied(): Promise<RunningStoreProfile> {
  const kafka = await startKafka({
    compaction: 'off',
    properties: {
      'authorizer.class.name': 'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
      // Resources without ACLs (the cluster, groups, transactional ids) stay open to everyone,
      // the broker's own connections included: only topics get ACLs.
      'allow.everyone.if.no.acl.found': 'true',
    },
  });
  try {
    const acl = (operation: number, permissionType: number) => ({
      resourceType: ACL.topic,
      resourceName: '*',
      resourcePatternType: ACL.literal,
      principal: 'User:ANONYMOUS',
      host: '*',
      operation,
      permissionType,
    });
    const created = await askOnce(kafka.bootstrap, ApiKey.CreateAcls, 3, { creations: [acl(ACL.all, ACL.allow), acl(ACL.delete, ACL.deny)] });
    for (const r of created.results as { errorCode: number; errorMessage: string | null }[]) {
      if (r.errorCode !== ErrorCode.NONE) throw new Error(`CreateAcls: ${errorName(r.errorCode)} ${r.errorMessage ?? ''}`);
    }
    // ACLs reach the authorizer through the metadata log: wait until the deny is in force.
    await createTopicDirect(kafka.bootstrap, PROBE_TOPIC, {});
    await pollUntil('the DELETE deny in force', 30_000, async () =>
      (await deleteRecordsError(kafka.bootstrap, PROBE_TOPIC)) === ErrorCode.TOPIC_AUTHORIZATION_FAILED ? true : undefined,
    );
  } catch (e) {
    await kafka.stop();
    throw e;
  }
  return profile('delete-records-denied', 'kafka', fromKafka(kafka), async () => {
    if (!(await listedApis(kafka.bootstrap)).has(ApiKey.DeleteRecords)) throw new Error('the store does not list DeleteRecords');
    const code = await deleteRecordsError(kafka.bootstrap, PROBE_TOPIC);
    if (code !== ErrorCode.TOPIC_AUTHORIZATION_FAILED) throw new Error(`DeleteRecords answered ${errorName(code)}`);
    return 'DeleteRecords answered TOPIC_AUTHORIZATION_FAILED (listed in ApiVersions)';
  });
}

async function sharedProduceQuota(): Promise<RunningStoreProfile> {
  // Kafka frees the segments below a moved log start only at its next retention check (every
  // five minutes by default): every second, so the store's bytes show what a pass let go.
  const kafka = await startKafka({ compaction: 'off', properties: { 'log.retention.check.interval.ms': 1000, 'log.segment.delete.delay.ms': 100 } });
  try {
    const answer = await askOnce(kafka.bootstrap, ApiKey.AlterClientQuotas, 1, {
      entries: [{ entity: [{ entityType: 'user', entityName: null }], ops: [{ key: 'producer_byte_rate', value: SHARED_PRODUCE_BYTE_RATE, remove: false }] }],
      validateOnly: false,
    });
    for (const e of answer.entries as { errorCode: number; errorMessage: string | null }[]) {
      if (e.errorCode !== ErrorCode.NONE) throw new Error(`AlterClientQuotas: ${errorName(e.errorCode)} ${e.errorMessage ?? ''}`);
    }
    const created = await createTopicDirect(kafka.bootstrap, PROBE_TOPIC, {});
    if (created.errorCode !== ErrorCode.NONE) throw new Error(`creating ${PROBE_TOPIC}: ${errorName(created.errorCode)}`);
  } catch (e) {
    await kafka.stop();
    throw e;
  }
  return profile('shared-produce-quota', 'kafka', fromKafka(kafka), async () => {
    // One client writes in bursts until the store throttles it (Kafka measures a rate over its
    // whole quota window, eleven seconds, so that takes more than the quota's bytes of one
    // second); another, on its own connection, is throttled for it at once: the budget is the
    // store's, not each connection's.
    const first = await RawConnection.open(kafka.bootstrap);
    const second = await RawConnection.open(kafka.bootstrap);
    try {
      const big = await probeBatch(32, 16 * 1024, Compression.None);
      let burst = { errorCode: 0, baseOffset: 0, throttleTimeMs: 0 };
      let sent = 0;
      for (let i = 0; i < 12 && burst.throttleTimeMs === 0; i++) {
        burst = await produceOn(first, PROBE_TOPIC, big, 10 + i);
        if (burst.errorCode !== ErrorCode.NONE) throw new Error(`the burst was refused: ${errorName(burst.errorCode)}`);
        sent += big.length;
      }
      if (burst.throttleTimeMs === 0) throw new Error(`${sent} bytes produced at once drew no throttle_time_ms`);
      const small = await produceOn(second, PROBE_TOPIC, await probeBatch(1, 100, Compression.None), 1);
      if (small.throttleTimeMs === 0) throw new Error('another connection was not throttled: the quota is not shared');
      return `${sent} bytes produced at once drew throttle_time_ms=${burst.throttleTimeMs}; a 100-byte produce on another connection right after drew ${small.throttleTimeMs}`;
    } finally {
      first.close();
      second.close();
    }
  });
}

const LOCAL_TIERED_STORAGE = 'LocalTieredStorage';

async function tieredStorage(): Promise<RunningStoreProfile> {
  if (!fs.existsSync(path.join(javaClassesDir, `${LOCAL_TIERED_STORAGE}.class`))) {
    throw new Error(`${LOCAL_TIERED_STORAGE} is not compiled in ${javaClassesDir}: run bash test/peers/install.sh`);
  }
  const remote = makeTempDir('kcompact-remote-tier-');
  let kafka: RunningKafka;
  try {
    kafka = await startKafka({
      compaction: 'off',
      properties: {
        'remote.log.storage.system.enable': 'true',
        'remote.log.storage.manager.class.name': LOCAL_TIERED_STORAGE,
        'rsm.config.dir': remote.path,
        'remote.log.metadata.manager.class.name': 'org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager',
        'remote.log.metadata.manager.listener.name': 'PLAINTEXT',
        'rlmm.config.remote.log.metadata.topic.replication.factor': 1,
        'rlmm.config.remote.log.metadata.topic.num.partitions': 1,
        'remote.log.manager.task.interval.ms': 500,
        // Segments roll every second (on the next append) and leave the broker's disk two seconds
        // after they reach the remote tier: within a test, what was written is in the remote tier.
        'log.roll.ms': 1000,
        'log.local.retention.ms': 2000,
        'log.retention.check.interval.ms': 1000,
        'log.segment.delete.delay.ms': 100,
        'log.initial.task.delay.ms': 0,
      },
    });
  } catch (e) {
    remote.remove();
    throw e;
  }
  const topicDirs = async (topic: string): Promise<string[]> => {
    const answer = await askOnce(kafka.bootstrap, ApiKey.Metadata, 12, {
      topics: [{ name: topic, topicId: ZERO_UUID }],
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false,
    });
    const t = answer.topics[0] as { topicId: string };
    return fs.existsSync(remote.path) ? fs.readdirSync(remote.path).filter((d) => d.startsWith(`${t.topicId}-`)) : [];
  };
  const remoteBytes = async (topic: string): Promise<number> => {
    let bytes = 0;
    for (const dir of await topicDirs(topic)) {
      for (const segment of fs.readdirSync(path.join(remote.path, dir))) {
        const log = path.join(remote.path, dir, segment, 'log');
        if (!segment.endsWith('.partial') && fs.existsSync(log)) bytes += fs.statSync(log).size;
      }
    }
    return bytes;
  };
  return profile(
    'tiered-storage',
    'kafka',
    fromKafka(kafka, remote),
    async () => {
      const refused = await createTopicDirect(kafka.bootstrap, `${PROBE_TOPIC}-tiered-compact`, {
        'cleanup.policy': 'compact',
        'remote.storage.enable': 'true',
      });
      if (refused.errorCode === ErrorCode.NONE) throw new Error('the store created a compacted topic with remote storage');
      const tiered = await createTopicDirect(kafka.bootstrap, `${PROBE_TOPIC}-tiered`, { 'remote.storage.enable': 'true' });
      if (tiered.errorCode !== ErrorCode.NONE)
        throw new Error(`a tiered topic with cleanup.policy=delete was refused: ${errorName(tiered.errorCode)} ${tiered.errorMessage}`);
      return `CreateTopics with cleanup.policy=compact and remote.storage.enable=true: ${errorName(refused.errorCode)} (${refused.errorMessage}); the same topic with cleanup.policy=delete is created`;
    },
    {
      topicConfigs: { 'remote.storage.enable': 'true' },
      remoteBytes,
      storeBytes: async (topic) => (await logDirBytes([kafka.bootstrap], topic)) + (await remoteBytes(topic)),
    },
  );
}

/**
 * Fetches what a produced batch of `count` records at `base` became and checks it is served as
 * an event store serves it: one uncompressed batch per record, each at the record's own offset
 * (lastOffsetDelta 0), with a valid CRC and the record's key.
 */
async function servedOneByOne(bootstrap: string, base: number, count: number): Promise<string> {
  const conn = await RawConnection.open(bootstrap);
  try {
    conn.request(ApiKey.Fetch, 12, fetchBody(PROBE_TOPIC, 0, base, 0, 100), 1);
    const p = (await conn.response(ApiKey.Fetch, 12, 30_000)).body.responses[0].partitions[0];
    if (p.errorCode !== ErrorCode.NONE) throw new Error(`Fetch of ${PROBE_TOPIC} at ${base}: ${errorName(p.errorCode)}`);
    const records: Buffer = p.records ?? Buffer.alloc(0);
    const served = iterateBatches(records).batches.filter((b) => Number(b.baseOffset) < base + count);
    const shapes = served.map((b) => `${b.baseOffset}+${b.lastOffsetDelta}/${b.recordCount}/codec ${b.compression}`);
    if (served.length !== count) throw new Error(`a batch of ${count} records came back as ${served.length} batches: ${shapes.join(', ')}`);
    for (const [i, b] of served.entries()) {
      if (Number(b.baseOffset) !== base + i || b.lastOffsetDelta !== 0 || b.recordCount !== 1 || b.compression !== Compression.None) {
        throw new Error(`the record at ${base + i} came back as ${shapes[i]}`);
      }
      if (!verifyCrc(records, b)) throw new Error(`the batch at ${b.baseOffset} fails its CRC`);
      const [r] = await decodeRecords(records, b);
      if (r?.key?.toString() !== `probe-${i}`) throw new Error(`the batch at ${b.baseOffset} holds ${r?.key?.toString() ?? 'no record'}, not probe-${i}`);
    }
    return `a gzip batch of ${count} records at ${base} served as ${count} uncompressed one-record batches at its offsets`;
  } finally {
    conn.close();
  }
}

async function gzipOnly(): Promise<RunningStoreProfile> {
  const kfake = await startKfake({ brokers: 1, codecs: ['none', 'gzip'], rebatch: true });
  return profile('gzip-only', 'kfake', fromKfake(kfake), async () => {
    await createTopicDirect(kfake.bootstrap, PROBE_TOPIC, {});
    const conn = await RawConnection.open(kfake.bootstrap);
    try {
      const refused: string[] = [];
      for (const [codec, label] of [
        [Compression.Snappy, 'snappy'],
        [Compression.Lz4, 'lz4'],
        [Compression.Zstd, 'zstd'],
      ] as const) {
        const r = await produceOn(conn, PROBE_TOPIC, await probeBatch(3, 100, codec), codec);
        if (r.errorCode !== ErrorCode.UNSUPPORTED_COMPRESSION_TYPE) throw new Error(`a ${label} batch was answered ${errorName(r.errorCode)}`);
        refused.push(label);
      }
      const gzip = await produceOn(conn, PROBE_TOPIC, await probeBatch(3, 100, Compression.Gzip), 9);
      if (gzip.errorCode !== ErrorCode.NONE) throw new Error(`a gzip batch was answered ${errorName(gzip.errorCode)}`);
      const rebatched = await servedOneByOne(kfake.bootstrap, gzip.baseOffset, 3);
      return `${refused.join(', ')} batches answered UNSUPPORTED_COMPRESSION_TYPE; gzip and uncompressed ones written; ${rebatched}`;
    } finally {
      conn.close();
    }
  });
}

/** Starts the named profile's store; stop() it when done. */
export async function startStoreProfile(name: StoreProfileName): Promise<RunningStoreProfile> {
  switch (name) {
    case 'no-delete-records':
      return noDeleteRecords();
    case 'delete-records-denied':
      return deleteRecordsDenied();
    case 'shared-produce-quota':
      return sharedProduceQuota();
    case 'no-idempotence':
      return noIdempotence();
    case 'tiered-storage':
      return tieredStorage();
    case 'gzip-only':
      return gzipOnly();
  }
}
