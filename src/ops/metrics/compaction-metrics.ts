/**
 * Compaction figures, read from the engine's status when scraped: the engine runs in a worker
 * thread, so one status call per scrape (shared by every metric below) costs less than pushing
 * each clean and each indexed batch across threads. The cleaner figures are the ones Kafka's
 * LogCleaner exports, in base units; the index figures are ours.
 */
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Logger } from '../../common/log.js';
import type { EngineStatus, PartitionStatus } from '../../engine/api/engine-reports.js';
import type { TopicFilter } from './topic-filter.js';

export interface CompactionSource {
  status(): Promise<EngineStatus>;
  /** Records the fetch view has removed from answers since the process started. */
  filteredRecords(): number;
  /** Records the share-fetch view has removed from share groups' answers since the process started. */
  shareFilteredRecords(): number;
  /** Records share groups new to a carried partition got from its copies since the process started. */
  shareCopiedRecords(): number;
  /** Fetches below the store's log start answered empty while the index caught up with a carry pass. */
  heldFetches(): number;
  /** The fetch view's cache: bytes held, and reads on it answered since the process started. */
  viewCache(): { bytes: number; reads: number };
  /** Answers from carried copies begun for clients' next fetches, and how many a next fetch used. */
  copiesAhead(): { begun: number; used: number };
}

export interface CompactionMetricsOptions {
  /** Export the kcompact_partition_* series, for the topics `topics` admits. */
  perPartition: boolean;
  topics: TopicFilter;
  log: Logger;
  /** How long a scrape waits for the engine before it goes on with the last figures. */
  statusTimeoutMs?: number;
}

/** A worker busy in one clean pass (a few seconds at most) still answers within this. */
const STATUS_TIMEOUT_MS = 5_000;

/**
 * A counter over a total the worker reports, which starts again from zero when the worker is
 * restarted: the exported total keeps growing across restarts, as a counter must.
 */
function monotonic(): (reported: number | undefined) => number {
  let last = 0;
  let total = 0;
  return (reported) => {
    if (reported === undefined) return total;
    total += reported >= last ? reported - last : reported;
    last = reported;
    return total;
  };
}

export class CompactionMetrics {
  private source: CompactionSource | undefined;
  private attachedMs = 0;
  private pending: Promise<EngineStatus | undefined> | undefined;

