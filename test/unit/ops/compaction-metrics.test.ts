import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { CompactionMetrics, type CompactionSource } from '../../../src/ops/metrics/compaction-metrics.js';
import { topicFilter } from '../../../src/ops/metrics/topic-filter.js';
import { createLogger, setLogSink } from '../../../src/common/log.js';
import type { EngineStatus, PartitionStatus, CleanerStats } from '../../../src/engine/api/engine-reports.js';
import { parseExposition } from '../../support/prometheus.js';

function partition(topic: string, p: number, over: Partial<PartitionStatus> = {}): PartitionStatus {
  return {
    topic,
    partition: p,
    topicId: 'id',
    leader: 0,
    nextOffset: 100,
    highWatermark: 100,
    lastStableOffset: 100,
    logStartOffset: 0,
    cleanedUpTo: 90,
    indexedRecords: 20,
    dirtyRatio: 0.25,
    tombstonesPending: 1,
    lastCleanMs: 0,
    lastPass: -1,
    lastPassMs: -1,
    carried: false,
    usedMs: -1,
    uncleanable: false,
    ...over,
  };
}

/** The wall clock of the tests that mock it. */
const NOW = 1_700_000_000_000;

function cleaner(over: Partial<CleanerStats> = {}): CleanerStats {
  return {
    lastRunMs: Date.now() - 2_000,
    maxDirtyRatio: 0.75,
    maxCompactionDelayMs: 1_500,
    maxCleanTimeMs: 250,
    cleansTotal: 3,
    reapedTotal: 40,
    uncleanable: [],
    ...over,
  };
}

/** The figures a scrape of `registry` gives while `status` is what the engine says. */
class Bed {
  readonly registry = new Registry();
  status: EngineStatus | Error | 'hang' = { partitions: [], cleaner: cleaner() };
  calls = 0;
  filtered = 0;
  shareFiltered = 0;
  shareCopied = 0;
  held = 0;
  viewCache = { bytes: 0, reads: 0 };
  copiesAhead = { begun: 0, used: 0 };
  readonly metrics: CompactionMetrics;

  constructor(perPartition: boolean, include: string[] = [], exclude: string[] = []) {
    this.metrics = new CompactionMetrics(this.registry, { perPartition, topics: topicFilter(include, exclude), log: createLogger(), statusTimeoutMs: 200 });
  }

  attach(): void {
    const source: CompactionSource = {
      status: () => {
        this.calls++;
        const s = this.status;
        if (s === 'hang') return new Promise(() => {});
        return s instanceof Error ? Promise.reject(s) : Promise.resolve(s);
      },
      filteredRecords: () => this.filtered,
      shareFilteredRecords: () => this.shareFiltered,
      shareCopiedRecords: () => this.shareCopied,
      heldFetches: () => this.held,
      viewCache: () => this.viewCache,
      copiesAhead: () => this.copiesAhead,
    };
    this.metrics.attach(source);
  }

  async scrape() {
    return parseExposition(await this.registry.metrics());
  }
}

