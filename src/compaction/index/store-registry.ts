/**
 * The open partition indexes of the worker, and the one place that publishes survivor
 * snapshots: whoever changes what survives (the cleaner, a moved log start, a reset) calls
 * publish, and the main thread's view follows.
 */
import type { Logger } from '../../ops/log.js';
import { listPartitionIndexes, partitionIndexFile, removeTopicIndex } from './index-files.js';
import { PartitionStore, type PartitionId } from './partition-store.js';
import { isStorageFailure, storageFix } from './storage-errors.js';
import { buildSnapshot, type SurvivorSnapshot } from './survivor-set.js';

export type SnapshotSink = (id: PartitionId, snapshot: SurvivorSnapshot | null, transfer: ArrayBuffer[]) => void;

/**
 * What all partition files share: SQLite's page cache (memory) and the write-ahead log each
 * gathers before a checkpoint (disk). Each file gets an equal slice within these bounds; with
 * a thousand partitions the floors decide (64 MiB of cache, 512 MiB of WAL at most).
 */
const CACHE_BUDGET_KIB = 32 * 1024;
const CACHE_MIN_KIB = 64;
const CACHE_MAX_KIB = 16 * 1024;
const WAL_BUDGET_KIB = 512 * 1024;
const WAL_MIN_KIB = 512;
/** SQLite's own default: a checkpoint every 1000 pages. */
const WAL_MAX_KIB = 4 * 1024;

function keyOf(topic: string, partition: number): string {
  return `${partition}\u0000${topic}`;
}

export class StoreRegistry {
  private readonly stores = new Map<string, PartitionStore>();
  private cacheKiB = 0;
  private walKiB = 0;

  constructor(
    private readonly dataDir: string,
    private readonly log: Logger,
    private readonly sink: SnapshotSink,
  ) {}

  /**
   * Opens every index on disk and publishes its survivors (a restart serves at once). One the
   * storage will not let open now is left as it is, its partition served unfiltered, until the
   * indexer opens it again.
   */
  openExisting(): void {
    for (const id of listPartitionIndexes(this.dataDir)) {
      try {
        this.ensure(id.topic, id.partition);
      } catch (err) {
        if (!isStorageFailure(err)) throw err;
        const file = this.fileOf(id.topic, id.partition);
        this.log.error('cannot open a partition index; the partition is served unfiltered until it opens', {
          ...id,
          file,
          err,
          fix: storageFix(err, file),
        });
      }
    }
  }

  get(topic: string, partition: number): PartitionStore | undefined {
    return this.stores.get(keyOf(topic, partition));
  }

  all(): IterableIterator<PartitionStore> {
    return this.stores.values();
  }

  topics(): Set<string> {
    return new Set([...this.stores.values()].map((s) => s.id.topic));
  }

  /** Where the index file of a partition lives. */
  fileOf(topic: string, partition: number): string {
    return partitionIndexFile(this.dataDir, topic, partition);
  }

  /** The open index of a partition, opening or creating its file first. */
  ensure(topic: string, partition: number): PartitionStore {
    const key = keyOf(topic, partition);
    const known = this.stores.get(key);
    if (known) return known;
    const { store, rebuiltBecause } = PartitionStore.open(partitionIndexFile(this.dataDir, topic, partition), { topic, partition });
    if (rebuiltBecause) this.log.warn('index file unusable, rebuilding it from the upstream', { topic, partition, reason: rebuiltBecause });
    this.stores.set(key, store);
    store.setCacheKiB(this.cacheKiB || CACHE_MAX_KIB);
    store.setWalKiB(this.walKiB || WAL_MAX_KIB);
    this.balance();
    this.publish(store);
    return store;
  }

  /** Throws away a partition's index and starts an empty one (new topic id, corruption, truncation). */
  reset(store: PartitionStore, why: string): PartitionStore {
    const { topic, partition } = store.id;
    this.log.warn('resetting partition index', { topic, partition, reason: why });
    store.destroy();
    this.stores.delete(keyOf(topic, partition));
    // Until the new file is there (the storage may refuse it), the partition is served unfiltered.
    this.sink(store.id, null, []);
    return this.ensure(topic, partition);
  }

  /** Closes a partition's file and opens it again: its in-memory state follows what was committed. */
  reopen(store: PartitionStore): PartitionStore {
    store.close();
    this.stores.delete(keyOf(store.id.topic, store.id.partition));
    return this.ensure(store.id.topic, store.id.partition);
  }

  /** Closes and deletes the indexes of a topic. */
  dropTopic(topic: string): void {
    for (const [key, store] of this.stores) {
      if (store.id.topic !== topic) continue;
      store.close();
      this.stores.delete(key);
      this.sink(store.id, null, []);
    }
    removeTopicIndex(this.dataDir, topic);
    this.balance();
  }

  /** Sends the partition's current survivors to the main thread. */
  publish(store: PartitionStore): void {
    const upTo = store.checkpoint.firstDirty;
    const { count, min, max } = store.offsetsBelowStats(upTo);
    const snapshot = buildSnapshot(upTo, count, min, max, (visit) => store.eachOffsetBelow(upTo, visit));
    this.sink(store.id, snapshot, [snapshot.data]);
  }

  closeAll(): void {
    for (const store of this.stores.values()) store.close();
    this.stores.clear();
  }

  /** New files get the current slices; all are resized only when a slice moves by a quarter. */
  private balance(): void {
    const n = Math.max(1, this.stores.size);
    const cache = Math.min(CACHE_MAX_KIB, Math.max(CACHE_MIN_KIB, CACHE_BUDGET_KIB / n));
    if (Math.abs(cache - this.cacheKiB) > this.cacheKiB / 4) {
      this.cacheKiB = cache;
      for (const store of this.stores.values()) store.setCacheKiB(cache);
    }
    const wal = Math.min(WAL_MAX_KIB, Math.max(WAL_MIN_KIB, WAL_BUDGET_KIB / n));
    if (Math.abs(wal - this.walKiB) > this.walKiB / 4) {
      this.walKiB = wal;
      for (const store of this.stores.values()) store.setWalKiB(wal);
    }
  }
}
