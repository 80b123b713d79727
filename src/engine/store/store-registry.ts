/**
 * The worker's open index files (one per topic) and the partition indexes in them, and the one
 * place that publishes survivor snapshots: whoever changes what survives (the cleaner, a moved
 * log start, a reset) calls publish, and the main thread's view follows.
 */
import type { Logger } from '../../common/log.js';
import { listTopicIndexes, removeEarlierLayouts, removeIndexFile, topicIndexFile } from './index-files.js';
import { PartitionStore, type PartitionId } from './partition-store.js';
import { isStorageFailure, storageFix } from '../../common/storage-errors.js';
import type { CarriedSnapshot, JudgedEnd, LogEnd } from '../api/index-view.js';
import { buildSnapshot, type SurvivorSnapshot } from '../api/survivor-set.js';
import { TopicIndex } from './topic-index.js';
import { partitionKey } from '../api/partition-key.js';

export type SnapshotSink = (id: PartitionId, snapshot: SurvivorSnapshot | null, transfer: ArrayBuffer[]) => void;
export type EndSink = (id: PartitionId, end: LogEnd) => void;

/**
 * What all index files share: SQLite's page cache (memory) and the write-ahead log each gathers
 * before a checkpoint (disk). Each file (one per topic) gets an equal slice within these bounds.
 */
const CACHE_BUDGET_KIB = 32 * 1024;
const CACHE_MIN_KIB = 64;
const CACHE_MAX_KIB = 16 * 1024;
const WAL_BUDGET_KIB = 512 * 1024;
const WAL_MIN_KIB = 512;
/** SQLite's own default: a checkpoint every 1000 pages. */
const WAL_MAX_KIB = 4 * 1024;

export class StoreRegistry {
  private readonly indexes = new Map<string, TopicIndex>();
  private readonly stores = new Map<string, PartitionStore>();
  private cacheKiB = 0;
  private walKiB = 0;
  /** The last LogEnd sent of each partition, so that only a change is sent. */
  private readonly ends = new Map<string, LogEnd>();

  constructor(
    private readonly dataDir: string,
    private readonly log: Logger,
    private readonly sink: SnapshotSink,
    private readonly endSink: EndSink = () => undefined,
  ) {}

  /**
   * Opens every index on disk and publishes its partitions' survivors (a restart serves at
   * once). A file the storage will not let open now is left as it is, its partitions served
   * unfiltered, until the indexer opens it again. Files of an earlier layout are removed: the
   * indexer rebuilds them from the upstream.
   */
  openExisting(): void {
    for (const old of removeEarlierLayouts(this.dataDir)) {
      this.log.warn('removed a partition index of an earlier layout; the indexer rebuilds it from the upstream', { path: old });
    }
    for (const topic of listTopicIndexes(this.dataDir)) {
      try {
        const index = this.indexOf(topic);
        for (const partition of index.partitions()) this.ensure(topic, partition);
      } catch (err) {
        if (!isStorageFailure(err)) throw err;
        const file = this.fileOf(topic);
        this.log.error('cannot open a topic index; its partitions are served unfiltered until it opens', { topic, file, err, fix: storageFix(err, file) });
      }
    }
  }

  get(topic: string, partition: number): PartitionStore | undefined {
    return this.stores.get(partitionKey(topic, partition));
  }

  all(): IterableIterator<PartitionStore> {
    return this.stores.values();
  }

  topics(): Set<string> {
    return new Set([...this.stores.values()].map((s) => s.id.topic));
  }

  /** Where the index file of a topic lives. */
  fileOf(topic: string): string {
    return topicIndexFile(this.dataDir, topic);
  }

  /** The open index of a partition, opening or creating its topic's file first. */
  ensure(topic: string, partition: number): PartitionStore {
    const key = partitionKey(topic, partition);
    const known = this.stores.get(key);
    if (known?.isOpen) return known;
    const { store, rebuiltBecause } = PartitionStore.in(this.indexOf(topic), partition);
    if (rebuiltBecause) this.log.warn('partition index unusable, rebuilding it from the upstream', { topic, partition, reason: rebuiltBecause });
    this.stores.set(key, store);
    this.publish(store);
    return store;
  }

