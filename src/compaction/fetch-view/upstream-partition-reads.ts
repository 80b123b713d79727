/**
 * The reads the fetch view and the produce guard make themselves, over the proxy's upstream
 * client (connections, leaders, Metadata): a sessionless single-partition Fetch that reads into
 * reused memory, a partition's log start offset, and teaching the proxy's topic ids.
 */
import { ErrorCode } from '../../protocol/errors.js';
import { ApiKey } from '../../protocol/messages.js';
import type { TopicIds } from '../../proxy/topic-ids.js';
import { UpstreamError } from '../../upstream/error-class.js';
import { ReusedBuffers } from '../../upstream/reused-buffers.js';
import type { UpstreamClusterClient } from '../../upstream/upstream-cluster-client.js';
import { SESSIONLESS_EPOCH } from './fetch-session.js';
import type { PartitionRead, StoreBounds, UpstreamRead, UpstreamReads } from './upstream-reads.js';

export interface UpstreamPartitionReadsOptions {
  upstream: UpstreamClusterClient;
  topicIds: TopicIds;
  /** A lookup of every topic's id runs at most this often (ids a client made up stay unknown). */
  topicLookupIntervalMs?: number;
}

const EARLIEST_TIMESTAMP = -2n;
const LATEST_TIMESTAMP = -1n;
const READ_UNCOMMITTED = 0;
const READ_COMMITTED = 1;
/**
 * Read memory kept for reuse: an answer gives each read back once it has copied its survivors
 * out (partition-view.ts), so this is the reads of the few answers put together at once, the
 * largest of them (read-size.ts) anyway; let go after a few idle seconds.
 */
const KEEP_READ_BYTES = 8 << 20;
const KEEP_READS_IDLE_MS = 5_000;
const FIRST_TOPIC_ID_FETCH_VERSION = 13;
const TOPIC_LOOKUP_INTERVAL_MS = 1000;

export class UpstreamPartitionReads implements UpstreamReads {
  private allTopics: Promise<void> | null = null;
  private allTopicsAt = -Infinity;
  private readonly frames = new ReusedBuffers({ keepBytes: KEEP_READ_BYTES, idleMs: KEEP_READS_IDLE_MS });

  constructor(private readonly opts: UpstreamPartitionReadsOptions) {
    opts.topicIds.watch(opts.upstream);
  }

  async readPartition(read: PartitionRead): Promise<UpstreamRead> {
    const { upstream } = this.opts;
    const client = await upstream.leader(read.topic, read.partition);
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
    if (body.errorCode) throw new UpstreamError(`Fetch of ${read.topic}-${read.partition} from the upstream`, body.errorCode);
    const partition = body.responses[0]?.partitions[0];
    if (!partition) throw new Error(`upstream answered a Fetch of ${read.topic}-${read.partition} without the partition`);
    upstream.partitionError(read.topic, read.partition, partition.errorCode);
    const { records } = partition;
    return {
      ...partition,
      // Not in Fetch v4's answer; then not in the client's either, which is no newer.
      logStartOffset: partition.logStartOffset ?? -1n,
      release: () => {
        if (records) this.frames.give(records);
      },
    };
  }

  /** ListOffsets EARLIEST: what Kafka reports as a partition's log start offset. */
  logStartOffset(topic: string, partition: number): Promise<bigint> {
    return this.listOffset(topic, partition, EARLIEST_TIMESTAMP, READ_UNCOMMITTED);
  }

  async bounds(topic: string, partition: number): Promise<StoreBounds> {
    // One partition once per request: Kafka refuses a ListOffsets naming a partition twice.
    const [logStart, highWatermark, lastStable] = await Promise.all([
      this.logStartOffset(topic, partition),
      this.listOffset(topic, partition, LATEST_TIMESTAMP, READ_UNCOMMITTED),
      this.listOffset(topic, partition, LATEST_TIMESTAMP, READ_COMMITTED),
    ]);
    return { logStart, highWatermark, lastStable };
  }

  private async listOffset(topic: string, partition: number, timestamp: bigint, isolationLevel: number): Promise<bigint> {
    const { upstream } = this.opts;
    const client = await upstream.leader(topic, partition);
    const body = await client.request(ApiKey.ListOffsets, client.version(ApiKey.ListOffsets), {
      replicaId: -1,
      isolationLevel,
      topics: [{ name: topic, partitions: [{ partitionIndex: partition, currentLeaderEpoch: -1, timestamp }] }],
    });
    const answer = body.topics[0]?.partitions[0];
    const errorCode = answer?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR;
    if (errorCode !== ErrorCode.NONE) {
      upstream.partitionError(topic, partition, errorCode);
      throw new UpstreamError(`ListOffsets of ${topic}-${partition} from the upstream`, errorCode);
    }
    return answer!.offset;
  }

  resolveTopicIds(ids: string[]): Promise<void> {
    if (ids.every((id) => this.opts.topicIds.name(id) !== undefined)) return Promise.resolve();
    const interval = this.opts.topicLookupIntervalMs ?? TOPIC_LOOKUP_INTERVAL_MS;
    if (!this.allTopics && Date.now() - this.allTopicsAt >= interval) {
      this.allTopicsAt = Date.now();
      this.allTopics = this.learnTopicIds(null).finally(() => {
        this.allTopics = null;
      });
    }
    return this.allTopics ?? Promise.resolve();
  }

  private async topicId(topic: string): Promise<string | undefined> {
    const known = this.opts.topicIds.id(topic) ?? this.opts.upstream.cache.topicId(topic);
    if (known) return known;
    await this.learnTopicIds([topic]);
    return this.opts.topicIds.id(topic);
  }

  /** Asks Metadata about the topics (null: every topic): the proxy's topic ids, watching the client, learn what it says. */
  private async learnTopicIds(topics: string[] | null): Promise<void> {
    await this.opts.upstream.metadata(topics);
  }
}
