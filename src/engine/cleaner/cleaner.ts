/**
 * When to clean what: Kafka's LogCleaner thread loop over the partition indexes. Each round it
 * cleans the dirtiest cleanable partition, then the next, until none qualifies (each partition
 * once), then applies compact,delete retention; it sleeps the backoff (log.cleaner.backoff.ms)
 * after a round that cleaned nothing, and starts the next one at once otherwise. compactNow()
 * cleans the asked partitions whether or not they qualify (an empty dirty part still lets
 * expired tombstones and markers go). A partition whose clean fails is marked uncleanable, as
 * in Kafka, until the engine restarts or its index is rebuilt; unless the storage failed it (a
 * full disk): that clean is tried again next round, and a damaged file is rebuilt.
 *
 * compact,delete retention moves the log start: the cleaner asks the upstream to delete the
 * records (DeleteRecords, so every replica and every client agrees, and storage is freed) and
 * drops them from the index either way, so that reads through the proxy skip them even on a
 * store without DeleteRecords.
 */
import type { CleanerStats, CleanReport, CarryMargin } from '../api/engine-reports.js';
import type { Logger } from '../../common/log.js';
import type { Carrier } from '../carry/carrier.js';
import type { TopicPolicy } from '../api/topic-policy.js';
import type { CleanerOptions } from '../api/engine-options.js';
import type { PartitionStore } from '../store/partition-store.js';
import type { Segment } from '../store/segment-roller.js';
import type { StoreRegistry } from '../store/store-registry.js';
import { isDamagedFile, isStorageFailure, storageFix } from '../../common/storage-errors.js';
import { Wakeup } from '../../common/clock.js';
import { cleanableRange, needsCleaning, type CleanableRange } from './cleanable-range.js';
import { cleanPartition } from './clean-partition.js';
import { retentionStart } from './retention.js';
import { carryMarginMs } from '../carry/carry-age.js';

export interface CleanerDeps extends CleanerOptions {
  registry: StoreRegistry;
  policies: () => ReadonlyMap<string, TopicPolicy>;
  /** Asks the upstream to move the log start; resolves false when it cannot (logged by the caller). */
  deleteRecords: (topic: string, partition: number, offset: number) => Promise<boolean>;
  log: Logger;
  clock?: () => number;
  /** Carries each cleaned partition's survivors forward in the store (docs/carrying.md), when this replica does. */
  carrier?: Carrier;
}

function idOf(store: PartitionStore): string {
  return `${store.id.topic}-${store.id.partition}`;
}

/**
 * Most dirty offsets one pass takes. Kafka's dedupe buffer bounds a pass the same way (its map
 * holds ~5M keys by default; a pass that fills it ends there and the next one goes on), and it
 * keeps the worker answering, since a pass is one SQLite transaction whose time grows with the
 * records it covers (docs/performance.md).
 */
export const MAX_DIRTY_OFFSETS_PER_PASS = 2_000_000;

/** Where a pass ends: the cleanable end, or the last segment boundary within the pass limit. */
export function cleanEnd(segments: readonly Segment[], range: CleanableRange): number {
  const full = Math.max(range.firstDirty, range.firstUncleanable);
  const limit = range.firstDirty + MAX_DIRTY_OFFSETS_PER_PASS;
  if (full <= limit) return full;
  let end = full;
  for (const s of segments) {
    if (s.base <= range.firstDirty) continue;
    if (s.base > limit && end !== full) break;
    end = s.base;
    if (s.base > limit) break;
  }
  return Math.min(end, full);
}

/** Lets the indexer's fetch answers through between two partitions' cleans. */
const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

export class Cleaner {
  private readonly wake = new Wakeup();
  private readonly now: () => number;
  private queue: Promise<unknown> = Promise.resolve();
  private loop: Promise<void> | undefined;
  private running = false;
  private readonly uncleanable = new Map<string, { topic: string; partition: number }>();
  /** Partitions whose last clean the storage failed (logged once, until one succeeds). */
  private readonly storageFailed = new Set<string>();
  private readonly stats: CleanerStats = {
    lastRunMs: 0,
    maxDirtyRatio: 0,
    maxCompactionDelayMs: 0,
    maxCleanTimeMs: 0,
    cleansTotal: 0,
    reapedTotal: 0,
    uncleanable: [],
  };

