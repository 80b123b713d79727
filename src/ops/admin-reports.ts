/**
 * What the admin verbs report, as the management endpoint answers it and as `kcompact status` /
 * `inspect` rebuild it from a stopped proxy's data directory: one shape for both, so the CLI
 * prints either the same way.
 */
import type { CarryCapacity } from '../engine/api/carry-capacity.js';
import type { CleanerStats, CarrierGroupStatus, PartitionDetail, PartitionStatus } from '../engine/api/engine-reports.js';

/** Where a report came from: the running proxy, or its index files read while it was down. */
export type ReportSource = 'proxy' | 'data-dir';

export interface BrokerListener {
  nodeId: number;
  /** The local address this proxy listens on for the broker. */
  listen: string;
  /** The address clients are told (advertised host, same port). */
  advertised: string;
  /** The upstream broker behind it. */
  upstream: string;
}

export interface Listeners {
  bootstrap: string;
  advertisedHost: string;
  brokers: BrokerListener[];
  /** The metrics listener (probes, /metrics). */
  management: string;
  /** The admin listener, and whether it requires a bearer token. */
  admin?: { address: string; token: boolean };
  connections: number;
}

export interface TopicSummary {
  topic: string;
  /** Partitions with an index (0 until the indexer has found the topic upstream). */
  partitions: number;
  indexedRecords: number;
  /** Offsets up to the last stable offsets not yet indexed, over all partitions. */
  indexLag: number;
  maxDirtyRatio: number;
  tombstonesPending: number;
  /** The most recent clean of any partition (epoch ms, 0: never). */
  lastCleanMs: number;
  uncleanablePartitions: number;
}

export interface StatusReport {
  source: ReportSource;
  dataDir?: string;
  /** Only a running proxy knows these. */
  upstream?: string[];
  listeners?: Listeners;
  cleaner?: CleanerStats & { backoffMs: number };
  /** This replica in the carrier group; absent where it takes no part in carrying. */
  carrierGroup?: CarrierGroupStatus;
  /** Bytes the indexer read from the store (EngineStatus.reads). */
  reads?: { indexBytes: number; locateBytes: number };
  /** Whether carryBytesPerSecond keeps what this replica carries (EngineStatus.carryCapacity); a running proxy whose rate is bounded only. */
  carryCapacity?: CarryCapacity;
  compactedTopics: TopicSummary[];
  partitions: PartitionStatus[];
}

export interface InspectReport {
  source: ReportSource;
  topic: string;
  /** The topic's compaction configs in force, by Kafka's names (a running proxy only). */
  configs?: Record<string, string>;
  partitions: PartitionDetail[];
}

/** One summary per topic named, from the partitions' statuses. */
export function summarizeTopics(topics: readonly string[], partitions: readonly PartitionStatus[]): TopicSummary[] {
  return [...topics].sort().map((topic) => {
    const mine = partitions.filter((p) => p.topic === topic);
    return {
      topic,
      partitions: mine.length,
      indexedRecords: mine.reduce((n, p) => n + p.indexedRecords, 0),
      indexLag: mine.reduce((n, p) => n + Math.max(0, p.lastStableOffset - p.nextOffset), 0),
      maxDirtyRatio: mine.reduce((m, p) => Math.max(m, p.dirtyRatio), 0),
      tombstonesPending: mine.reduce((n, p) => n + p.tombstonesPending, 0),
      lastCleanMs: mine.reduce((m, p) => Math.max(m, p.lastCleanMs), 0),
      uncleanablePartitions: mine.filter((p) => p.uncleanable).length,
    };
  });
}
