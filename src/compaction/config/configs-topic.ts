/**
 * The configs topic in the upstream (`__kcompact_configs`): one partition, one record per topic
 * name, retained forever where the store allows and compacted by kcompact like the topics it
 * owns (so on a store that caps retention, passes carry its records forward). Every proxy replica
 * writes its config changes here and reads everyone's, which is how a topic made compact through
 * one replica is compact through all.
 */
import { SYSTEM_CLOCK } from '../../common/clock.js';
import type { Logger } from '../../common/log.js';
import { batchesIn } from '../../protocol/carry/carried-batch.js';
import { CarryKind, carryKindOf } from '../../protocol/carry/carry-record.js';
import { refusedRetention } from './retention-limits.js';
import { ConfigResourceType } from '../../protocol/config-resource.js';
import { ErrorCode, ProtocolError } from '../../protocol/errors.js';
import { ApiKey } from '../../protocol/messages.js';
import { decodeRecords, encodeBatch, iterateBatches } from '../../protocol/records/batch.js';
import { Compression } from '../../protocol/records/compression.js';
import { ZERO_UUID } from '../../proxy/topic-ids.js';
import type { UpstreamClient } from '../../upstream/client.js';
import { isRetriable, isStaleMetadataCode, UpstreamError } from '../../upstream/error-class.js';
import { withRetries } from '../../upstream/retry.js';
import type { UpstreamClusterClient } from '../../upstream/upstream-cluster-client.js';

export const CONFIGS_TOPIC = '__kcompact_configs';

/** The upstream cannot hold the configs topic (no CreateTopics, Fetch or Produce, or it refused to create it). */
export class ConfigsTopicUnavailable extends Error {
  override readonly name = 'ConfigsTopicUnavailable';
}

/** The read position is below the topic's log start (records were deleted) or past its end (topic replaced). */
export class OffsetOutOfRange extends Error {
  override readonly name = 'OffsetOutOfRange';
}

export interface ConfigRecord {
  /** The offset the record was written at: a carried copy's original's. */
  offset: number;
  key: string;
  value: Buffer | null;
}

export interface ConfigRead {
  records: ConfigRecord[];
  /** Where the next read starts. */
  nextOffset: number;
  highWatermark: number;
}

const FETCH_MAX_BYTES = 8 * 1024 * 1024;
/** Names and not ids in Produce and Fetch: the topic is known by name before its id is. */
const MAX_NAMED_VERSION = 12;
const OFFSET_OUT_OF_RANGE = ErrorCode.OFFSET_OUT_OF_RANGE;
/** An append is tried this often, a leader looked up afresh before each retry (the backoff rule between). */
const APPEND_ATTEMPTS = 3;
const APPEND_BACKOFF = { baseMs: 100, maxMs: 1_000 };
/** Polling for the leader of the configs topic just created. */
const CREATED_LEADER_POLL_MS = 100;
/** The resource type of a topic in DescribeConfigs. */
/** Answers to creating the configs topic that will not change by asking again. */
const REFUSALS = new Set<number>([
  ErrorCode.INVALID_CONFIG,
  ErrorCode.POLICY_VIOLATION,
  ErrorCode.INVALID_REPLICATION_FACTOR,
  ErrorCode.TOPIC_AUTHORIZATION_FAILED,
]);

function apiVersion(client: UpstreamClient, apiKey: number, what: string): number {
  try {
    return client.version(apiKey);
  } catch (err) {
    if (err instanceof ProtocolError) throw new ConfigsTopicUnavailable(`the upstream cannot ${what}: ${err.message}`);
    throw err;
  }
}

export class ConfigsTopic {
  private leader: number | null = null;

  constructor(
    private readonly links: UpstreamClusterClient,
    private readonly log: Logger,
    private readonly timeoutMs: number,
    readonly topic = CONFIGS_TOPIC,
  ) {}

  /** Finds the topic, creating it on first use; returns its topic id (null when the upstream has none). */
  async open(): Promise<string | null> {
    let found = await this.lookup();
    if (found.errorCode === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) {
      await this.create();
      const deadline = Date.now() + this.timeoutMs;
      while ((found = await this.lookup()).errorCode !== ErrorCode.NONE || this.leader === null) {
        if (Date.now() > deadline) throw new Error(`${this.topic} was created but has no leader after ${this.timeoutMs} ms`);
        await SYSTEM_CLOCK.sleep(CREATED_LEADER_POLL_MS);
      }
    }
    if (found.errorCode !== ErrorCode.NONE) throw new UpstreamError(`Metadata for ${this.topic}`, found.errorCode);
    if (this.leader === null) throw new Error(`${this.topic} has no leader`);
    await this.checkRetention();
    return found.topicId === ZERO_UUID ? null : found.topicId;
  }

