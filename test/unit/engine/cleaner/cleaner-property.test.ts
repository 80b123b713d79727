/**
 * The cleaner against a naive model of Kafka's rules, on random logs: keys from a small pool,
 * tombstones, keyless records, committed and aborted transactions interleaved with plain
 * writes, out-of-order timestamps, random segment sizes and intervals, compaction lags and
 * delete retention, with the clock moving between cleans. After every clean, what the index
 * holds (and what the main thread's view says survives) must equal the model.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { Cleaner } from '../../../../src/engine/cleaner/cleaner.js';
import type { PartitionStore } from '../../../../src/engine/store/partition-store.js';
import { rollPolicy } from '../../../../src/engine/store/segment-roller.js';
import { StoreRegistry } from '../../../../src/engine/store/store-registry.js';
import { SurvivorSet, type SurvivorSnapshot } from '../../../../src/engine/api/survivor-set.js';
import type { TopicPolicy } from '../../../../src/engine/api/topic-policy.js';
import { createLogger } from '../../../../src/common/log.js';
import type { DataRecord } from '../indexer/batch-builder.js';
import { DEFAULT_POLICY } from '../../../support/default-policy.js';
import { FakeLog, type LogBatch, type LogRecord } from './fake-log.js';
import { seededRng } from '../../protocol/sample-body.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-prop-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
const SEEDS = Number(process.env.KCOMPACT_PROPERTY_SEEDS ?? 60);
const quiet = { ...createLogger(), warn: () => {}, info: () => {}, debug: () => {} };

/**
 * Kafka's rules, naively: every record is looked at in every clean, against the whole log.
 */
class Model {
  private readonly present = new Map<number, { horizon: number | null }>();
  cleanedUpTo = 0;

  /** Records indexed so far join the model as present. */
  admit(records: LogRecord[]): void {
    for (const r of records) if (!this.present.has(r.offset) && r.offset >= this.cleanedUpTo) this.present.set(r.offset, { horizon: null });
  }

  /** Where a clean at `now` must end: the active segment's base, or the first segment within min.compaction.lag.ms. */
  cleanEnd(batches: LogBatch[], policy: TopicPolicy, now: number): number {
    const roll = rollPolicy(policy);
    const segments: { base: number; first: number; max: number; bytes: number }[] = [];
    for (const b of batches) {
      const open = segments.at(-1);
      const rolls =
        !open || (open.bytes > 0 && (open.bytes + b.bytes.length > roll.segmentBytes || (open.first >= 0 && b.maxTimestamp - open.first > roll.maxSegmentMs)));
      if (rolls) segments.push({ base: b.base, first: b.maxTimestamp, max: b.maxTimestamp, bytes: b.bytes.length });
      else {
        open.bytes += b.bytes.length;
        open.max = Math.max(open.max, b.maxTimestamp);
      }
    }
    if (segments.length === 0) return this.cleanedUpTo;
    let end = segments.at(-1)!.base;
    if (policy.minCompactionLagMs > 0) {
      for (let i = 0; i < segments.length - 1; i++) {
        const next = segments[i + 1]!.base;
        if (next <= this.cleanedUpTo) continue;
        if (segments[i]!.max > now - policy.minCompactionLagMs) {
          end = Math.min(end, segments[i]!.base);
          break;
        }
      }
    }
    return Math.max(this.cleanedUpTo, end);
  }

  clean(log: LogRecord[], end: number, now: number, deleteRetentionMs: number): void {
    const before = new Set(this.present.keys());
    const gone = (offset: number) => this.present.delete(offset);
    for (const m of log) {
      if (m.marker === null || m.offset >= end || !this.present.has(m.offset)) continue;
      const previousMarker = Math.max(-1, ...log.filter((r) => r.marker !== null && r.producerId === m.producerId && r.offset < m.offset).map((r) => r.offset));
      const dataLeft = log.some(
        (r) => r.marker === null && r.producerId === m.producerId && r.offset > previousMarker && r.offset < m.offset && before.has(r.offset),
      );
      if (dataLeft) continue;
      const state = this.present.get(m.offset)!;
      if (state.horizon === null) state.horizon = now + deleteRetentionMs;
      else if (state.horizon <= now) gone(m.offset);
    }
    for (const r of log) {
      if (r.marker !== null || r.offset >= end || !this.present.has(r.offset)) continue;
      const superseded = log.some((s) => s.marker === null && !s.aborted && s.key !== null && s.key === r.key && s.offset > r.offset && s.offset < end);
      if (r.aborted || r.key === null || superseded) gone(r.offset);
    }
    for (const r of log) {
      if (!r.tombstone || r.offset >= end || !this.present.has(r.offset)) continue;
      const state = this.present.get(r.offset)!;
      if (state.horizon !== null && state.horizon <= now) gone(r.offset);
      else if (state.horizon === null) state.horizon = now + deleteRetentionMs;
    }
    this.cleanedUpTo = end;
  }