test('aggregates from one status call per scrape, in base units', async (t) => {
  // The wall clock stands still, so a time since is what the status says, to the millisecond.
  t.mock.timers.enable({ apis: ['Date'], now: NOW });
  const bed = new Bed(false);
  assert.equal((await bed.scrape()).value('kcompact_compaction_engine_up'), 0, 'before the engine is attached');
  bed.attach();
  bed.status = {
    partitions: [partition('a', 0), partition('a', 1, { nextOffset: 80, tombstonesPending: 2 }), partition('b', 0, { indexedRecords: 5 })],
    cleaner: cleaner({
      uncleanable: [{ topic: 'b', partition: 0 }],
      carry: {
        passesTotal: 2,
        copiesTotal: 300,
        bytesWrittenTotal: 9000,
        failuresTotal: 1,
        fencedTotal: 4,
        bytesReadTotal: 7000,
        heldPartitions: 1,
        pacing: { pacedMsTotal: 2500, throttledMsTotal: 750, throttlesTotal: 3 },
      },
      carryMargin: { topic: 'a', partition: 1, marginMs: 45_000, ratio: 0.375 },
    }),
    reads: { indexBytes: 12_000, locateBytes: 3_000 },
    carryCapacity: {
      bytesPerSecond: 1000,
      ratio: 0.9,
      partitions: [
        { topic: 'a', partition: 0, liveBytes: 4000, carryAfterMs: 10_000, ratio: 0.4 },
        { topic: 'b', partition: 0, liveBytes: 5000, carryAfterMs: 10_000, ratio: 0.5 },
      ],
    },
    carrierGroup: {
      groupId: 'kcompact-carriers',
      state: 'stable',
      memberId: 'm-1',
      generation: 7,
      leader: true,
      carried: [
        { topic: 'a', partition: 0 },
        { topic: 'b', partition: 0 },
      ],
    },
  };
  bed.filtered = 7;
  bed.shareFiltered = 3;
  bed.shareCopied = 5;
  bed.held = 2;
  bed.viewCache = { bytes: 4096, reads: 12 };
  bed.copiesAhead = { begun: 9, used: 7 };
  const e = await bed.scrape();
  assert.equal(bed.calls, 1, "every metric shares the scrape's status call");
  assert.equal(e.value('kcompact_compaction_engine_up'), 1);
  assert.equal(e.value('kcompact_compacted_partitions'), 3);
  assert.equal(e.value('kcompact_index_rows'), 45);
  assert.equal(e.value('kcompact_index_lag_records'), 20);
  assert.equal(e.value('kcompact_tombstones_pending'), 4);
  assert.equal(e.value('kcompact_uncleanable_partitions'), 1);
  assert.equal(e.value('kcompact_cleaner_max_dirty_ratio'), 0.75);
  assert.equal(e.value('kcompact_cleaner_max_clean_time_seconds'), 0.25);
  assert.equal(e.value('kcompact_cleaner_max_compaction_delay_seconds'), 1.5);
  assert.equal(e.value('kcompact_cleaner_time_since_last_run_seconds'), 2, 'the last run, 2 s before the scrape');
  assert.equal(e.value('kcompact_cleaner_cleans_total'), 3);
  assert.equal(e.value('kcompact_reaped_records_total'), 40);
  assert.equal(e.value('kcompact_carry_passes_total'), 2);
  assert.equal(e.value('kcompact_carried_records_total'), 300);
  assert.equal(e.value('kcompact_carried_bytes_total'), 9000);
  assert.equal(e.value('kcompact_carry_failures_total'), 1);
  assert.equal(e.value('kcompact_carry_fenced_total'), 4);
  assert.equal(e.value('kcompact_carry_held_partitions'), 1);
  assert.equal(e.value('kcompact_index_read_bytes_total'), 12_000);
  assert.equal(e.value('kcompact_locate_read_bytes_total'), 3_000);
  assert.equal(e.value('kcompact_carry_read_bytes_total'), 7_000);
  assert.equal(e.value('kcompact_carrier_group_generation'), 7);
  assert.equal(e.value('kcompact_carrier_group_stable'), 1);
  assert.equal(e.value('kcompact_carrier_group_leader'), 1);
  assert.equal(e.value('kcompact_carried_partitions'), 2);
  assert.equal(e.value('kcompact_indexed_on_demand_partitions'), 3, 'the status names none of its partitions carried');
  assert.equal(e.value('kcompact_carry_margin_seconds'), 45);
  assert.equal(e.value('kcompact_carry_margin_ratio'), 0.375);
  assert.equal(e.value('kcompact_carry_capacity_ratio'), 0.9);
  assert.equal(e.value('kcompact_carry_paced_seconds_total'), 2.5);
  assert.equal(e.value('kcompact_carry_throttled_seconds_total'), 0.75);
  assert.equal(e.value('kcompact_carry_throttles_total'), 3);
  assert.equal(e.value('kcompact_fetch_filtered_records_total'), 7);
  assert.equal(e.value('kcompact_share_fetch_filtered_records_total'), 3);
  assert.equal(e.value('kcompact_share_fetch_copied_records_total'), 5);
  assert.equal(e.value('kcompact_fetch_held_total'), 2);
  assert.equal(e.value('kcompact_view_cache_bytes'), 4096);
  assert.equal(e.value('kcompact_view_cache_reads_total'), 12);
  assert.equal(e.value('kcompact_fetch_copies_ahead_total'), 9);
  assert.equal(e.value('kcompact_fetch_copies_ahead_used_total'), 7);
  assert.deepEqual(
    e.samples.filter((s) => s.name.startsWith('kcompact_partition_')),
    [],
    'no per-partition series unless enabled',
  );
});

