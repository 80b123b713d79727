import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { cleanPartition } from '../../../../src/engine/cleaner/clean-partition.js';
import { Condition, conditionHolds } from '../../../../src/engine/store/condition.js';
import { keyDigestInto, KEY_DIGEST_BYTES } from '../../../../src/engine/store/key-digest.js';
import { PartitionStore } from '../../../../src/engine/store/partition-store.js';
import { RecordFlag } from '../../../../src/engine/store/record-flags.js';
import { RowBuffer } from '../../../../src/engine/store/row-buffer.js';
import { seededRandom } from '../../../support/seeded-random.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-conditions-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
let files = 0;
const freshStore = () => PartitionStore.open(path.join(dir, `p${files++}.sqlite`), { topic: 't', partition: 0 }).store;
const ROLL = { segmentBytes: 200, maxSegmentMs: 1e12 };

/** One record of a generated log: its key, whether it is a tombstone, its condition. */
interface Written {
  key: number;
  tombstone: boolean;
  condition: number;
}

/**
 * A log of `n` records over `keys` keys in which writers race: conditions name the latest offset
 * a writer read, often stale, sometimes malformed; tombstones and If-None-Match mixed in.
 */
function generate(seed: number, n: number, keys: number): Written[] {
  const rnd = seededRandom(seed);
  const log: Written[] = [];
  const seen = new Map<number, number[]>();
  for (let o = 0; o < n; o++) {
    const key = Math.floor(rnd() * keys);
    const offsets = seen.get(key) ?? [];
    const r = rnd();
    let condition: number = Condition.None;
    if (r < 0.45 && offsets.length > 0) condition = offsets[Math.max(0, offsets.length - 1 - Math.floor(rnd() * 3))]!;
    else if (r < 0.6) condition = Condition.IfNoneMatch;
    else if (r < 0.63) condition = Condition.Never;
    else if (r < 0.68) condition = Math.floor(rnd() * (o + 1));
    log.push({ key, tombstone: rnd() < 0.12, condition });
    offsets.push(o);
    seen.set(key, offsets);
  }
  return log;
}

/** What every replica must decide: the verdicts in log order, and each key's latest live value. */
function model(log: Written[]): { won: boolean[]; latest: Map<number, number> } {
  const latest = new Map<number, { offset: number; tombstone: boolean }>();
  const won: boolean[] = [];
  log.forEach((w, o) => {
    const prev = latest.get(w.key);
    const live = prev && !prev.tombstone ? prev.offset : null;
    const ok = w.condition === Condition.None || conditionHolds(w.condition, live);
    won.push(ok);
    if (ok) latest.set(w.key, { offset: o, tombstone: w.tombstone });
  });
  const live = new Map<number, number>();
  for (const [k, v] of latest) if (!v.tombstone) live.set(k, v.offset);
  return { won, latest: live };
}

function digestOf(key: number): Buffer {
  const bytes = Buffer.from(`k${key}`);
  const out = Buffer.alloc(KEY_DIGEST_BYTES);
  keyDigestInto(bytes, 0, bytes.length, out, 0);
  return out;
}

function rowsOf(log: Written[], from: number, to: number): RowBuffer {
  const rows = new RowBuffer(4);
  for (let o = from; o < to; o++) {
    rows.pushBatch(o, o, 10, 1000 + o);
    const w = log[o]!;
    const i = rows.push(o, 1000 + o, 10, w.tombstone ? RecordFlag.Tombstone : 0);
    digestOf(w.key).copy(rows.keys, i * KEY_DIGEST_BYTES);
    rows.hasKey[i] = 1;
    if (w.condition !== Condition.None) rows.setCondition(i, w.condition);
  }
  return rows;
}

const position = (next: number, end = next) => ({ nextOffset: next, logStartOffset: 0, lastStableOffset: next, highWatermark: end });

