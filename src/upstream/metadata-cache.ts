/**
 * What the upstream's Metadata answers said, as far as the proxy's own requests need it: where
 * each broker is, which one is the controller, each topic's id, and who leads each partition at
 * which epoch. Answers are merged in (a Metadata request for some topics says nothing about the
 * others); a leader is forgotten when a request to it says it no longer leads, so the next use
 * asks again.
 */
import { ErrorCode } from '../protocol/errors.js';
import type { MetadataResponse } from '../protocol/messages.js';
import { ZERO_UUID } from '../protocol/wire/uuid.js';
import type { HostPort } from '../common/host-port.js';

export interface PartitionLeader {
  leaderId: number;
  /** -1 when the upstream's Metadata version has no leader epochs. */
  leaderEpoch: number;
}

interface KnownTopic {
  /** ZERO_UUID when the upstream has no topic ids. */
  topicId: string;
  partitions: Map<number, PartitionLeader>;
}

export class MetadataCache {
  private readonly brokers = new Map<number, HostPort>();
  private readonly topics = new Map<string, KnownTopic>();
  private controllerId = -1;

  /** Takes in a Metadata answer. */
  learn(answer: MetadataResponse): void {
    for (const b of answer.brokers) this.brokers.set(b.nodeId, { host: b.host, port: b.port });
    if (answer.controllerId !== undefined) this.controllerId = answer.controllerId;
    for (const t of answer.topics) {
      if (!t.name) continue;
      if (t.errorCode === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) {
        this.topics.delete(t.name);
        continue;
      }
      if (t.errorCode !== ErrorCode.NONE) continue;
      const partitions = new Map<number, PartitionLeader>();
      for (const p of t.partitions) {
        if (p.errorCode === ErrorCode.NONE && p.leaderId >= 0) partitions.set(p.partitionIndex, { leaderId: p.leaderId, leaderEpoch: p.leaderEpoch ?? -1 });
      }
      this.topics.set(t.name, { topicId: t.topicId ?? ZERO_UUID, partitions });
    }
  }

  /** Where the broker is, as the last answer naming it said. */
  broker(nodeId: number): HostPort | undefined {
    return this.brokers.get(nodeId);
  }

  /** Every broker seen, for when the bootstrap addresses do not answer. */
  brokerAddresses(): HostPort[] {
    return [...this.brokers.values()];
  }

  /** The controller's node id; -1 while unknown (or when the upstream names none). */
  get controller(): number {
    return this.controllerId;
  }

  /** The partition's leader; undefined while unknown. */
  leader(topic: string, partition: number): PartitionLeader | undefined {
    return this.topics.get(topic)?.partitions.get(partition);
  }

  /** The topic's id; undefined while unknown or when the upstream has no topic ids. */
  topicId(topic: string): string | undefined {
    const id = this.topics.get(topic)?.topicId;
    return id === undefined || id === ZERO_UUID ? undefined : id;
  }

  /** After a stale-metadata error from the leader: the next use asks Metadata again. */
  forgetLeader(topic: string, partition: number): void {
    this.topics.get(topic)?.partitions.delete(partition);
  }

  /** After NOT_CONTROLLER: the next controller() asks Metadata again. */
  forgetController(): void {
    this.controllerId = -1;
  }
}
