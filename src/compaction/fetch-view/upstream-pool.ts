/**
 * The proxy's own connections to the upstream brokers for reads the fetch view and the produce
 * guard make themselves: one UpstreamClient per broker, reused, with partition leaders and topic
 * ids learned through Metadata and forgotten when a broker says it no longer leads.
 */
import type { Logger } from '../../ops/log.js';
import { ErrorCode } from '../../protocol/errors.js';
import { ApiKey } from '../../protocol/messages.js';
import type { HostPort } from '../../proxy/broker-map.js';
import type { TopicIds } from '../../proxy/topic-ids.js';
import { UpstreamClient, type UpstreamClientOptions } from '../../upstream/client.js';
import type { UpstreamConnector } from '../../upstream/upstream-connector.js';
import { ReusedBuffers } from '../../upstream/reused-buffers.js';
import { SESSIONLESS_EPOCH } from './fetch-session.js';
import type { PartitionRead, PartitionRecords, UpstreamRead, UpstreamReads } from './upstream-reads.js';

export interface UpstreamPoolOptions {
  bootstrap: HostPort[];
  topicIds: TopicIds;
  log: Logger;
  maxFrameBytes: number;
  requestTimeoutMs: number;
  clientId?: string;
  connector?: UpstreamConnector;
  /** A lookup of every topic's id runs at most this often (ids a client made up stay unknown). */
  topicLookupIntervalMs?: number;
}

interface MetadataPartition {
  partitionIndex: number;
  leaderId: number;
  leaderEpoch: number;
}

interface MetadataTopic {
  errorCode: number;
  name: string | null;
  topicId?: string;
  partitions: MetadataPartition[];
}

interface MetadataBody {
  brokers: { nodeId: number; host: string; port: number }[];
  topics: MetadataTopic[];
}

/** Partition errors after which the cached leader is no longer trusted. */
const STALE_LEADER = new Set<number>([
  ErrorCode.NOT_LEADER_OR_FOLLOWER,
  ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
  ErrorCode.UNKNOWN_TOPIC_ID,
  74, // FENCED_LEADER_EPOCH
  75, // UNKNOWN_LEADER_EPOCH
]);

const EARLIEST_TIMESTAMP = -2n;
/**
 * Read memory kept for reuse: an answer gives each read back once it has copied its survivors
 * out (partition-view.ts), so this is the reads of the few answers put together at once, the
 * largest of them (read-size.ts) anyway; let go after a few idle seconds.
 */
const KEEP_READ_BYTES = 8 << 20;
const KEEP_READS_IDLE_MS = 5_000;
const FIRST_TOPIC_ID_FETCH_VERSION = 13;

export class UpstreamPool implements UpstreamReads {
  private readonly clients = new Map<string, Promise<UpstreamClient>>();
  private readonly brokers = new Map<number, HostPort>();
  private readonly leaders = new Map<string, number>();
  private allTopics: Promise<void> | null = null;
  private allTopicsAt = -Infinity;
  private readonly clientOptions: UpstreamClientOptions;
  private readonly frames = new ReusedBuffers({ keepBytes: KEEP_READ_BYTES, idleMs: KEEP_READS_IDLE_MS });
  private closed = false;

  constructor(private readonly opts: UpstreamPoolOptions) {
    this.clientOptions = {
      clientId: opts.clientId ?? 'kcompact-reader',
      maxFrameBytes: opts.maxFrameBytes,
      requestTimeoutMs: opts.requestTimeoutMs,
      connector: opts.connector,
    };
  }

  async readPartition(read: PartitionRead): Promise<UpstreamRead> {
    const leader = await this.leader(read.topic, read.partition);
    const client = await this.client(leader);
    const version = client.version(ApiKey.Fetch);
    const topicId = version >= FIRST_TOPIC_ID_FETCH_VERSION ? await this.topicId(read.topic) : undefined;
    const body = await client.request(
      ApiKey.Fetch,
      version,
      {
        replicaId: -1,
        maxWaitMs: 0,
        minBytes: 1,
        maxBytes: read.maxBytes,
        isolationLevel: read.isolationLevel,
        sessionId: 0,
        sessionEpoch: SESSIONLESS_EPOCH,
        topics: [
          {
            topic: read.topic,
            topicId,
            partitions: [
              {
                partition: read.partition,
                currentLeaderEpoch: read.currentLeaderEpoch,
                fetchOffset: BigInt(read.fetchOffset),
                lastFetchedEpoch: -1,
                logStartOffset: -1n,
                partitionMaxBytes: read.maxBytes,
              },
            ],
          },
        ],
        forgottenTopicsData: [],
        rackId: '',
      },
      this.frames,
    );
    if (body.errorCode) throw new Error(`upstream refused a Fetch with error ${body.errorCode}`);
    const partition = body.responses?.[0]?.partitions?.[0] as PartitionRecords | undefined;
    if (!partition) throw new Error(`upstream answered a Fetch of ${read.topic}-${read.partition} without the partition`);
    if (STALE_LEADER.has(partition.errorCode)) this.leaders.delete(leaderKey(read.topic, read.partition));
    const { records } = partition;
    return {
      ...partition,
      release: () => {
        if (records) this.frames.give(records);
      },
    };
  }