  constructor(
    registry: Registry,
    private readonly opts: CompactionMetricsOptions,
  ) {
    const registers = [registry];
    const snapshot = () => this.snapshot();
    const gauge = (name: string, help: string, value: (s: EngineStatus, now: number) => number) =>
      new Gauge({
        name,
        help,
        registers,
        async collect(this: Gauge) {
          const s = await snapshot();
          if (s) this.set(value(s, Date.now()));
        },
      });
    const counter = (name: string, help: string, reported: (s: EngineStatus) => number) => {
      const total = monotonic();
      return new Counter({
        name,
        help,
        registers,
        async collect(this: Counter) {
          const s = await snapshot();
          this.reset();
          this.inc(total(s && reported(s)));
        },
      });
    };
    const sum = (s: EngineStatus, of: (p: PartitionStatus) => number) => s.partitions.reduce((n, p) => n + of(p), 0);

    const metrics = this;
    new Gauge({
      name: 'kcompact_compaction_engine_up',
      help: 'Whether the compaction engine answered this scrape (1) or not (0: starting, restarting, or busy past the timeout; the compaction figures then keep their last values)',
      registers,
      async collect(this: Gauge) {
        this.set((await snapshot()) ? 1 : 0);
      },
    });
    gauge('kcompact_compacted_partitions', 'Partitions of compacted topics the index holds', (s) => s.partitions.length);
    gauge(
      'kcompact_index_rows',
      'Offsets the key index holds over every compacted partition (survivors below the cleaned horizon plus everything above it)',
      (s) => sum(s, (p) => p.indexedRecords),
    );
    gauge('kcompact_index_lag_records', 'Offsets the upstream holds that the index has not read yet, over every compacted partition', (s) => sum(s, lag));
    gauge('kcompact_tombstones_pending', 'Tombstones in the index that a later clean will remove once their delete horizon passes', (s) =>
      sum(s, (p) => p.tombstonesPending),
    );
    gauge(
      'kcompact_uncleanable_partitions',
      'Partitions whose clean failed and that the cleaner skips until the engine restarts or their index is rebuilt',
      (s) => s.cleaner.uncleanable.length,
    );
    gauge(
      'kcompact_cleaner_max_dirty_ratio',
      "Largest dirty ratio (dirty / (clean + dirty) bytes, 0-1) seen in the cleaner's last round (Kafka: max-dirty-percent)",
      (s) => s.cleaner.maxDirtyRatio,
    );
    gauge(
      'kcompact_cleaner_max_clean_time_seconds',
      "Longest single-partition clean in the cleaner's last round that cleaned (Kafka: max-clean-time-secs)",
      (s) => s.cleaner.maxCleanTimeMs / 1000,
    );
    gauge(
      'kcompact_cleaner_max_compaction_delay_seconds',
      "Largest time past max.compaction.lag.ms that a partition's oldest dirty record waited, in the cleaner's last round (Kafka: max-compaction-delay-secs)",
      (s) => s.cleaner.maxCompactionDelayMs / 1000,
    );
    gauge(
      'kcompact_cleaner_time_since_last_run_seconds',
      "Time since the cleaner's last round started, or since the engine started before its first (Kafka: time-since-last-run-ms)",
      (s, now) => (now - (s.cleaner.lastRunMs || metrics.attachedMs)) / 1000,
    );
    counter('kcompact_cleaner_cleans_total', "Partition cleans (one pass over a partition's cleanable range)", (s) => s.cleaner.cleansTotal);
    counter(
      'kcompact_reaped_records_total',
      'Index rows the cleaner removed: superseded records, expired tombstones and transaction markers, records past retention',
      (s) => s.cleaner.reapedTotal,
    );
    counter(
      'kcompact_carry_passes_total',
      'Carry passes completed: survivors copied forward in the store and the old range let go',
      (s) => s.cleaner.carry?.passesTotal ?? 0,
    );
    counter('kcompact_carried_records_total', 'Surviving records copied forward by carry passes', (s) => s.cleaner.carry?.copiesTotal ?? 0);
    counter('kcompact_carried_bytes_total', 'Bytes of copy batches carry passes wrote to the store', (s) => s.cleaner.carry?.bytesWrittenTotal ?? 0);
    counter(
      'kcompact_carry_failures_total',
      'Carry passes that stopped before their end (nothing was let go; the next clean tries again)',
      (s) => s.cleaner.carry?.failuresTotal ?? 0,
    );
    counter(
      'kcompact_index_read_bytes_total',
      "Bytes of record batches this replica's indexer read from the store to index them (the partitions it carries and the ones its clients use)",
      (s) => s.reads?.indexBytes ?? 0,
    );
    counter(
      'kcompact_locate_read_bytes_total',
      "Bytes of record batches read from the store to find a new index's last carry pass (headers only are looked at)",
      (s) => s.reads?.locateBytes ?? 0,
    );
    counter(
      'kcompact_carry_read_bytes_total',
      'Bytes of record batches carry passes read from the store to copy the survivors',
      (s) => s.cleaner.carry?.bytesReadTotal ?? 0,
    );
    counter(
      'kcompact_carry_fenced_total',
      'Carry passes this replica stopped because the carrier group gave the partition to another replica (a rebalance, a pause past the session timeout)',
      (s) => s.cleaner.carry?.fencedTotal ?? 0,
    );
    gauge(
      'kcompact_carry_held_partitions',
      'Partitions whose last carry pass keeps part of its range in the store because a share group has not finished it (or the store could not say where its share groups stand)',
      (s) => s.cleaner.carry?.heldPartitions ?? 0,
    );
    gauge(
      'kcompact_carrier_group_generation',
      "The carrier group's generation this replica's assignment belongs to (-1 before the first; it rises with each rebalance)",
      (s) => s.carrierGroup?.generation ?? -1,
    );
    gauge(
      'kcompact_carrier_group_stable',
      '1 while this replica holds an assignment of the carrier group, 0 while it joins (or rejoins) it or has no group',
      (s) => (s.carrierGroup?.state === 'stable' ? 1 : 0),
    );
    gauge('kcompact_carrier_group_leader', "1 when this replica is the carrier group's leader (it divides the partitions)", (s) =>
      s.carrierGroup?.leader ? 1 : 0,
    );
    gauge('kcompact_carried_partitions', 'Compacted partitions this replica carries in the current generation of the carrier group', (s) =>
      s.carrierGroup ? s.carrierGroup.carried.length : 0,
    );
    gauge(
      'kcompact_indexed_on_demand_partitions',
      "Compacted partitions this replica indexes because its clients use them, not because it carries them (they are let go indexIdleMs after their clients' last use)",
      (s) => s.partitions.filter((p) => !p.carried).length,
    );
    gauge(
      'kcompact_carry_margin_seconds',
      "Time left before a store that caps retention may let go the oldest record a compacted partition still needs, least over the partitions, at the cleaner's last round (+Inf where no store caps retention)",
      (s) => (s.cleaner.carryMargin ? s.cleaner.carryMargin.marginMs / 1000 : Infinity),
    );
    gauge(
      'kcompact_carry_capacity_ratio',
      'How much of carryBytesPerSecond the partitions this replica carries on a store that caps retention need to be rewritten within their carry ages (the sum over them of live bytes / (rate x carry age)); above 1 the rate cannot keep them, 0 where nothing bounds the rate',
      (s) => s.carryCapacity?.ratio ?? 0,
    );
    counter(
      'kcompact_carry_paced_seconds_total',
      'Time carry passes waited so as not to write or read the store faster than carryBytesPerSecond',
      (s) => (s.cleaner.carry?.pacing?.pacedMsTotal ?? 0) / 1000,
    );
    counter(
      'kcompact_carry_throttled_seconds_total',
      "Time carry passes waited before their next request to a broker that answered them with throttle_time_ms (the store's quota)",
      (s) => (s.cleaner.carry?.pacing?.throttledMsTotal ?? 0) / 1000,
    );
    counter(
      'kcompact_carry_throttles_total',
      'Answers to carry passes in which the store asked for a throttle (throttle_time_ms > 0)',
      (s) => s.cleaner.carry?.pacing?.throttlesTotal ?? 0,
    );
    gauge(
      'kcompact_carry_margin_ratio',
      "kcompact_carry_margin_seconds as a share of that partition's store retention (0-1; 1 where no store caps retention): falls towards 0 when carrying stops",
      (s) => (s.cleaner.carryMargin ? Math.max(0, s.cleaner.carryMargin.ratio) : 1),
    );
    new Counter({
      name: 'kcompact_fetch_filtered_records_total',
      help: 'Records the compacted fetch view removed from fetched batches before answering clients',
      registers,
      collect(this: Counter) {
        this.reset();
        this.inc(metrics.source?.filteredRecords() ?? 0);
      },
    });
    new Counter({
      name: 'kcompact_share_fetch_filtered_records_total',
      help: "Records the compacted view removed from share groups' ShareFetch answers (members acknowledge their offsets as gaps)",
      registers,
      collect(this: Counter) {
        this.reset();
        this.inc(metrics.source?.shareFilteredRecords() ?? 0);
      },
    });
    new Counter({
      name: 'kcompact_share_fetch_copied_records_total',
      help: 'Records share groups new to a carried partition got from the carried copies in ShareFetch answers, at their original offsets',
      registers,
      collect(this: Counter) {
        this.reset();
        this.inc(metrics.source?.shareCopiedRecords() ?? 0);
      },
    });
    new Counter({
      name: 'kcompact_fetch_held_total',
      help: "Partitions of fetches below the store's log start answered with no records (not OFFSET_OUT_OF_RANGE) while this replica's index caught up with what a carry pass let go",
      registers,
      collect(this: Counter) {
        this.reset();
        this.inc(metrics.source?.heldFetches() ?? 0);
      },
    });
    new Gauge({
      name: 'kcompact_view_cache_bytes',
      help: 'Memory the compacted fetch view holds for batches already read (viewCacheBytes is its limit)',
      registers,
      collect(this: Gauge) {
        this.set(metrics.source?.viewCache().bytes ?? 0);
      },
    });
    new Counter({
      name: 'kcompact_view_cache_reads_total',
      help: 'Reads of compacted partitions that the fetch view answered from its cache instead of the upstream',
      registers,
      collect(this: Counter) {
        this.reset();
        this.inc(metrics.source?.viewCache().reads ?? 0);
      },
    });

    new Counter({
      name: 'kcompact_fetch_copies_ahead_total',
      help: "Answers from a carried partition's copies begun for a client's next fetch, while it worked on the previous answer",
      registers,
      collect(this: Counter) {
        this.reset();
        this.inc(metrics.source?.copiesAhead().begun ?? 0);
      },
    });
    new Counter({
      name: 'kcompact_fetch_copies_ahead_used_total',
      help: 'Answers begun for a next fetch (kcompact_fetch_copies_ahead_total) that the fetch used',
      registers,
      collect(this: Counter) {
        this.reset();
        this.inc(metrics.source?.copiesAhead().used ?? 0);
      },
    });

    if (!opts.perPartition) return;
    const partitionGauge = (name: string, help: string, value: (p: PartitionStatus, now: number) => number | undefined) =>
      new Gauge({
        name,
        help,
        labelNames: ['topic', 'partition'],
        registers,
        async collect(this: Gauge<'topic' | 'partition'>) {
          const s = await snapshot();
          if (!s) return;
          // Partitions that went away (topic deleted, no longer compacted) lose their series.
          this.reset();
          const now = Date.now();
          for (const p of s.partitions) {
            if (!opts.topics(p.topic)) continue;
            const v = value(p, now);
            if (v !== undefined) this.set({ topic: p.topic, partition: String(p.partition) }, v);
          }
        },
      });
    partitionGauge('kcompact_partition_index_rows', 'Offsets the key index holds for the partition', (p) => p.indexedRecords);
    partitionGauge('kcompact_partition_index_lag_records', 'Offsets of the partition the index has not read yet', lag);
    partitionGauge('kcompact_partition_dirty_ratio', 'Dirty ratio of the partition now (dirty / (clean + dirty) bytes, 0-1)', (p) => p.dirtyRatio);
    partitionGauge('kcompact_partition_tombstones_pending', 'Tombstones of the partition waiting for their delete horizon', (p) => p.tombstonesPending);
    partitionGauge('kcompact_partition_time_since_last_clean_seconds', 'Time since the partition was last cleaned (absent before its first clean)', (p, now) =>
      p.lastCleanMs > 0 ? (now - p.lastCleanMs) / 1000 : undefined,
    );
    new Gauge({
      name: 'kcompact_partition_carry_capacity_ratio',
      help: "The partition's share of kcompact_carry_capacity_ratio: its live bytes over what carryBytesPerSecond rewrites within its carry age (partitions this replica carries on a store that caps retention)",
      labelNames: ['topic', 'partition'],
      registers,
      async collect(this: Gauge<'topic' | 'partition'>) {
        const s = await snapshot();
        if (!s) return;
        this.reset();
        for (const p of s.carryCapacity?.partitions ?? []) {
          if (opts.topics(p.topic)) this.set({ topic: p.topic, partition: String(p.partition) }, p.ratio);
        }
      },
    });
    partitionGauge('kcompact_partition_uncleanable', 'Whether the cleaner skips the partition after a failed clean (1) or not (0)', (p) =>
      p.uncleanable ? 1 : 0,
    );
  }

  /** From now on scrapes read this engine (until then the compaction gauges read 0). */
  attach(source: CompactionSource): void {
    this.source = source;
    this.attachedMs = Date.now();
  }

  /** The engine's status for the scrape under way: every metric's collect shares one call. */
  private snapshot(): Promise<EngineStatus | undefined> {
    const source = this.source;
    if (!source) return Promise.resolve(undefined);
    this.pending ??= this.ask(source).finally(() => {
      this.pending = undefined;
    });
    return this.pending;
  }

  private async ask(source: CompactionSource): Promise<EngineStatus | undefined> {
    let timer: NodeJS.Timeout | undefined;
    const timeoutMs = this.opts.statusTimeoutMs ?? STATUS_TIMEOUT_MS;
    const timeout = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => {
        this.opts.log.warn('compaction engine did not answer the metrics scrape in time; its figures keep their last values', { timeoutMs });
        resolve(undefined);
      }, timeoutMs);
    });
    try {
      return await Promise.race([source.status(), timeout]);
    } catch (err) {
      this.opts.log.warn('compaction engine status failed; its figures keep their last values', { err });
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }
}

function lag(p: PartitionStatus): number {
  return Math.max(0, p.highWatermark - p.nextOffset);
}
