/**
 * What the engine reports about itself: per partition where indexing and cleaning stand, and
 * the cleaner's figures (the ones Kafka exports, plus ours), for `kcompact status`/`inspect`
 * and the metrics. The per-partition figures come from the index file alone, so that a
 * read-only look at a stopped proxy's data directory reports them the same way.
 */
import type { Cleaner, CleanerStats } from '../cleaner/cleaner.js';
import type { CleanableRange } from '../cleaner/cleanable-range.js';
import type { Indexer } from '../indexer/indexer.js';
import type { PartitionStore } from '../index/partition-store.js';
import type { StoreRegistry } from '../index/store-registry.js';

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
}

/** What only a running engine knows of a partition. */
export interface LiveState {
  leader: number;
  uncleanable: boolean;
  lastError?: string;
}

export const OFFLINE: LiveState = { leader: -1, uncleanable: false };

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

export function byTopicPartition(a: PartitionStatus, b: PartitionStatus): number {
  return a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1;
}

function liveStates(indexer: Indexer, cleaner: Cleaner): (store: PartitionStore) => LiveState {
  const tails = new Map(indexer.status().map((t) => [`${t.partition}\u0000${t.topic}`, t]));
  const uncleanable = new Set(cleaner.status().uncleanable.map((u) => `${u.partition}\u0000${u.topic}`));
  return (store) => {
    const key = `${store.id.partition}\u0000${store.id.topic}`;
    const tail = tails.get(key);
    return { leader: tail?.leader ?? -1, uncleanable: uncleanable.has(key), ...(tail?.lastError ? { lastError: tail.lastError } : {}) };
  };
}

/** The open indexes: one whose file failed under it is closed until the indexer reopens it. */
const openStores = (registry: StoreRegistry) => [...registry.all()].filter((store) => store.db.open);

export function engineStatus(registry: StoreRegistry, indexer: Indexer, cleaner: Cleaner): EngineStatus {
  const live = liveStates(indexer, cleaner);
  const partitions = openStores(registry).map((store) => partitionStatus(store, cleaner.rangeOf(store), live(store)));
  return { partitions: partitions.sort(byTopicPartition), cleaner: cleaner.status() };
}

/** Every indexed partition of the topic, in detail. */
export function inspectTopic(registry: StoreRegistry, indexer: Indexer, cleaner: Cleaner, topic: string): PartitionDetail[] {
  const live = liveStates(indexer, cleaner);
  const partitions = openStores(registry)
    .filter((s) => s.id.topic === topic)
    .map((store) => partitionDetail(store, cleaner.rangeOf(store), live(store)));
  return partitions.sort(byTopicPartition);
}