  /** Throws away a partition's index and starts it empty (new topic id, new key identity, truncation). */
  reset(store: PartitionStore, why: string): PartitionStore {
    const { topic, partition } = store.id;
    this.log.warn('resetting partition index', { topic, partition, reason: why });
    // Until its rows are gone (the storage may refuse), the partition is served unfiltered.
    this.withdraw(store.id);
    store.clear();
    this.publish(store);
    return store;
  }

  /**
   * The topic's file is damaged (SQLite found it corrupt): it is deleted and every partition in
   * it starts empty, to be indexed again from the upstream.
   */
  rebuildFile(store: PartitionStore, why: string): PartitionStore {
    const { topic, partition } = store.id;
    const current = this.get(topic, partition);
    if (current !== store && current?.isOpen) return current;
    const partitions = this.closeTopic(topic);
    this.log.warn('index file damaged, rebuilding every partition in it from the upstream', { topic, partition, file: store.file, partitions, reason: why });
    // Until the rebuilt index catches up, the partitions are served unfiltered.
    for (const p of partitions) this.withdraw({ topic, partition: p });
    removeIndexFile(this.fileOf(topic));
    return this.openAgain(topic, partitions, partition);
  }

  /**
   * Reads a partition's state back from its file, reopening the file when it was closed: its
   * in-memory state follows what was committed. Its survivors stay published meanwhile: the
   * file holds them.
   */
  reopen(store: PartitionStore): PartitionStore {
    const { topic, partition } = store.id;
    const current = this.get(topic, partition);
    if (current !== store && current?.isOpen) return current;
    if (store.isOpen) {
      store.reload();
      return store;
    }
    const partitions = this.closeTopic(topic);
    return this.openAgain(topic, partitions, partition);
  }

  /** Closes and deletes the index of a topic. */
  dropTopic(topic: string): void {
    for (const partition of this.closeTopic(topic)) this.withdraw({ topic, partition });
    removeIndexFile(this.fileOf(topic));
    this.balance();
  }

  /**
   * Lets a partition's index go (no client here uses it, and this replica does not carry it):
   * its survivors are withdrawn, its rows deleted, and its topic's file with them once the file
   * holds no other partition.
   */
  dropPartition(topic: string, partition: number): void {
    const key = partitionKey(topic, partition);
    const store = this.stores.get(key);
    if (!store) return;
    // The topic's last partition here: its whole file goes (dropTopic withdraws the survivors too).
    if ([...this.stores.values()].every((s) => s === store || s.id.topic !== topic)) {
      this.dropTopic(topic);
      return;
    }
    this.withdraw(store.id);
    this.stores.delete(key);
    if (store.isOpen) store.remove();
  }

  /**
   * Sends the main thread the last whole pass the store was found to hold, served as the store
   * holds it, until the index, read from the store for the first time, reaches `until`: its own
   * snapshots wait till then (publish), so that no read is answered from an index halfway there.
   */
  publishAsStored(store: PartitionStore, carried: CarriedSnapshot, until: number): void {
    store.asStoredUntil = until;
    const snapshot = buildSnapshot(0, 0, 0, 0, () => undefined);
    snapshot.carried = carried;
    this.sink(store.id, snapshot, [snapshot.data, carried.marks.buffer as ArrayBuffer]);
  }

  /** Sends the partition's current survivors to the main thread. */
  publish(store: PartitionStore): void {
    if (store.asStoredUntil > store.checkpoint.nextOffset) return;
    store.asStoredUntil = 0;
    const upTo = store.checkpoint.firstDirty;
    const { count, min, max } = store.offsetsBelowStats(upTo);
    const snapshot = buildSnapshot(upTo, count, min, max, (visit) => store.eachOffsetBelow(upTo, visit));
    const carried = store.carriedSnapshot();
    if (carried) snapshot.carried = carried;
    this.sink(store.id, snapshot, carried ? [snapshot.data, carried.marks.buffer as ArrayBuffer] : [snapshot.data]);
    this.publishEnd(store);
  }