  /** The records from `from` on, as much as one fetch returns. */
  async read(from: number): Promise<ConfigRead> {
    const client = await this.leaderClient();
    const version = Math.min(apiVersion(client, ApiKey.Fetch, 'fetch'), MAX_NAMED_VERSION);
    const answer = await client.request(ApiKey.Fetch, version, {
      replicaId: -1,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: FETCH_MAX_BYTES,
      isolationLevel: 0,
      sessionId: 0,
      sessionEpoch: -1,
      topics: [{ topic: this.topic, partitions: [{ partition: 0, fetchOffset: BigInt(from), partitionMaxBytes: FETCH_MAX_BYTES }] }],
      forgottenTopicsData: [],
      rackId: '',
    });
    if (answer.errorCode) throw new UpstreamError(`fetch from ${this.topic}`, answer.errorCode);
    const p = answer.responses[0]?.partitions[0];
    if (!p) throw new Error(`fetch from ${this.topic} returned no partition`);
    if (p.errorCode === OFFSET_OUT_OF_RANGE) throw new OffsetOutOfRange(`offset ${from} is out of range for ${this.topic}`);
    this.check(p.errorCode, 'fetch from');
    const records: ConfigRecord[] = [];
    let nextOffset = from;
    const data = p.records;
    if (data && data.length > 0) {
      for (const batch of iterateBatches(data).batches) {
        const base = Number(batch.baseOffset);
        nextOffset = Math.max(nextOffset, base + batch.lastOffsetDelta + 1);
        if (batch.isControl) continue;
        for (const r of await decodeRecords(data, batch)) {
          if (base + r.offsetDelta < from) continue;
          const kind = carryKindOf(r.headers);
          // A copy a pass carried (docs/carrying.md) holds originals: the latest original offset per key wins.
          if (kind === CarryKind.Copy) records.push(...(await carriedOriginals(r.value)));
          else if (kind === CarryKind.None && r.key !== null) records.push(configRecord(base + r.offsetDelta, r.key, r.value));
        }
      }
    }
    return { records, nextOffset, highWatermark: Number(p.highWatermark) };
  }

  /** The first offset the topic still holds. */
  async logStart(): Promise<number> {
    const client = await this.leaderClient();
    const version = apiVersion(client, ApiKey.ListOffsets, 'list offsets');
    const answer = await client.request(ApiKey.ListOffsets, version, {
      replicaId: -1,
      isolationLevel: 0,
      topics: [{ name: this.topic, partitions: [{ partitionIndex: 0, timestamp: -2n }] }],
      timeoutMs: this.timeoutMs,
    });
    const p = answer.topics[0]?.partitions[0];
    this.check(p?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR, 'list offsets of');
    return Number(p.offset);
  }

  /** Appends the records (acks=all); returns the offset of the first. */
  async append(entries: readonly { key: string; value: Buffer | null }[]): Promise<number> {
    const now = BigInt(Date.now());
    const batch = await encodeBatch(
      {
        baseOffset: 0n,
        partitionLeaderEpoch: -1,
        attributes: 0,
        lastOffsetDelta: entries.length - 1,
        baseTimestamp: now,
        maxTimestamp: now,
        producerId: -1n,
        producerEpoch: -1,
        baseSequence: -1,
      },
      entries.map((e, i) => ({ timestampDelta: 0, offsetDelta: i, key: Buffer.from(e.key, 'utf8'), value: e.value })),
      Compression.None,
    );
    return withRetries(
      async () => {
        const client = await this.leaderClient();
        const version = Math.min(apiVersion(client, ApiKey.Produce, 'produce'), MAX_NAMED_VERSION);
        const answer = await client.request(ApiKey.Produce, version, {
          transactionalId: null,
          acks: -1,
          timeoutMs: this.timeoutMs,
          topicData: [{ name: this.topic, partitionData: [{ index: 0, records: batch }] }],
        });
        const p = answer.responses[0]?.partitionResponses[0];
        this.check(p?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR, 'produce to');
        return Number(p!.baseOffset);
      },
      {
        attempts: APPEND_ATTEMPTS,
        rule: APPEND_BACKOFF,
        retriable: (err) => !(err instanceof ConfigsTopicUnavailable) && isRetriable(err),
        onRetry: () => {
          this.leader = null;
        },
      },
    );
  }

  private async leaderClient(): Promise<UpstreamClient> {
    if (this.leader === null) {
      const found = await this.lookup();
      if (found.errorCode !== ErrorCode.NONE || this.leader === null) {
        throw new UpstreamError(
          `looking up the leader of ${this.topic}`,
          found.errorCode === ErrorCode.NONE ? ErrorCode.LEADER_NOT_AVAILABLE : found.errorCode,
        );
      }
    }
    try {
      return await this.links.broker(this.leader, 'admin');
    } catch (err) {
      this.leader = null;
      throw err;
    }
  }

  private check(errorCode: number, what: string): void {
    if (errorCode === ErrorCode.NONE) return;
    if (isStaleMetadataCode(errorCode)) this.leader = null;
    throw new UpstreamError(`${what} ${this.topic}`, errorCode);
  }

