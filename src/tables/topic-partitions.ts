/**
 * How many partitions a topic has, from the store's Metadata, for the default partitioner and to
 * check a partition asked for. Kept a while, as a Kafka producer keeps its metadata
 * (metadata.max.age.ms): a key is placed by the count a producer would use, and a read does not
 * cost a Metadata request.
 */
import { ErrorCode, errorName } from '../protocol/errors.js';
import type { UpstreamClusterClient } from '../upstream/upstream-cluster-client.js';
import { ApiError } from './api-error.js';

export interface TopicPartitions {
  /** The topic's partition count; an ApiError 404 when the store has no such topic. */
  count(topic: string): Promise<number>;
}

/** Partitions added to a topic are seen within this; Kafka clients' default metadata age is 5 minutes. */
export const PARTITION_COUNT_TTL_MS = 30_000;

export class MetadataPartitions implements TopicPartitions {
  private readonly known = new Map<string, { count: number; until: number }>();
  private readonly asking = new Map<string, Promise<number>>();

  constructor(
    private readonly client: Pick<UpstreamClusterClient, 'metadata'>,
    private readonly now: () => number = Date.now,
  ) {}

  count(topic: string): Promise<number> {
    const known = this.known.get(topic);
    if (known && this.now() < known.until) return Promise.resolve(known.count);
    // Concurrent requests for one topic share one Metadata request.
    let asking = this.asking.get(topic);
    if (!asking) {
      asking = this.ask(topic).finally(() => this.asking.delete(topic));
      this.asking.set(topic, asking);
    }
    return asking;
  }

  private async ask(topic: string): Promise<number> {
    const answer = await this.client.metadata([topic]);
    const t = answer.topics.find((x) => x.name === topic);
    if (!t || t.errorCode === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) {
      this.known.delete(topic);
      throw new ApiError(
        404,
        `topic ${topic} does not exist in the store`,
        'check the name; create the topic (with cleanup.policy=compact) through kcompact first',
      );
    }
    if (t.errorCode !== ErrorCode.NONE || t.partitions.length === 0) {
      throw new ApiError(
        t.errorCode === ErrorCode.LEADER_NOT_AVAILABLE ? 503 : 502,
        `the store answered Metadata for ${topic} with ${errorName(t.errorCode)}${t.partitions.length === 0 ? ' and no partitions' : ''}`,
        t.errorCode === ErrorCode.TOPIC_AUTHORIZATION_FAILED ? "grant the proxy's upstream principal access to the topic" : 'retry in a moment',
      );
    }
    this.known.set(topic, { count: t.partitions.length, until: this.now() + PARTITION_COUNT_TTL_MS });
    return t.partitions.length;
  }
}