test('counters keep growing across a worker restart; an engine that fails or hangs leaves the last figures', async () => {
  const lines: string[] = [];
  const previous = setLogSink((line) => lines.push(line));
  try {
    const bed = new Bed(false);
    bed.attach();
    bed.status = { partitions: [partition('a', 0)], cleaner: cleaner({ reapedTotal: 40, cleansTotal: 3 }) };
    await bed.scrape();
    bed.status = { partitions: [partition('a', 0)], cleaner: cleaner({ reapedTotal: 10, cleansTotal: 1 }) };
    let e = await bed.scrape();
    assert.equal(e.value('kcompact_reaped_records_total'), 50, 'the restarted worker counts from zero: 40 + 10');
    assert.equal(e.value('kcompact_cleaner_cleans_total'), 4);

    bed.status = new Error('compaction worker exited (code 1)');
    e = await bed.scrape();
    assert.equal(e.value('kcompact_compaction_engine_up'), 0);
    assert.equal(e.value('kcompact_index_rows'), 20, 'the last figure, not a misleading 0');
    assert.equal(e.value('kcompact_reaped_records_total'), 50, 'counters keep their totals');

    bed.status = 'hang';
    e = await bed.scrape();
    assert.equal(e.value('kcompact_compaction_engine_up'), 0, 'a scrape does not wait past the timeout');
    assert.ok(lines.some((l) => /did not answer the metrics scrape in time/.test(JSON.parse(l).msg)));
    assert.ok(lines.some((l) => /status failed/.test(JSON.parse(l).msg)));
  } finally {
    setLogSink(previous);
  }
});

test('per-partition series for the topics include and exclude admit', async (t) => {
  t.mock.timers.enable({ apis: ['Date'], now: NOW });
  const bed = new Bed(true, ['orders-*', 'users'], ['orders-test']);
  bed.attach();
  const cleanedAt = NOW - 4_000;
  bed.status = {
    partitions: [
      partition('orders-eu', 0, { lastCleanMs: cleanedAt, uncleanable: true }),
      partition('orders-eu', 1),
      partition('orders-test', 0),
      partition('users', 0, { highWatermark: 130 }),
      partition('payments', 0),
    ],
    cleaner: cleaner(),
    carryCapacity: {
      bytesPerSecond: 1000,
      ratio: 0.6,
      partitions: [
        { topic: 'orders-eu', partition: 1, liveBytes: 2000, carryAfterMs: 10_000, ratio: 0.2 },
        { topic: 'orders-test', partition: 0, liveBytes: 4000, carryAfterMs: 10_000, ratio: 0.4 },
      ],
    },
  };
  const e = await bed.scrape();
  const topics = new Set(e.samples.filter((s) => s.name.startsWith('kcompact_partition_')).map((s) => s.labels.topic));
  assert.deepEqual([...topics].sort(), ['orders-eu', 'users']);
  assert.equal(e.value('kcompact_partition_index_rows', { topic: 'orders-eu', partition: '1' }), 20);
  assert.equal(e.value('kcompact_partition_index_lag_records', { topic: 'users', partition: '0' }), 30);
  assert.equal(e.value('kcompact_partition_dirty_ratio', { topic: 'users', partition: '0' }), 0.25);
  assert.equal(e.value('kcompact_partition_tombstones_pending', { topic: 'orders-eu' }), 2);
  assert.equal(e.value('kcompact_partition_uncleanable', { topic: 'orders-eu', partition: '0' }), 1);
  assert.equal(e.value('kcompact_partition_uncleanable', { topic: 'orders-eu', partition: '1' }), 0);
  assert.equal(e.value('kcompact_partition_time_since_last_clean_seconds', { topic: 'orders-eu', partition: '0' }), 4);
  assert.equal(e.value('kcompact_partition_time_since_last_clean_seconds', { topic: 'orders-eu', partition: '1' }), undefined, 'never cleaned');
  assert.equal(e.value('kcompact_compacted_partitions'), 5, 'aggregates cover every topic');
  assert.equal(e.value('kcompact_partition_carry_capacity_ratio', { topic: 'orders-eu', partition: '1' }), 0.2);
  assert.equal(e.find('kcompact_partition_carry_capacity_ratio').length, 1, 'only carried partitions of admitted topics');
  assert.equal(e.value('kcompact_carry_capacity_ratio'), 0.6, 'the replica figure covers every topic');

  bed.status = { partitions: [partition('users', 0)], cleaner: cleaner() };
  const later = await bed.scrape();
  assert.equal(later.find('kcompact_partition_index_rows', { topic: 'orders-eu' }).length, 0, 'a dropped partition has no series left');
  assert.equal(later.find('kcompact_partition_carry_capacity_ratio').length, 0, 'nor a partition no longer carried');
  assert.equal(later.value('kcompact_carry_capacity_ratio'), 0, 'nothing bounded, nothing needed');
});