  constructor(private readonly deps: CleanerDeps) {
    this.now = deps.clock ?? Date.now;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = (async () => {
      while (this.running) {
        const report = await this.exclusive(() => this.round()).catch((err: unknown) => {
          this.deps.log.error('cleaner round failed', { err });
          return undefined;
        });
        // As Kafka's cleaner thread: the backoff only once nothing needed cleaning. A round that
        // cleaned goes again at once, after whatever compactNow() queued meanwhile.
        if (report && report.cleaned.length > 0) await yieldToLoop();
        else await this.wake.sleep(this.deps.backoffMs);
      }
    })();
  }

  async close(): Promise<void> {
    this.running = false;
    this.wake.wakeUp();
    await this.loop;
    await this.queue.catch(() => undefined);
  }

  /** Starts the next round now (partitions to carry were assigned). */
  wakeUp(): void {
    this.wake.wakeUp();
  }

  /** Cleans every indexed partition of `topic` (all compacted topics when omitted) now. */
  compactNow(topic?: string): Promise<CleanReport> {
    return this.exclusive(async () => {
      const report: CleanReport = { cleaned: [], carried: [], retention: [], failed: [] };
      const policies = this.deps.policies();
      for (const store of [...this.deps.registry.all()]) {
        const policy = policies.get(store.id.topic);
        if (!policy || !store.isOpen || (topic !== undefined && store.id.topic !== topic)) continue;
        this.uncleanable.delete(idOf(store));
        // A pass may stop short of the cleanable end (cleanEnd); on demand, go all the way.
        for (;;) {
          const range = cleanableRange(store.segments, { ...store.checkpoint, unjudgedFrom: store.firstUnjudged }, policy, this.now());
          const end = this.cleanOne(store, range, policy, report);
          await yieldToLoop();
          if (end === undefined || end >= range.firstUncleanable || !store.isOpen) break;
        }
        await this.carry(store, policy, report);
      }
      await this.applyRetention(report, topic);
      return report;
    });
  }

  /** The topic's indexes were dropped to be rebuilt: their partitions get cleaned again. */
  indexRebuilt(topic: string): void {
    for (const [id, p] of this.uncleanable) if (p.topic === topic) this.uncleanable.delete(id);
  }

  status(): CleanerStats {
    const carrier = this.deps.carrier;
    return { ...this.stats, uncleanable: [...this.uncleanable.values()], ...(carrier && { carry: { ...carrier.stats } }) };
  }

  /** The cleanable range of a partition now, for status and inspection. */
  rangeOf(store: PartitionStore): CleanableRange | undefined {
    const policy = this.deps.policies().get(store.id.topic);
    return policy ? cleanableRange(store.segments, { ...store.checkpoint, unjudgedFrom: store.firstUnjudged }, policy, this.now()) : undefined;
  }

  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async round(): Promise<CleanReport> {
    const report: CleanReport = { cleaned: [], carried: [], retention: [], failed: [] };
    this.stats.lastRunMs = this.now();
    this.stats.maxCleanTimeMs = 0;
    let first = true;
    // Each partition once a round: under steady writes a partition is dirty again by the time
    // its pass is carried, and a round that went on cleaning it would never end, holding up
    // compactNow(), aged copies and retention behind it. One whose clean the storage failed
    // stays the filthiest the same way.
    const done = new Set<string>();
    for (;;) {
      const next = this.filthiest(first, done);
      first = false;
      if (!next) break;
      done.add(idOf(next.store));
      if (this.cleanOne(next.store, next.range, next.policy, report) !== undefined) await this.carry(next.store, next.policy, report);
      await yieldToLoop();
    }
    await this.carryAged(report);
    this.stats.carryMargin = this.carryMargin();
    await this.applyRetention(report);
    return report;
  }