  /** ListOffsets EARLIEST: what Kafka reports as a partition's log start offset. */
  async logStartOffset(topic: string, partition: number): Promise<bigint> {
    const client = await this.client(await this.leader(topic, partition));
    const body = await client.request(ApiKey.ListOffsets, client.version(ApiKey.ListOffsets), {
      replicaId: -1,
      isolationLevel: 0,
      topics: [{ name: topic, partitions: [{ partitionIndex: partition, currentLeaderEpoch: -1, timestamp: EARLIEST_TIMESTAMP }] }],
    });
    const answer = body.topics?.[0]?.partitions?.[0];
    if (!answer || answer.errorCode !== 0) {
      if (answer && STALE_LEADER.has(answer.errorCode)) this.leaders.delete(leaderKey(topic, partition));
      throw new Error(`upstream answered ListOffsets for ${topic}-${partition} with error ${answer?.errorCode ?? 'none'}`);
    }
    return answer.offset as bigint;
  }

  resolveTopicIds(ids: string[]): Promise<void> {
    if (ids.every((id) => this.opts.topicIds.name(id) !== undefined)) return Promise.resolve();
    const interval = this.opts.topicLookupIntervalMs ?? 1000;
    if (!this.allTopics && Date.now() - this.allTopicsAt >= interval) {
      this.allTopicsAt = Date.now();
      this.allTopics = this.metadata(null)
        .then(() => undefined)
        .finally(() => {
          this.allTopics = null;
        });
    }
    return this.allTopics ?? Promise.resolve();
  }

  close(): void {
    this.closed = true;
    for (const pending of this.clients.values())
      pending.then(
        (c) => c.close(),
        () => undefined,
      );
    this.clients.clear();
  }

  private async topicId(topic: string): Promise<string | undefined> {
    const known = this.opts.topicIds.id(topic);
    if (known) return known;
    await this.metadata([topic]);
    return this.opts.topicIds.id(topic);
  }

  private async leader(topic: string, partition: number): Promise<HostPort> {
    let nodeId = this.leaders.get(leaderKey(topic, partition));
    if (nodeId === undefined) {
      await this.metadata([topic]);
      nodeId = this.leaders.get(leaderKey(topic, partition));
    }
    const address = nodeId === undefined ? undefined : this.brokers.get(nodeId);
    if (!address) throw new Error(`upstream names no leader for ${topic}-${partition}`);
    return address;
  }

  /** Asks a bootstrap broker about the topics (null: all of them) and learns what it says. */
  private async metadata(topics: string[] | null): Promise<void> {
    let lastErr: unknown = new Error('no upstream configured');
    for (const address of [...this.opts.bootstrap, ...this.brokers.values()]) {
      try {
        const client = await this.client(address);
        const body: MetadataBody = await client.request(ApiKey.Metadata, client.version(ApiKey.Metadata), {
          topics: topics?.map((name) => ({ name })) ?? null,
          allowAutoTopicCreation: false,
          includeTopicAuthorizedOperations: false,
        });
        for (const b of body.brokers) this.brokers.set(b.nodeId, { host: b.host, port: b.port });
        for (const t of body.topics) {
          if (t.errorCode !== 0 || !t.name) continue;
          this.opts.topicIds.learn(t.name, t.topicId);
          for (const p of t.partitions) if (p.leaderId >= 0) this.leaders.set(leaderKey(t.name, p.partitionIndex), p.leaderId);
        }
        return;
      } catch (err) {
        lastErr = err;
      }
    }
    throw lastErr;
  }

  private client(address: HostPort): Promise<UpstreamClient> {
    if (this.closed) return Promise.reject(new Error('upstream pool closed'));
    const key = `${address.host}:${address.port}`;
    const existing = this.clients.get(key);
    if (existing) {
      return existing.then((c) => {
        if (!c.closed) return c;
        if (this.clients.get(key) === existing) this.clients.delete(key);
        return this.client(address);
      });
    }
    const connecting = UpstreamClient.connect(address, this.clientOptions);
    this.clients.set(key, connecting);
    connecting.catch((err) => {
      if (this.clients.get(key) === connecting) this.clients.delete(key);
      this.opts.log.debug('upstream connection for reads failed', { upstream: key, err });
    });
    return connecting;
  }
}

function leaderKey(topic: string, partition: number): string {
  return `${topic}\u0000${partition}`;
}
