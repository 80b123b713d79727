import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { type CleanReport } from '../../../../src/engine/api/engine-reports.js';
import { Cleaner } from '../../../../src/engine/cleaner/cleaner.js';
import type { Carrier } from '../../../../src/engine/carry/carrier.js';
import { rollPolicy } from '../../../../src/engine/store/segment-roller.js';
import { StoreRegistry } from '../../../../src/engine/store/store-registry.js';
import type { PartitionId } from '../../../../src/engine/store/partition-store.js';
import type { SurvivorSnapshot } from '../../../../src/engine/api/survivor-set.js';
import type { TopicPolicy } from '../../../../src/engine/api/topic-policy.js';
import { createLogger } from '../../../../src/common/log.js';
import { DEFAULT_POLICY } from '../../../support/default-policy.js';
import { indexConnection } from '../../../support/index-connection.js';
import { FakeLog } from './fake-log.js';
import { Log as StoreLog } from '../carry/store-log.js';
import { RowBuffer } from '../../../../src/engine/store/row-buffer.js';
import { collectRows } from '../../../../src/engine/indexer/fetched-rows.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-cleaner-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
let n = 0;
const errors: string[] = [];
const quiet = { ...createLogger(), warn: () => {}, info: () => {}, debug: () => {}, error: (msg: string) => void errors.push(msg) };

/** Small segments that roll every 200 bytes, so a few writes give closed (cleanable) segments. */
const SMALL: TopicPolicy = { ...DEFAULT_POLICY, segmentBytes: 200 };

function setup(policies: Map<string, TopicPolicy>, clock: { now: number }, carrier?: Carrier) {
  const published: { id: PartitionId; snapshot: SurvivorSnapshot | null }[] = [];
  const registry = new StoreRegistry(path.join(dir, `r${n++}`), quiet, (id, snapshot) => published.push({ id, snapshot }));
  const deletes: [string, number, number][] = [];
  const cleaner = new Cleaner({
    registry,
    policies: () => policies,
    deleteRecords: async (topic, partition, offset) => {
      deletes.push([topic, partition, offset]);
      return true;
    },
    log: quiet,
    backoffMs: 1e9,
    clock: () => clock.now,
    carrier,
  });
  return { registry, cleaner, published, deletes };
}

/** Writes `updates` single-record batches cycling over `keys` keys and indexes them. */
async function fill(registry: StoreRegistry, topic: string, policy: TopicPolicy, keys: number, updates: number, ts = 1000): Promise<FakeLog> {
  const log = new FakeLog();
  const store = registry.ensure(topic, 0);
  for (let i = 0; i < updates; i++) await log.append([{ key: `k${i % keys}`, value: `value-${i}` }], ts);
  await log.feed(store, rollPolicy(policy));
  return log;
}