  survivors(): number[] {
    return [...this.present.keys()].sort((a, b) => a - b);
  }
}

function heldOffsets(store: PartitionStore): number[] {
  const held: number[] = [];
  store.eachOffsetBelow(Infinity, (offset) => held.push(offset));
  return held;
}

async function runSeed(seed: number): Promise<{ cleans: number; records: number; removed: number }> {
  const random = seededRng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const policy: TopicPolicy = {
    ...DEFAULT_POLICY,
    segmentBytes: 150 + Math.floor(random() * 1500),
    segmentMs: 500 * (2 + Math.floor(random() * 40)),
    // Multiples of the clock step, so that cleans land exactly on horizons and lags too.
    minCompactionLagMs: random() < 0.5 ? 0 : 500 * Math.floor(random() * 10),
    deleteRetentionMs: 500 * Math.floor(random() * 10),
  };
  const snapshots: SurvivorSnapshot[] = [];
  const registry = new StoreRegistry(path.join(dir, `seed-${seed}`), quiet, (_id, snapshot) => {
    if (snapshot) snapshots.push(snapshot);
  });
  const store = registry.ensure('t', 0);
  let now = 1_000_000;
  const cleaner = new Cleaner({
    registry,
    policies: () => new Map([['t', policy]]),
    deleteRecords: async () => false,
    log: quiet,
    backoffMs: 1e9,
    clock: () => now,
  });
  const log = new FakeLog();
  const model = new Model();
  const keys = ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'];
  const roll = rollPolicy(policy);
  let cleans = 0;
  let removed = 0;

  const record = (): DataRecord => {
    const x = random();
    if (x < 0.1) return { key: null, value: 'keyless' };
    if (x < 0.15) return { key: '', value: 'empty key' };
    return { key: pick(keys), value: x < 0.3 ? null : `v${Math.floor(random() * 1000)}` };
  };

  const clean = async (context: string) => {
    const expectedEnd = model.cleanEnd(
      log.batches.filter((b) => b.last < store.checkpoint.nextOffset),
      policy,
      now,
    );
    const report = await cleaner.compactNow('t');
    assert.equal(report.failed.length, 0, JSON.stringify(report.failed));
    const done = report.cleaned[0]!;
    assert.equal(done.endOffset, expectedEnd, `${context}: clean end`);
    model.clean(
      log.records.filter((r) => r.offset < store.checkpoint.nextOffset),
      expectedEnd,
      now,
      policy.deleteRetentionMs,
    );
    cleans++;
    removed += done.removed;
    const held = heldOffsets(registry.get('t', 0)!);
    assert.deepEqual(held, model.survivors(), `${context}: held offsets (seed ${seed}, policy ${JSON.stringify(policy)})`);
    const view = new SurvivorSet(snapshots.at(-1)!);
    assert.equal(view.cleanedUpTo(), expectedEnd);
    assert.deepEqual(
      [...view.survivors(0, Number.MAX_SAFE_INTEGER)],
      model.survivors().filter((o) => o < expectedEnd),
      `${context}: view`,
    );
  };

  for (let step = 0; step < 80; step++) {
    const op = random();
    const ts = now - (random() < 0.1 ? Math.floor(random() * 3000) : 0);
    if (op < 0.35) {
      await log.append(Array.from({ length: 1 + Math.floor(random() * 5) }, record), ts);
    } else if (op < 0.5) {
      await log.append(Array.from({ length: 1 + Math.floor(random() * 3) }, record), ts, pick([1, 2, 3]));
    } else if (op < 0.6 && log.openProducers().length > 0) {
      await log.endTransaction(pick(log.openProducers()), random() < 0.5, ts);
    } else if (op < 0.8) {
      now += 500 * Math.floor(random() * 6);
    } else {
      await clean(`step ${step}`);
    }
    await log.feed(store, roll);
    model.admit(log.records.filter((r) => r.offset < store.checkpoint.nextOffset));
  }
  for (const producer of log.openProducers()) await log.endTransaction(producer, random() < 0.5, now);
  await log.append([{ key: 'a', value: 'last' }], now + policy.segmentMs + 1);
  await log.feed(store, roll);
  model.admit(log.records);
  for (let i = 0; i < 4; i++) {
    now += policy.deleteRetentionMs + policy.minCompactionLagMs + 1;
    await clean(`final ${i}`);
  }
  await cleaner.close();
  registry.closeAll();
  return { cleans, records: log.end, removed };
}

describe('cleaner vs a naive model of Kafka', () => {
  it(`agrees on ${SEEDS} random logs`, async () => {
    let cleans = 0;
    let removed = 0;
    let records = 0;
    for (let seed = 1; seed <= SEEDS; seed++) {
      const r = await runSeed(seed);
      cleans += r.cleans;
      removed += r.removed;
      records += r.records;
    }
    assert.ok(removed > records / 4, `the cleans removed ${removed} of ${records} records: the logs exercise the rules`);
    assert.ok(cleans >= SEEDS * 5);
  });
});