  /** Sends the main thread where the partition's log ends for clients, when that moved. */
  publishEnd(store: PartitionStore): void {
    const key = partitionKey(store.id.topic, store.id.partition);
    const indexedTo = store.checkpoint.nextOffset;
    const end: LogEnd = { indexedTo, visibleEnd: store.visibleEnd() };
    if (store.conditional) {
      const unjudged = store.firstUnjudged;
      const horizon = store.checkpoint.firstDirty;
      end.judged = { to: unjudged >= 0 ? unjudged : indexedTo, voids: store.voidsFrom(horizon), voidsFrom: horizon };
    }
    const last = this.ends.get(key);
    if (last && last.indexedTo === end.indexedTo && last.visibleEnd === end.visibleEnd && sameJudged(last.judged, end.judged)) return;
    this.ends.set(key, end);
    this.endSink(store.id, end);
  }

  /** The main thread serves the partition unfiltered until its index publishes again. */
  private withdraw(id: PartitionId): void {
    this.ends.delete(partitionKey(id.topic, id.partition));
    this.sink(id, null, []);
  }

  closeAll(): void {
    for (const index of this.indexes.values()) index.close();
    this.indexes.clear();
    this.stores.clear();
  }

  /** The open file of a topic, opening (or creating) it first. */
  private indexOf(topic: string): TopicIndex {
    const known = this.indexes.get(topic);
    if (known?.open) return known;
    const { index, rebuiltBecause } = TopicIndex.open(this.fileOf(topic), topic);
    if (rebuiltBecause) this.log.warn('index file unusable, rebuilding its partitions from the upstream', { topic, file: index.file, reason: rebuiltBecause });
    this.indexes.set(topic, index);
    index.setCacheKiB(this.cacheKiB || CACHE_MAX_KIB);
    index.setWalKiB(this.walKiB || WAL_MAX_KIB);
    this.balance();
    return index;
  }

  /** Opens a topic's file again for the partitions it had; returns the index of `partition`. */
  private openAgain(topic: string, partitions: number[], partition: number): PartitionStore {
    for (const p of partitions) if (p !== partition) this.ensure(topic, p);
    return this.ensure(topic, partition);
  }

  /** Closes a topic's file and forgets its partitions; returns them. */
  private closeTopic(topic: string): number[] {
    this.indexes.get(topic)?.close();
    this.indexes.delete(topic);
    const partitions: number[] = [];
    for (const [key, store] of this.stores) {
      if (store.id.topic !== topic) continue;
      this.stores.delete(key);
      partitions.push(store.id.partition);
    }
    return partitions;
  }

  /** New files get the current slices; all are resized only when a slice moves by a quarter. */
  private balance(): void {
    const n = Math.max(1, this.indexes.size);
    const cache = Math.min(CACHE_MAX_KIB, Math.max(CACHE_MIN_KIB, CACHE_BUDGET_KIB / n));
    if (Math.abs(cache - this.cacheKiB) > this.cacheKiB / 4) {
      this.cacheKiB = cache;
      for (const index of this.indexes.values()) index.setCacheKiB(cache);
    }
    const wal = Math.min(WAL_MAX_KIB, Math.max(WAL_MIN_KIB, WAL_BUDGET_KIB / n));
    if (Math.abs(wal - this.walKiB) > this.walKiB / 4) {
      this.walKiB = wal;
      for (const index of this.indexes.values()) index.setWalKiB(wal);
    }
  }
}

function sameJudged(a: JudgedEnd | undefined, b: JudgedEnd | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.to === b.to && a.voids.length === b.voids.length && a.voids.every((v, i) => v === b.voids[i]);
}
