/**
 * What the engine reports about itself: per partition where indexing and cleaning stand, and
 * the cleaner's figures (the ones Kafka exports, plus ours), for `kcompact status`/`inspect`
 * and the metrics. The per-partition figures come from the index file alone, so that a
 * read-only look at a stopped proxy's data directory reports them the same way.
 */
import type { Cleaner, CleanerStats } from '../cleaner/cleaner.js';
import type { CarrierGroup, CarrierGroupStatus } from '../election/carrier-group.js';
import type { CleanableRange } from '../cleaner/cleanable-range.js';
import type { Indexer } from '../indexer/indexer.js';
import type { PartitionDemand } from '../indexer/partition-demand.js';
import type { PartitionStore } from '../index/partition-store.js';
import type { StoreRegistry } from '../index/store-registry.js';
import { partitionKey } from '../partition-key.js';
import type { TopicPolicy } from '../policy.js';
import { carryCapacity, liveBytes, type CarriedPartition, type CarryCapacity } from '../carry/carry-capacity.js';

export interface PartitionStatus {
  topic: string;
  partition: number;
  topicId: string;
  /** Upstream leader being fetched from (-1: unknown now). */
  leader: number;
  /** The next offset to index; highWatermark - nextOffset is how far indexing lags. */
  nextOffset: number;
  highWatermark: number;
  lastStableOffset: number;
  logStartOffset: number;
  /** The cleaner's first dirty offset (what the index view calls cleanedUpTo). */
  cleanedUpTo: number;
  /** Offsets the index holds (survivors below cleanedUpTo plus everything above). */
  indexedRecords: number;
  dirtyRatio: number;
  tombstonesPending: number;
  lastCleanMs: number;
  /** The last carry pass this replica's index read whole (whoever carried it): its id, -1 before any. */
  lastPass: number;
  /** When that pass wrote its copies (epoch ms, as the store stamped it; -1 before any). */
  lastPassMs: number;
  /** Whether this replica carries the partition (the carrier group's assignment). */
  carried: boolean;
  /** When a client of this replica last used the partition (epoch ms; -1: none has, it is indexed only because this replica carries it). */
  usedMs: number;
  uncleanable: boolean;
  lastError?: string;
}

/** A partition looked at closely (`kcompact inspect`): costs a count over the cleaned part. */
export interface PartitionDetail extends PartitionStatus {
  /** Offsets kept below cleanedUpTo: what a reader of the cleaned part sees. */
  survivors: number;
  /** Where the cleanable range ends now (the active segment, the last stable offset, min.compaction.lag.ms). */
  firstUncleanable: number;
  cleanBytes: number;
  cleanableBytes: number;
  /** Virtual segments, the active one included. */
  segments: number;
  /** How the index compares keys (the keyIdentity setting it was built with); '' before any key. */
  keyIdentity: string;
}

export interface EngineStatus {
  partitions: PartitionStatus[];
  cleaner: CleanerStats;
  /** This replica's membership of the carrier group, where it joins one. */
  carrierGroup?: CarrierGroupStatus;
  /** Bytes of record batches the indexer read from the store: to index them, and to find new indexes' last carry pass. */
  reads?: { indexBytes: number; locateBytes: number };
  /** Whether carryBytesPerSecond can rewrite what this replica carries within the carry ages; absent when unbounded or nothing is carried. */
  carryCapacity?: CarryCapacity;
}

/** What only a running engine knows of a partition. */
export interface LiveState {
  leader: number;
  uncleanable: boolean;
  carried: boolean;
  usedMs: number;
  lastError?: string;
}

export const OFFLINE: LiveState = { leader: -1, uncleanable: false, carried: false, usedMs: -1 };

export function partitionStatus(store: PartitionStore, range: CleanableRange | undefined, live: LiveState): PartitionStatus {
  const cp = store.checkpoint;
  return {
    topic: store.id.topic,
    partition: store.id.partition,
    topicId: cp.topicId,
    leader: live.leader,
    nextOffset: cp.nextOffset,
    highWatermark: cp.highWatermark,
    lastStableOffset: cp.lastStableOffset,
    logStartOffset: cp.logStartOffset,
    cleanedUpTo: cp.firstDirty,
    indexedRecords: store.rowCount,
    dirtyRatio: range?.dirtyRatio ?? 0,
    tombstonesPending: store.tombstonesPending(),
    lastCleanMs: cp.lastCleanMs,
    lastPass: store.carry.pass,
    lastPassMs: store.carry.passTime,
    carried: live.carried,
    usedMs: live.usedMs,
    uncleanable: live.uncleanable,
    ...(live.lastError ? { lastError: live.lastError } : {}),
  };
}