describe('Cleaner', () => {
  it('cleans the dirtiest qualifying partition first and leaves those under min.cleanable.dirty.ratio alone', async () => {
    const clock = { now: 10_000 };
    const lenient = { ...SMALL, minCleanableDirtyRatio: 0.1 };
    const policies = new Map([
      ['mild', lenient],
      ['filthy', lenient],
      ['strict', { ...SMALL, minCleanableDirtyRatio: 1 }],
    ]);
    const { registry, cleaner, published } = setup(policies, clock);
    const mild = await fill(registry, 'mild', lenient, 40, 40);
    await cleaner.compactNow('mild');
    for (let i = 0; i < 10; i++) await mild.append([{ key: `k${i}`, value: 'again' }], 1000);
    await mild.feed(registry.get('mild', 0)!, rollPolicy(lenient));
    await fill(registry, 'filthy', lenient, 2, 40);
    await fill(registry, 'strict', SMALL, 2, 40);
    published.length = 0;
    cleaner.start();
    const deadline = Date.now() + 5000;
    while (published.length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    await cleaner.close();
    assert.deepEqual(
      published.map((p) => p.id.topic),
      ['filthy', 'mild'],
    );
    const stats = cleaner.status();
    assert.equal(stats.cleansTotal, 3);
    assert.ok(stats.maxDirtyRatio > 0.9, `max dirty ratio ${stats.maxDirtyRatio}`);
    assert.ok(registry.get('strict', 0)!.checkpoint.firstDirty === 0, 'strict was not cleaned');
    registry.closeAll();
  });

  it('cleans a barely dirty partition once its oldest dirty segment passes max.compaction.lag.ms', async () => {
    const clock = { now: 0 };
    // A ratio can never exceed 1: only the lag can trigger this clean.
    const policy = { ...SMALL, minCleanableDirtyRatio: 1, maxCompactionLagMs: 60_000 };
    const { registry, cleaner } = setup(new Map([['t', policy]]), clock);
    const round = (cleaner as unknown as { round(): Promise<CleanReport> }).round.bind(cleaner);
    await fill(registry, 't', policy, 5, 30, 1000);
    clock.now = 61_000;
    assert.equal((await round()).cleaned.length, 0, 'the oldest dirty batch is exactly max.compaction.lag.ms old: not yet');
    clock.now = 61_001;
    const report = await round();
    assert.equal(report.cleaned.length, 1);
    assert.ok(cleaner.status().maxCompactionDelayMs > 0);
    registry.closeAll();
  });

  it('leaves a new index reading its first pass alone until it has caught up, then makes its key entries and cleans', async () => {
    const clock = { now: 10_000 };
    const policy = { ...SMALL, minCleanableDirtyRatio: 0 };
    const { registry, cleaner } = setup(new Map([['t', policy]]), clock);
    const round = (cleaner as unknown as { round(): Promise<CleanReport> }).round.bind(cleaner);
    // The store: 100 records over 10 keys, a pass carrying the last 10, 40 client writes among its copies; no end yet.
    const log = new StoreLog();
    await log.writeRecords(100, 10);
    await log.carry(new Set(Array.from({ length: 10 }, (_, i) => 90 + i)), 100, 40);
    log.batches.pop();
    const store = registry.ensure('t', 0);
    store.dropBelow(100);
    const rows = new RowBuffer(16);
    const got = await collectRows(log.from(100), [], 100, log.end, store.openTransactions, rows);
    const storeEnd = log.end + 1;
    store.ingest(rows, { nextOffset: got.nextOffset, logStartOffset: 100, lastStableOffset: storeEnd, highWatermark: storeEnd }, rollPolicy(policy), false);
    assert.equal(store.keysOwed, true);
    assert.equal((await round()).cleaned.length, 0, 'the end marker is still to be read');
    assert.equal(store.keysOwed, true);
    // Read to the store's end and the end never came (a pass stopped halfway): the clean makes the entries first.
    store.updateCheckpoint({ lastStableOffset: store.checkpoint.nextOffset, highWatermark: store.checkpoint.nextOffset });
    assert.equal((await round()).cleaned.length, 1);
    assert.equal(store.keysOwed, false);
    assert.ok(store.rowsIn(0, 100).length === 0, 'the client writes among the copies supersede them');
    assert.equal(store.keptKeys().length, 10);
    registry.closeAll();
  });

  it('cleans a partition once a round, so that a round under steady writes ends', { timeout: 20_000 }, async () => {
    const clock = { now: 10_000 };
    const policy = { ...SMALL, minCleanableDirtyRatio: 0.01 };
    let log: FakeLog | undefined;
    let passes = 0;
    // Each pass takes long enough for more updates to arrive: the partition is dirty again after it.
    const carrier = {
      stats: {},
      carry: async (store: Parameters<Carrier['carry']>[0]) => {
        passes++;
        for (let i = 0; i < 10; i++) await log!.append([{ key: `k${i % 5}`, value: `again-${passes}-${i}` }], 1000);
        await log!.feed(store, rollPolicy(policy));
        return undefined;
      },
    } as unknown as Carrier;
    const { registry, cleaner } = setup(new Map([['t', policy]]), clock, carrier);
    log = await fill(registry, 't', policy, 5, 30);
    const round = (cleaner as unknown as { round(): Promise<CleanReport> }).round.bind(cleaner);
    assert.equal((await round()).cleaned.length, 1, 'one clean, though the partition was dirty again after it');
    assert.ok(cleaner.rangeOf(registry.get('t', 0)!)!.dirtyRatio > 0.01, 'dirty again');
    assert.equal((await round()).cleaned.length, 1, 'the next round cleans it again');
    registry.closeAll();
  });

  it('marks a partition whose clean fails uncleanable until asked to clean it', async () => {
    const clock = { now: 0 };
    const { registry, cleaner } = setup(new Map([['t', SMALL]]), clock);
    await fill(registry, 't', SMALL, 5, 30);
    const store = registry.get('t', 0)!;
    // A clean whose SQL fails for a reason neither the file's nor the storage's: a table gone from under the store.
    const db = indexConnection(store);
    db.exec('DROP TABLE keys');
    const report = await cleaner.compactNow('t');
    assert.equal(report.failed.length, 1);
    assert.deepEqual(cleaner.status().uncleanable, [{ topic: 't', partition: 0 }]);
    assert.ok(errors.some((e) => /uncleanable/.test(e)));
    db.exec('CREATE TABLE keys (partition INTEGER NOT NULL, key BLOB NOT NULL, offset INTEGER NOT NULL, PRIMARY KEY (partition, key)) WITHOUT ROWID');
    const retry = await cleaner.compactNow('t');
    assert.equal(retry.failed.length, 0);
    assert.deepEqual(cleaner.status().uncleanable, []);
    registry.closeAll();
  });

  it('retries a clean the disk refused next round instead of marking the partition uncleanable', async () => {
    const clock = { now: 0 };
    const policy = { ...SMALL, minCleanableDirtyRatio: 0.01 };
    const { registry, cleaner, published } = setup(new Map([['full', policy]]), clock);
    // Distinct keys: a first clean deletes nothing and must add every key to the keys table.
    await fill(registry, 'full', policy, 500, 500);
    const store = registry.get('full', 0)!;
    // The file may not grow: SQLite answers SQLITE_FULL, as on a full filesystem (a limit of the store's own connection).
    const db = indexConnection(store);
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.pragma(`max_page_count = ${db.pragma('page_count', { simple: true }) as number}`);
    const before = { checkpoint: { ...store.checkpoint }, rows: store.rowCount };
    published.length = 0;
    errors.length = 0;
    for (let i = 0; i < 2; i++) {
      const report = await cleaner.compactNow('full');
      assert.match(report.failed[0]?.error ?? '', /full/);
    }
    assert.deepEqual(cleaner.status().uncleanable, [], 'not uncleanable: the file is fine');
    assert.deepEqual({ checkpoint: store.checkpoint, rows: store.rowCount }, before, 'nothing of the failed clean is taken for done');
    assert.deepEqual(published, [], 'nor shown');
    assert.equal(errors.filter((e) => /storage of a partition index failed/.test(e)).length, 1, 'said once');

    db.pragma('max_page_count = 1000000');
    cleaner.start();
    const deadline = Date.now() + 5000;
    while (published.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
    await cleaner.close();
    assert.ok(store.checkpoint.firstDirty > 0, 'the next round cleaned it');
    registry.closeAll();
  });

  it('applies compact,delete retention: asks the upstream to delete and drops the records from the view', async () => {
    const clock = { now: 100_000 };
    const policy = { ...SMALL, delete: true, retentionMs: 50_000 };
    const { registry, cleaner, deletes, published } = setup(new Map([['t', policy]]), clock);
    const log = await fill(registry, 't', policy, 100, 20, 10_000);
    for (let i = 0; i < 20; i++) await log.append([{ key: `new${i}`, value: 'v' }], 90_000);
    await log.feed(registry.get('t', 0)!, rollPolicy(policy));
    const store = registry.get('t', 0)!;
    const firstYoung = store.segments.find((s) => s.maxTimestamp === 90_000)!.base;
    const report = await cleaner.compactNow('t');
    assert.deepEqual(report.retention, [{ topic: 't', partition: 0, logStartOffset: firstYoung, upstream: true }]);
    assert.deepEqual(deletes, [['t', 0, firstYoung]]);
    assert.equal(store.checkpoint.logStartOffset, firstYoung);
    const last = published.at(-1)!.snapshot!;
    assert.ok(last.cleanedUpTo >= firstYoung);
    assert.equal(store.offsetsBelowStats(Infinity).min, firstYoung);
    registry.closeAll();
  });
});
