/**
 * What the engine reports about itself: per partition where indexing and cleaning stand, and
 * the cleaner's figures (the ones Kafka exports, plus ours), for `kcompact status`/`inspect`
 * and the metrics.
 */
import type { Cleaner, CleanerStats } from '../cleaner/cleaner.js';
import type { Indexer } from '../indexer/indexer.js';
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

export interface EngineStatus {
  partitions: PartitionStatus[];
  cleaner: CleanerStats;
}

export function engineStatus(registry: StoreRegistry, indexer: Indexer, cleaner: Cleaner): EngineStatus {
  const tails = new Map(indexer.status().map((t) => [`${t.partition}\u0000${t.topic}`, t]));
  const cleanerStats = cleaner.status();
  const uncleanable = new Set(cleanerStats.uncleanable.map((u) => `${u.partition}\u0000${u.topic}`));
  const partitions: PartitionStatus[] = [];
  for (const store of registry.all()) {
    const key = `${store.id.partition}\u0000${store.id.topic}`;
    const cp = store.checkpoint;
    const tail = tails.get(key);
    partitions.push({
      topic: store.id.topic,
      partition: store.id.partition,
      topicId: cp.topicId,
      leader: tail?.leader ?? -1,
      nextOffset: cp.nextOffset,
      highWatermark: cp.highWatermark,
      lastStableOffset: cp.lastStableOffset,
      logStartOffset: cp.logStartOffset,
      cleanedUpTo: cp.firstDirty,
      indexedRecords: store.rowCount,
      dirtyRatio: cleaner.rangeOf(store)?.dirtyRatio ?? 0,
      tombstonesPending: store.tombstonesPending(),
      lastCleanMs: cp.lastCleanMs,
      uncleanable: uncleanable.has(key),
      ...(tail?.lastError ? { lastError: tail.lastError } : {}),
    });
  }
  partitions.sort((a, b) => (a.topic === b.topic ? a.partition - b.partition : a.topic < b.topic ? -1 : 1));
  return { partitions, cleaner: cleanerStats };
}