/** Ingests [from, to) of the log in chunks of random sizes, cleaning now and then. */
function ingest(store: PartitionStore, log: Written[], from: number, to: number, rnd: () => number, end = log.length): void {
  for (let o = from; o < to;) {
    const next = Math.min(to, o + 1 + Math.floor(rnd() * 40));
    store.ingest(rowsOf(log, o, next), { ...position(next, end), logStartOffset: store.checkpoint.logStartOffset }, ROLL, false);
    o = next;
    const dirty = store.checkpoint.firstDirty;
    if (rnd() < 0.2 && store.firstUnjudged < 0) cleanPartition(store, dirty, dirty + Math.floor((o - dirty) * rnd()), 10_000, 1e9);
  }
}

function verdictsOf(store: PartitionStore, log: Written[], from = 0): (boolean | null)[] {
  return log.slice(from).map((w, i) => {
    if (w.condition === Condition.None) return true;
    const v = store.verdict(from + i);
    return v === 'won' ? true : v === 'void' ? false : null;
  });
}

function liveOf(store: PartitionStore, keys: number): Map<number, number> {
  const live = new Map<number, number>();
  for (let k = 0; k < keys; k++) {
    const latest = store.latestOf(digestOf(k));
    if (latest && !latest.tombstone) live.set(k, latest.offset);
  }
  return live;
}