  /** The cleanable partition with the highest dirty ratio (Kafka's grabFilthiestCompactedLog). */
  private filthiest(recordStats: boolean, skip: ReadonlySet<string>): { store: PartitionStore; range: CleanableRange; policy: TopicPolicy } | undefined {
    const policies = this.deps.policies();
    const now = this.now();
    let best: { store: PartitionStore; range: CleanableRange; policy: TopicPolicy } | undefined;
    let maxRatio = 0;
    let maxDelay = 0;
    for (const store of this.deps.registry.all()) {
      const policy = policies.get(store.id.topic);
      if (!policy || this.uncleanable.has(idOf(store)) || skip.has(idOf(store)) || !store.isOpen) continue;
      // A clean would make the entries an index reading its first pass owes, at once, halfway
      // through: the pass's end makes them in one go. Once it has read what the store held, the
      // end may never come (a pass stopped halfway), and the clean makes them.
      if (store.keysOwed && store.behindStore) continue;
      const range = cleanableRange(store.segments, { ...store.checkpoint, unjudgedFrom: store.firstUnjudged }, policy, now);
      if (range.cleanBytes + range.cleanableBytes <= 0) continue;
      maxRatio = Math.max(maxRatio, range.dirtyRatio);
      maxDelay = Math.max(maxDelay, range.compactionDelayMs);
      if (needsCleaning(range, policy) && (!best || range.dirtyRatio > best.range.dirtyRatio)) best = { store, range, policy };
    }
    if (recordStats) {
      this.stats.maxDirtyRatio = maxRatio;
      this.stats.maxCompactionDelayMs = maxDelay;
    }
    return best;
  }

  /** Cleans one pass; returns where it ended, or undefined when it failed. */
  private cleanOne(store: PartitionStore, range: CleanableRange, policy: TopicPolicy, report: CleanReport): number | undefined {
    const { topic, partition } = store.id;
    try {
      const end = cleanEnd(store.segments, range);
      const outcome = cleanPartition(store, range.firstDirty, end, this.now(), policy.deleteRetentionMs);
      this.stats.cleansTotal++;
      this.stats.reapedTotal += outcome.removed;
      this.stats.maxCleanTimeMs = Math.max(this.stats.maxCleanTimeMs, outcome.durationMs);
      report.cleaned.push({ topic, partition, dirtyRatio: range.dirtyRatio, ...outcome });
      this.deps.log.debug('cleaned partition', { topic, partition, ...outcome });
      if (this.storageFailed.delete(idOf(store))) this.deps.log.info('cleaning resumed: the index file is writable again', { topic, partition });
      this.deps.registry.publish(store);
      // The clean and the survivor snapshot read much of the partition: the pages they leave
      // cached would stay, a full cache share per topic file, for pages ingest rarely reads.
      store.shrinkMemory();
      return end;
    } catch (err) {
      report.failed.push({ topic, partition, error: (err as Error).message });
      if (isDamagedFile(err)) {
        this.deps.registry.rebuildFile(store, `${(err as { code: string }).code} while cleaning`);
      } else if (isStorageFailure(err)) {
        this.storageFailedOnce(
          store,
          err,
          'cleaning waits for the storage of its index: reads through the proxy show the partition as before this clean (more records than a clean would leave, never fewer)',
        );
      } else {
        this.uncleanable.set(idOf(store), { topic, partition });
        this.deps.log.error('cleaning failed; partition marked uncleanable', { topic, partition, err });
      }
      return undefined;
    }
  }

  /** A pass after a clean, where this replica carries; a pass that fails is tried again in the next round (carryAged). */
  private async carry(store: PartitionStore, policy: TopicPolicy, report: CleanReport): Promise<void> {
    const carrier = this.deps.carrier;
    if (!carrier || !store.isOpen) return;
    const { topic, partition } = store.id;
    try {
      const outcome = await carrier.carry(store, policy);
      if (outcome) report.carried.push(outcome);
    } catch (err) {
      report.failed.push({ topic, partition, error: (err as Error).message });
      this.deps.log.warn('carrying survivors forward failed; the next round tries again (nothing was let go)', { topic, partition, err });
    }
  }

