/**
 * What the engine reports about itself: per partition where indexing and cleaning stand, and
 * the cleaner's figures (the ones Kafka exports, plus ours), for `kcompact status`/`inspect`
 * and the metrics. The per-partition figures come from the index file alone, so that a
 * read-only look at a stopped proxy's data directory reports them the same way.
 */
import type { PartitionStatus, PartitionDetail, EngineStatus } from '../api/engine-reports.js';
import type { Cleaner } from '../cleaner/cleaner.js';
import type { CarrierGroup } from '../election/carrier-group.js';
import type { CleanableRange } from '../cleaner/cleanable-range.js';
import type { Indexer } from '../indexer/indexer.js';
import type { PartitionDemand } from '../indexer/partition-demand.js';
import type { PartitionStore } from '../store/partition-store.js';
import type { StoreRegistry } from '../store/store-registry.js';
import { partitionKey } from '../api/partition-key.js';
import type { TopicPolicy } from '../api/topic-policy.js';
import { carryCapacity, liveBytes, type CarriedPartition, type CarryCapacity } from '../api/carry-capacity.js';

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
const openStores = (registry: StoreRegistry) => [...registry.all()].filter((store) => store.isOpen);

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