export function partitionDetail(store: PartitionStore, range: CleanableRange | undefined, live: LiveState): PartitionDetail {
  return {
    ...partitionStatus(store, range, live),
    survivors: store.offsetsBelowStats(store.checkpoint.firstDirty).count,
    firstUncleanable: range?.firstUncleanable ?? store.checkpoint.firstDirty,
    cleanBytes: store.checkpoint.cleanBytes,
    cleanableBytes: range?.cleanableBytes ?? 0,
    segments: store.segments.length,
    keyIdentity: store.keyIdentity,
  };
}

export function byTopicPartition(a: { topic: string; partition: number }, b: { topic: string; partition: number }): number {
  return a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1;
}

/** What the running engine knows beyond the index files: who carries what, which partitions clients use. */
export interface EngineParts {
  indexer: Indexer;
  cleaner: Cleaner;
  group?: CarrierGroup;
  demand?: PartitionDemand;
  /** The policies the engine works with (their carry ages), and the carryBytesPerSecond its passes share. */
  policies?: () => ReadonlyMap<string, TopicPolicy>;
  carryBytesPerSecond?: number;
}

function liveStates({ indexer, cleaner, group, demand }: EngineParts): (store: PartitionStore) => LiveState {
  const tails = new Map(indexer.status().map((t) => [partitionKey(t.topic, t.partition), t]));
  const uncleanable = new Set(cleaner.status().uncleanable.map((u) => partitionKey(u.topic, u.partition)));
  return (store) => {
    const { topic, partition } = store.id;
    const key = partitionKey(topic, partition);
    const tail = tails.get(key);
    return {
      leader: tail?.leader ?? -1,
      uncleanable: uncleanable.has(key),
      carried: group?.holds(topic, partition) ?? false,
      usedMs: demand?.lastUsed(topic, partition) ?? -1,
      ...(tail?.lastError ? { lastError: tail.lastError } : {}),
    };
  };
}

/** The open indexes: one whose file failed under it is closed until the indexer reopens it. */
const openStores = (registry: StoreRegistry) => [...registry.all()].filter((store) => store.db.open);

export function engineStatus(registry: StoreRegistry, parts: EngineParts): EngineStatus {
  const live = liveStates(parts);
  const { cleaner, group } = parts;
  const stores = openStores(registry);
  const partitions = stores.map((store) => partitionStatus(store, cleaner.rangeOf(store), live(store)));
  const capacity = capacityOf(stores, parts);
  return {
    partitions: partitions.sort(byTopicPartition),
    cleaner: cleaner.status(),
    reads: { ...parts.indexer.reads },
    ...(group && { carrierGroup: group.status() }),
    ...(capacity && { carryCapacity: capacity }),
  };
}

/** The partitions this replica carries on a store that caps their retention, against the rate their passes share. */
function capacityOf(stores: readonly PartitionStore[], { group, policies, carryBytesPerSecond }: EngineParts): CarryCapacity | undefined {
  if (!group || !policies || !carryBytesPerSecond || carryBytesPerSecond <= 0) return undefined;
  const known = policies();
  const carried: CarriedPartition[] = [];
  for (const store of stores) {
    const { topic, partition } = store.id;
    const carryAfterMs = known.get(topic)?.carryAfterMs ?? -1;
    if (carryAfterMs > 0 && group.holds(topic, partition)) carried.push({ topic, partition, liveBytes: liveBytes(store), carryAfterMs });
  }
  return carryCapacity(carried.sort(byTopicPartition), carryBytesPerSecond);
}

/** Every indexed partition of the topic, in detail. */
export function inspectTopic(registry: StoreRegistry, parts: EngineParts, topic: string): PartitionDetail[] {
  const live = liveStates(parts);
  const partitions = openStores(registry)
    .filter((s) => s.id.topic === topic)
    .map((store) => partitionDetail(store, parts.cleaner.rangeOf(store), live(store)));
  return partitions.sort(byTopicPartition);
}