  /** Passes no clean asked for: copies that reached the carry age, and passes that failed after their clean. */
  private async carryAged(report: CleanReport): Promise<void> {
    if (!this.deps.carrier) return;
    const policies = this.deps.policies();
    for (const store of [...this.deps.registry.all()]) {
      const policy = policies.get(store.id.topic);
      if (policy && !this.uncleanable.has(idOf(store))) await this.carry(store, policy, report);
    }
  }

  /** The partition nearest to losing a record to the store's retention, where any store caps it. */
  private carryMargin(): CarryMargin | undefined {
    const policies = this.deps.policies();
    const now = this.now();
    let least: CarryMargin | undefined;
    for (const store of this.deps.registry.all()) {
      const policy = policies.get(store.id.topic);
      if (!policy || policy.storeRetentionMs < 0 || !store.isOpen) continue;
      const marginMs = carryMarginMs(store, policy.storeRetentionMs, now);
      if (marginMs === undefined) continue;
      const ratio = marginMs / policy.storeRetentionMs;
      if (!least || ratio < least.ratio) least = { ...store.id, marginMs, ratio };
    }
    return least;
  }

  private async applyRetention(report: CleanReport, onlyTopic?: string): Promise<void> {
    const policies = this.deps.policies();
    const moves: { topic: string; partition: number; start: number }[] = [];
    for (const store of [...this.deps.registry.all()]) {
      const policy = policies.get(store.id.topic);
      if (!policy?.delete || !store.isOpen || (onlyTopic !== undefined && store.id.topic !== onlyTopic)) continue;
      const cp = store.checkpoint;
      const segments = store.segments;
      const dirtyBytes = segments.filter((s) => s.base >= cp.firstDirty).reduce((n, s) => n + s.bytes, 0);
      const start = retentionStart(
        {
          segments,
          sizeOf: (i) => store.bytesIn(segments[i]!.base, i + 1 < segments.length ? segments[i + 1]!.base : cp.nextOffset),
          totalBytes: cp.cleanBytes + dirtyBytes,
          endOffset: cp.nextOffset,
          highWatermark: cp.highWatermark,
          now: this.now(),
        },
        policy,
      );
      if (start !== undefined && start > cp.logStartOffset) moves.push({ ...store.id, start });
    }
    // All at once: the requests share the worker's connection to each leader, where every one
    // would otherwise wait out the indexer's long-polling fetch in turn (minutes, over a
    // thousand partitions).
    const accepted = await Promise.all(moves.map((m) => this.deps.deleteRecords(m.topic, m.partition, m.start)));
    for (const [i, { topic, partition, start }] of moves.entries()) {
      const upstream = accepted[i]!;
      const current = this.deps.registry.get(topic, partition);
      try {
        // The topic's own log start moves: copies of records past retention go with their originals.
        if (current && current.dropBelow(start, true)) this.deps.registry.publish(current);
      } catch (err) {
        if (!isStorageFailure(err) || !current) throw err;
        report.failed.push({ topic, partition, error: (err as Error).message });
        this.storageFailedOnce(current, err, 'retention waits for the storage of its index: reads through the proxy may still show records past retention');
        continue;
      }
      report.retention.push({ topic, partition, logStartOffset: start, upstream });
    }
  }

  private storageFailedOnce(store: PartitionStore, err: unknown, what: string): void {
    if (this.storageFailed.has(idOf(store))) return;
    this.storageFailed.add(idOf(store));
    this.deps.log.error(`the storage of a partition index failed; ${what}; retried every round`, {
      topic: store.id.topic,
      partition: store.id.partition,
      err,
      fix: storageFix(err, store.file),
    });
  }
}