describe('conditional records', () => {
  for (const seed of [1, 2, 3, 4, 5, 6, 7, 8]) {
    it(`every replica reaches the log's verdicts, however it reads and cleans (seed ${seed})`, () => {
      const keys = 5 + seed;
      const log = generate(seed, 400, keys);
      const want = model(log);
      const store = freshStore();
      ingest(store, log, 0, log.length, seededRandom(seed * 7));
      assert.deepEqual(verdictsOf(store, log), want.won);
      assert.deepEqual(liveOf(store, keys), want.latest);
      // No void record is ever a survivor or visible past the horizon.
      for (const row of store.rowsIn(0, log.length)) {
        if (row.flags & RecordFlag.Void) assert.ok(row.offset >= store.checkpoint.firstDirty, `void record ${row.offset} below the horizon`);
      }
      assert.deepEqual(
        store.voidsFrom(0),
        want.won.flatMap((ok, o) => (ok || o < store.checkpoint.firstDirty ? [] : [o])),
      );
      // A full clean with tombstones expired leaves each key's latest live value, and the verdicts.
      cleanPartition(store, store.checkpoint.firstDirty, log.length, 10_000, 1e9);
      cleanPartition(store, log.length, log.length, 1e10, 1);
      assert.deepEqual(liveOf(store, keys), want.latest);
      assert.deepEqual(store.voidsFrom(0), []);
      assert.deepEqual(verdictsOf(store, log), want.won);
      store.close();
    });
  }

  it('a replica new to a carried store judges the records after its start once the copies below it arrive', () => {
    const keys = 6;
    const log = generate(11, 300, keys);
    const want = model(log);
    const start = 180;
    // What a carry pass copied: the survivors below `start`, as a full clean leaves them.
    const carrier = freshStore();
    ingest(carrier, log, 0, start, seededRandom(3), start);
    cleanPartition(carrier, carrier.checkpoint.firstDirty, start, 10_000, 1e9);
    const survivors = carrier.rowsIn(0, start);
    carrier.close();

    const fresh = freshStore();
    fresh.dropBelow(start);
    // The store's records from its log start, then the pass: its start marker, its copies, its end.
    ingest(fresh, log, start, log.length, seededRandom(4), 10_000);
    assert.ok(fresh.firstUnjudged >= start, 'conditional records wait for the records below them');
    const pass = log.length;
    const copies = new RowBuffer(4);
    copies.events.push({ kind: 'start', at: pass, releaseEnd: start, topicStart: 0, time: 1 });
    survivors.forEach((row, i) => {
      const j = copies.pushCopy(row.offset, pass + 1 + i, row.timestamp, row.size, row.flags, row.horizon ?? -1);
      row.key!.copy(copies.keys, j * KEY_DIGEST_BYTES);
      copies.hasKey[j] = 1;
    });
    const passEnd = pass + 1 + survivors.length;
    copies.events.push({ kind: 'end', at: passEnd, pass, copies: survivors.length, releaseEnd: start, time: 2 });
    copies.pushBatch(pass, passEnd, 0, 2);
    fresh.ingest(copies, { nextOffset: passEnd + 1, logStartOffset: start, lastStableOffset: passEnd + 1, highWatermark: passEnd + 1 }, ROLL, false);
    assert.equal(fresh.firstUnjudged, -1);
    assert.deepEqual(verdictsOf(fresh, log, start), want.won.slice(start));
    assert.deepEqual(liveOf(fresh, keys), want.latest);
    fresh.close();
  });

  it('a replica that skipped records nobody carried judges once it has read the whole store', () => {
    const log = generate(12, 100, 4);
    const fresh = freshStore();
    fresh.dropBelow(40);
    ingest(fresh, log, 40, 70, seededRandom(5), 100);
    assert.ok(fresh.firstUnjudged >= 40);
    ingest(fresh, log, 70, 100, seededRandom(6), 100);
    assert.equal(fresh.firstUnjudged, -1);
    // Judged against what it holds, the records from 40 on: a condition naming an offset below is one that cannot hold.
    const rebased = log.slice(40).map((w) => ({ ...w, condition: w.condition >= 40 ? w.condition - 40 : w.condition >= 0 ? Condition.Never : w.condition }));
    assert.deepEqual(verdictsOf(fresh, log, 40), model(rebased).won);
    fresh.close();
  });

  it('keeps its verdicts and its waiting records across a restart', () => {
    const log = generate(13, 120, 5);
    const file = path.join(dir, 'restart.sqlite');
    const first = PartitionStore.open(file, { topic: 't', partition: 0 }).store;
    ingest(first, log, 0, 60, seededRandom(7));
    first.close();
    const again = PartitionStore.open(file, { topic: 't', partition: 0 }).store;
    ingest(again, log, 60, 120, seededRandom(8));
    assert.deepEqual(verdictsOf(again, log), model(log).won);
    assert.equal(again.conditional, true);
    again.close();
  });

  for (const seed of [21, 22, 23, 24]) {
    it(`foresees each conditional record's verdict when the index ends at it, as ingest then judges it (seed ${seed})`, () => {
      const log = generate(seed, 300, 4 + (seed % 3));
      const want = model(log);
      const store = freshStore();
      const rnd = seededRandom(seed * 5);
      let foreseen = 0;
      for (let o = 0; o < log.length;) {
        const w = log[o]!;
        if (w.condition !== Condition.None) {
          const ahead = store.foresee(o, digestOf(w.key), w.condition);
          assert.ok(ahead, `record ${o}: the index ends at it, so its verdict is known`);
          assert.equal(ahead === 'won', want.won[o], `record ${o}`);
          foreseen++;
        }
        // Not where the index ends: nothing to tell yet.
        assert.equal(store.foresee(o + 1, digestOf(w.key), Condition.IfNoneMatch), undefined);
        const next = Math.min(log.length, o + 1 + Math.floor(rnd() * 3));
        store.ingest(rowsOf(log, o, next), position(next, log.length), ROLL, false);
        o = next;
        const dirty = store.checkpoint.firstDirty;
        if (rnd() < 0.2) cleanPartition(store, dirty, dirty + Math.floor((o - dirty) * rnd()), 10_000, 1e9);
      }
      assert.ok(foreseen > 50);
      assert.deepEqual(verdictsOf(store, log), want.won);
      store.close();
    });
  }

  it('foresees nothing while records below the index wait for their copies', () => {
    const log = generate(25, 60, 3);
    const fresh = freshStore();
    fresh.dropBelow(20);
    ingest(fresh, log, 20, 40, seededRandom(9), 100);
    assert.equal(fresh.foresee(40, digestOf(0), Condition.IfNoneMatch), undefined);
    fresh.close();
  });
});