  private async lookup(): Promise<{ errorCode: number; topicId: string }> {
    const answer = await this.links.metadata([this.topic]);
    const t = answer.topics.find((x) => x.name === this.topic);
    if (!t) return { errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, topicId: ZERO_UUID };
    const leader = t.partitions.find((p) => p.partitionIndex === 0)?.leaderId ?? -1;
    this.leader = t.errorCode === ErrorCode.NONE && leader >= 0 ? leader : null;
    return { errorCode: t.errorCode, topicId: t.topicId ?? ZERO_UUID };
  }

  private async create(): Promise<void> {
    let result = await this.createWith([
      { name: 'retention.ms', value: '-1' },
      { name: 'retention.bytes', value: '-1' },
    ]);
    if (result.errorCode !== ErrorCode.NONE && result.errorCode !== ErrorCode.TOPIC_ALREADY_EXISTS && refusedRetention(result.errorMessage)) {
      // A store that caps retention (OCI Streaming, Event Hubs): the topic takes the store's own (checkRetention says what that costs).
      this.log.warn('the upstream refused infinite retention for the topic config store; creating it with the store default', {
        topic: this.topic,
        refusal: result.errorMessage,
      });
      result = await this.createWith([]);
    }
    if (result.errorCode === ErrorCode.TOPIC_ALREADY_EXISTS) return;
    if (result.errorCode !== ErrorCode.NONE) {
      const failed = new UpstreamError(`creating ${this.topic} with infinite retention`, result.errorCode, result.errorMessage);
      throw REFUSALS.has(result.errorCode) ? new ConfigsTopicUnavailable(failed.message) : failed;
    }
    this.log.info('created the topic config store in the upstream', { topic: this.topic });
  }

  private async createWith(configs: { name: string; value: string }[]): Promise<{ errorCode: number; errorMessage: string | null }> {
    const client = await this.links.controller('admin');
    const version = apiVersion(client, ApiKey.CreateTopics, 'create topics');
    const answer = await client.request(ApiKey.CreateTopics, version, {
      topics: [
        {
          name: this.topic,
          numPartitions: 1,
          // -1 (the broker's default replication) needs v4; v2 and v3 take an explicit factor.
          replicationFactor: version >= 4 ? -1 : 1,
          assignments: [],
          configs,
        },
      ],
      timeoutMs: this.timeoutMs,
      validateOnly: false,
    });
    const result = answer.topics[0];
    if (!result) throw new Error(`CreateTopics for ${this.topic} returned no result`);
    return { errorCode: result.errorCode, errorMessage: result.errorMessage ?? null };
  }

  /** A configs topic that loses records by size loses topic configs, and by age unless a replica carries them: say so. */
  private async checkRetention(): Promise<void> {
    const client = await this.links.any('admin');
    let version: number;
    try {
      version = client.version(ApiKey.DescribeConfigs);
    } catch {
      return;
    }
    const answer = await client.request(ApiKey.DescribeConfigs, version, {
      resources: [{ resourceType: ConfigResourceType.TOPIC, resourceName: this.topic, configurationKeys: ['retention.ms', 'retention.bytes'] }],
      includeSynonyms: false,
      includeDocumentation: false,
    });
    const result = answer.results[0];
    if (!result || result.errorCode !== ErrorCode.NONE) return;
    const finite = result.configs.filter((c) => c.value !== '-1');
    if (finite.some((c) => c.name === 'retention.bytes')) {
      this.log.error('the topic config store in the upstream drops records by size; topic configs will be lost when it does', {
        topic: this.topic,
        retention: Object.fromEntries(finite.map((c) => [c.name, c.value])),
        fix: `set retention.bytes=-1 on ${this.topic}`,
      });
    } else if (finite.length > 0) {
      this.log.warn('the topic config store in the upstream expires its records; the replica that carries keeps them (the carry setting)', {
        topic: this.topic,
        retention: Object.fromEntries(finite.map((c) => [c.name, c.value])),
        fix: `turn carry on in one replica, or set retention.ms=-1 on ${this.topic} where the store allows it`,
      });
    }
  }
}

function configRecord(offset: number, key: Buffer, value: Buffer | null): ConfigRecord {
  return { offset, key: key.toString('utf8'), value: value === null ? null : Buffer.from(value) };
}

/** The original records a carried copy holds, at their own offsets. */
async function carriedOriginals(value: Buffer | null): Promise<ConfigRecord[]> {
  const run = value ?? Buffer.alloc(0);
  const out: ConfigRecord[] = [];
  for (const batch of batchesIn(run)) {
    const base = Number(batch.baseOffset);
    for (const r of await decodeRecords(run, batch)) if (r.key !== null) out.push(configRecord(base + r.offsetDelta, r.key, r.value));
  }
  return out;
}
