import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { type ViewedBatch } from '../../../../src/compaction/fetch-view/visible-records.js';
import { CHUNK_OVERHEAD, ROW_BYTES, ViewCache } from '../../../../src/compaction/fetch-view/view-cache.js';
import { FakeIndex, readBatches, roundTrip, type FetchSpec } from './fake-log.js';
import { bed, TOPIC_ID, type Bed } from './fetch-bed.js';
import { seededRng, type Rng } from '../../protocol/sample-body.js';

function batch(base: number, last: number, bytes = 100, rebuilt = true): ViewedBatch {
  return { base, last, rawBytes: 1000, recordCount: last - base + 1, bytes: Buffer.alloc(bytes, base % 251), kept: 1, rebuilt, markerOf: null, batches: 1 };
}

const bases = (batches: ViewedBatch[] | undefined) => batches?.map((b) => b.base);
const ALL = { maxBytes: Infinity, oneAnyway: true };
const pick = (rng: Rng, min: number, max: number) => min + Math.floor(rng() * (max - min + 1));

describe('ViewCache', () => {
  test('serves the batches from the one holding the offset up to the first gap', () => {
    const cache = new ViewCache(1 << 20);
    const snapshot = {};
    cache.record('t', 0, snapshot, [batch(0, 9), batch(10, 19), batch(20, 29)]);
    cache.record('t', 0, snapshot, [batch(40, 49), batch(50, 59)]);
    assert.deepEqual(bases(cache.from('t', 0, snapshot, 15, 0, ALL)), [10, 20]);
    assert.deepEqual(bases(cache.from('t', 0, snapshot, 40, 0, ALL)), [40, 50]);
    assert.equal(cache.from('t', 0, snapshot, 35, 0, ALL), undefined, 'nothing holds 35');
    assert.equal(cache.from('t', 0, snapshot, 60, 0, ALL), undefined);
    assert.equal(cache.from('t', 1, snapshot, 15, 0, ALL), undefined, 'another partition');
    cache.record('t', 0, snapshot, [batch(30, 39)]);
    assert.deepEqual(bases(cache.from('t', 0, snapshot, 15, 0, ALL)), [10, 20, 30, 40, 50], 'the gap is filled');
    assert.equal(cache.stats.reads, 3);
  });

  test('a batch starting before the client offset is not served: its records before it were kept', () => {
    const cache = new ViewCache(1 << 20);
    const snapshot = {};
    cache.record('t', 0, snapshot, [batch(0, 9), batch(10, 19)]);
    assert.equal(cache.from('t', 0, snapshot, 12, 11, ALL), undefined);
    assert.deepEqual(bases(cache.from('t', 0, snapshot, 12, 10, ALL)), [10]);
  });

  test('a new survivor snapshot (a clean) drops the partition', () => {
    const cache = new ViewCache(1 << 20);
    const before = {};
    cache.record('t', 0, before, [batch(0, 9)]);
    assert.ok(cache.stats.bytes > 0);
    assert.equal(cache.from('t', 0, {}, 0, 0, ALL), undefined);
    assert.equal(cache.stats.bytes, 0);
    assert.equal(cache.from('t', 0, before, 0, 0, ALL), undefined, 'gone for good');
  });

  test('batches already held are skipped; what is kept is copied into one buffer of its own', () => {
    const cache = new ViewCache(1 << 20);
    const snapshot = {};
    const upstream = Buffer.alloc(100, 7);
    const raw: ViewedBatch = { ...batch(0, 9), bytes: upstream.subarray(0, 50), rebuilt: false };
    const rebuilt = batch(10, 19);
    cache.record('t', 0, snapshot, [raw, rebuilt]);
    const bytes = cache.stats.bytes;
    cache.record('t', 0, snapshot, [batch(0, 9), batch(10, 19)]);
    assert.equal(cache.stats.bytes, bytes);
    upstream.fill(0);
    const served = cache.from('t', 0, snapshot, 0, 0, ALL)!;
    assert.ok(served[0]!.bytes.equals(Buffer.alloc(50, 7)), 'a copy, not the reused read buffer');
    assert.ok(served[1]!.bytes.equals(rebuilt.bytes));
    assert.notEqual(served[1]!.bytes.buffer, rebuilt.bytes.buffer, 'not a slice of a pool slab a small rebuilt batch may lie in');
    assert.equal(served[0]!.bytes.buffer, served[1]!.bytes.buffer, 'one allocation per read');
    assert.equal(served[1]!.bytes.buffer.byteLength, 150);
  });

  test('stays within its budget, dropping the partition read least recently', () => {
    // A partition of one batch of 1,000 bytes costs its bytes, its chunk and its row.
    const one = 1000 + CHUNK_OVERHEAD + ROW_BYTES;
    const cache = new ViewCache(3 * one);
    const snapshot = {};
    cache.record('t', 0, snapshot, [batch(0, 9, 1000)]);
    assert.equal(cache.stats.bytes, one);
    cache.record('t', 1, snapshot, [batch(0, 9, 1000)]);
    cache.from('t', 0, snapshot, 0, 0, ALL);
    cache.record('t', 2, snapshot, [batch(0, 9, 1000), batch(10, 19, 1000)]);
    assert.ok(cache.stats.bytes <= 3 * one);
    assert.equal(cache.from('t', 1, snapshot, 0, 0, ALL), undefined, 'partition 1 was read least recently');
    assert.ok(cache.from('t', 0, snapshot, 0, 0, ALL));
    assert.deepEqual(bases(cache.from('t', 2, snapshot, 0, 0, ALL)), [0, 10]);
    const off = new ViewCache(0);
    off.record('t', 0, snapshot, [batch(0, 9)]);
    assert.equal(off.from('t', 0, snapshot, 0, 0, ALL), undefined);
    assert.equal(off.enabled, false);
  });

  test('what does not fit is left off the end of a record, and the rows a partition has room for count', () => {
    const cache = new ViewCache(600);
    const snapshot = {};
    cache.record('t', 0, snapshot, [batch(0, 9), batch(10, 19), batch(20, 29)]);
    assert.deepEqual(bases(cache.from('t', 0, snapshot, 0, 0, ALL)), [0, 10], 'the third batch did not fit');
    assert.equal(cache.stats.bytes, 2 * 100 + CHUNK_OVERHEAD + 2 * ROW_BYTES);
    cache.record('t', 0, snapshot, [batch(20, 29)]);
    assert.deepEqual(bases(cache.from('t', 0, snapshot, 0, 0, ALL)), [0, 10]);
    // Room grows by half again: for 1, 2, 3 and then 5 rows.
    const growing = new ViewCache(1 << 20);
    for (let base = 0; base < 40; base += 10) growing.record('t', 0, snapshot, [batch(base, base + 9)]);
    assert.equal(growing.stats.bytes, 4 * (100 + CHUNK_OVERHEAD) + 5 * ROW_BYTES);
  });

  test('batches recorded out of order are served in order, with every field as recorded', () => {
    const cache = new ViewCache(1 << 20);
    const snapshot = {};
    const rng = seededRng(7);
    const all: ViewedBatch[] = [];
    for (let base = 0; base < 2000; base += 10) {
      all.push({
        base,
        last: base + 9,
        rawBytes: pick(rng, 61, 1 << 20),
        recordCount: 10,
        bytes: Buffer.alloc(pick(rng, 61, 300), base % 251),
        kept: pick(rng, 0, 10),
        rebuilt: rng() < 0.5,
        markerOf: rng() < 0.2 ? BigInt.asIntN(64, BigInt(pick(rng, 0, 1 << 30)) << 33n) : null,
        batches: 1,
      });
    }
    // Runs recorded in a shuffled order, each a stretch of neighbours, overlapping some held.
    const runs: ViewedBatch[][] = [];
    for (let i = 0; i < all.length; i += 7) runs.push(all.slice(Math.max(0, i - 2), i + 7));
    for (let i = runs.length - 1; i > 0; i--) {
      const j = pick(rng, 0, i);
      [runs[i], runs[j]] = [runs[j]!, runs[i]!];
    }
    for (const run of runs) cache.record('t', 0, snapshot, run);
    const served = cache.from('t', 0, snapshot, 0, 0, ALL)!;
    assert.equal(served.length, all.length);
    for (const [i, b] of served.entries()) {
      const { bytes, ...fields } = all[i]!;
      const { bytes: got, ...gotFields } = b;
      assert.deepEqual(gotFields, fields, `batch ${i}`);
      assert.ok(got.equals(bytes), `batch ${i}'s bytes`);
    }
  });

  test("neighbours that lost every record are one entry, with the last one's emptied bytes; markers stay apart", () => {
    const cache = new ViewCache(1 << 20);
    const snapshot = {};
    const empty = (base: number, bytes = 61): ViewedBatch => ({ ...batch(base, base + 9, bytes), kept: 0 });
    const marker: ViewedBatch = { ...empty(40), last: 40, recordCount: 1, markerOf: 7n };
    const recorded = [batch(0, 9), empty(10), empty(20, 62), empty(30, 63), marker, empty(41), empty(51, 64), batch(61, 70)];
    const copies = recorded.map((b) => ({ ...b }));
    cache.record('t', 0, snapshot, recorded);
    assert.deepEqual(recorded, copies, 'the batches handed over are left as they were');
    const served = cache.from('t', 0, snapshot, 0, 0, ALL)!;
    assert.deepEqual(
      served.map((b) => [b.base, b.last, b.recordCount, b.rawBytes, b.batches, b.bytes.length]),
      [
        [0, 9, 10, 1000, 1, 100],
        [10, 39, 30, 3000, 3, 63],
        [40, 40, 1, 1000, 1, 61],
        [41, 60, 20, 2000, 2, 64],
        [61, 70, 10, 1000, 1, 100],
      ],
    );
    assert.ok(served[1]!.bytes.equals(recorded[3]!.bytes), 'the last emptied batch of the run');
    assert.equal(served[2]!.markerOf, 7n);
    assert.equal(cache.stats.bytes, 100 + 63 + 61 + 64 + 100 + CHUNK_OVERHEAD + 5 * ROW_BYTES);
  });

  test('a read ends with the first batch an answer within its budget leaves out', () => {
    const cache = new ViewCache(1 << 20);
    const snapshot = {};
    const empty = (base: number) => ({ ...batch(base, base + 9), kept: 0 });
    cache.record('t', 0, snapshot, [batch(0, 9), empty(10), batch(20, 29), empty(30), batch(40, 49), batch(50, 59)]);
    assert.deepEqual(
      bases(cache.from('t', 0, snapshot, 0, 0, { maxBytes: 250, oneAnyway: false })),
      [0, 10, 20, 30, 40],
      'emptied batches cost nothing on the way',
    );
    assert.deepEqual(bases(cache.from('t', 0, snapshot, 0, 0, { maxBytes: 50, oneAnyway: false })), [0]);
    assert.deepEqual(bases(cache.from('t', 0, snapshot, 0, 0, { maxBytes: 50, oneAnyway: true })), [0, 10, 20], 'the first comes anyway');
    assert.deepEqual(bases(cache.from('t', 0, snapshot, 10, 10, { maxBytes: 0, oneAnyway: false })), [10, 20]);
  });
});

/** The same logs and survivors behind two fetch views: one with the cache, one without. */
async function twins(rng: Rng): Promise<{ cached: Bed; plain: Bed; survivors: number[]; horizon: number; end: number }> {
  const specs: { count: number; codec: number; valueSize: number }[] = [];
  for (let i = pick(rng, 20, 80); i > 0; i--) specs.push({ count: pick(rng, 1, 20), codec: pick(rng, 0, 4), valueSize: pick(rng, 10, 200) });
  let end = 0;
  for (const s of specs) end += s.count;
  const horizon = rng() < 0.5 ? end : pick(rng, 0, end);
  // Sparse survivors: most answers need reads on past the client's own window.
  const density = rng() * 0.1;
  const survivors: number[] = [];
  for (let o = 0; o < horizon; o++) if (rng() < density) survivors.push(o);
  const build = (cacheBytes: number) =>
    bed(
      async ({ c0 }) => {
        for (const s of specs) await c0.append(s);
        return { c0: new FakeIndex(survivors, horizon) };
      },
      { cacheBytes },
    );
  return { cached: await build(1 << 20), plain: await build(0), survivors, horizon, end };
}

/** A clean that removes some survivors: a new snapshot, as the worker publishes one. */
function clean(rng: Rng, beds: Bed[], survivors: number[], horizon: number): number[] {
  const kept = survivors.filter(() => rng() < 0.7);
  for (const b of beds) b.indexes['c-0'] = new FakeIndex(kept, horizon);
  return kept;
}

/** What a reader sees from `from` to the end, each answer checked against its limit and for progress. */
async function readToEnd(b: Bed, from: number, end: number, isolationLevel: number, limits: number[], what: string) {
  const seen: { offset: number; key: string | null; value: string | null }[] = [];
  let position = from;
  // Where the answers say the log ends: the upstream's, or the end of the last batch holding records the reader sees past it.
  let told = end;
  for (let fetches = 0; position < told; fetches++) {
    assert.ok(fetches < limits.length, `${what}: the reader reaches the end`);
    const limit = limits[fetches]!;
    const spec: FetchSpec = {
      isolationLevel,
      topics: [{ topic: 'c', topicId: TOPIC_ID, partitions: [{ partition: 0, fetchOffset: position, partitionMaxBytes: limit }] }],
    };
    const p = (await roundTrip(b.view, b.upstream, spec)).response.responses[0].partitions[0];
    assert.ok(p.highWatermark <= BigInt(end) && p.highWatermark >= BigInt(position), `${what}: told the log ends at ${p.highWatermark}`);
    told = Number(p.highWatermark);
    const out = await readBatches(p.records);
    if ((p.records?.length ?? 0) > limit) assert.equal(out.batches.length, 1, `${what}: ${p.records!.length} bytes over the limit of ${limit}`);
    seen.push(...out.records.filter((r) => r.offset >= position));
    const last = out.batches[out.batches.length - 1];
    if (!last && position >= told) break;
    assert.ok(last && last.last + 1 > position, `${what}: the fetch at ${position} moves the reader on`);
    position = last.last + 1;
  }
  return seen;
}

/**
 * Topic "c", partition 0, with a view cache: 100 batches of 20 records (2,000 offsets, codecs in
 * turn), a survivor every 13th offset from 7 below the cleaner's horizon.
 */
async function sparse(horizon: number): Promise<{ b: Bed; survivors: number[] }> {
  const survivors: number[] = [];
  for (let o = 7; o < horizon; o += 13) survivors.push(o);
  const b = await bed(
    async ({ c0 }) => {
      for (let i = 0; i < 100; i++) await c0.append({ count: 20, codec: i % 5 });
      return { c0: new FakeIndex(survivors, horizon) };
    },
    { cacheBytes: 1 << 20 },
  );
  return { b, survivors };
}

describe('reads served from the view cache', () => {
  test('readers see exactly what reads of the upstream show them, within the limits, reading the upstream less', async () => {
    let served = 0;
    for (let seed = 1; seed <= 40; seed++) {
      const rng = seededRng(seed);
      const { cached, plain, end, horizon, survivors: initial } = await twins(rng);
      let survivors = initial;
      // Readers from offset 0 and from anywhere, with any limits, at both isolation levels, and
      // now and then a clean between them. Where a cached stretch ends on a batch that lost every
      // record, that empty batch may end an answer that an upstream read would have run past:
      // positions can differ for a fetch, what the reader sees cannot.
      for (let pass = 0; pass < 6; pass++) {
        if (pass > 0 && rng() < 0.3) survivors = clean(rng, [cached, plain], survivors, horizon);
        const from = pass % 2 === 0 ? 0 : pick(rng, 0, end);
        const isolationLevel = rng() < 0.7 ? 0 : 1;
        const limits = Array.from({ length: 500 }, () => (rng() < 0.1 ? 1 << 20 : pick(rng, 200, 4000)));
        const what = `seed ${seed} pass ${pass} from ${from} isolation ${isolationLevel}`;
        const [a, b] = [await readToEnd(cached, from, end, isolationLevel, limits, what), await readToEnd(plain, from, end, isolationLevel, limits, what)];
        assert.deepEqual(a, b, what);
      }
      assert.ok(
        cached.upstream.reads.length <= plain.upstream.reads.length,
        `seed ${seed}: ${cached.upstream.reads.length} reads on with the cache, ${plain.upstream.reads.length} without`,
      );
      served += cached.view.cache.reads;
    }
    assert.ok(served > 50, `${served} reads on served from the cache`);
  });

  test('a fetch the cache holds asks the upstream for its offsets only: no records, and fewer bytes to wait for', async () => {
    const { b } = await sparse(2000);
    const fetch = (over: Partial<FetchSpec> = {}) =>
      roundTrip(b.view, b.upstream, {
        topics: [{ topic: 'c', topicId: TOPIC_ID, partitions: [{ partition: 0, fetchOffset: 0, partitionMaxBytes: 4000 }] }],
        ...over,
      });
    const cold = await fetch({ minBytes: 10_000 });
    assert.equal(cold.forwarded.topics[0].partitions[0].partitionMaxBytes, 4000, "nothing cached yet: the client's limit goes upstream");
    assert.equal(cold.forwarded.minBytes, 10_000);
    const seen = await readBatches(cold.response.responses[0].partitions[0].records);
    assert.ok(seen.records.length > 10);

    const warm = await fetch({ minBytes: 10_000 });
    const p = warm.forwarded.topics[0].partitions[0];
    assert.equal(p.partitionMaxBytes, 0, 'no records asked of the upstream');
    assert.equal(p.fetchOffset, 7n, 'from the first survivor, as before');
    const answer = warm.response.responses[0].partitions[0];
    assert.equal(warm.forwarded.minBytes, 10_000 - answer.records!.length, 'what the cache brings counts towards min bytes');
    assert.deepEqual((await readBatches(answer.records)).records, seen.records, 'the same records as the read of the upstream');
    assert.ok(answer.records!.length <= 4000);
    assert.equal((await fetch()).forwarded.minBytes, 0, 'a client waiting for one byte lets the upstream answer at once');

    await b.logs['c-0']!.append({ count: 20 });
    const later = (await fetch()).response.responses[0].partitions[0];
    assert.equal(later.highWatermark, 2020n, "the high watermark is the upstream's");
    assert.equal(later.logStartOffset, 0n);
    assert.deepEqual((await readBatches(later.records)).records, seen.records);

    const committed = await fetch({ isolationLevel: 1 });
    assert.equal(committed.forwarded.topics[0].partitions[0].partitionMaxBytes, 4000, 'read_committed reads the upstream, for its aborted transactions');
  });

  test('an answer from the cache that reaches the horizon reads on past it once, as an upstream read would have', async () => {
    const { b, survivors } = await sparse(1600);
    const fetch = () =>
      roundTrip(b.view, b.upstream, {
        topics: [{ topic: 'c', topicId: TOPIC_ID, partitions: [{ partition: 0, fetchOffset: 0, partitionMaxBytes: 1 << 20 }] }],
      });
    const offsets = async (r: Awaited<ReturnType<typeof fetch>>) =>
      (await readBatches(r.response.responses[0].partitions[0].records)).records.map((x) => x.offset);
    const head = Array.from({ length: 400 }, (_, i) => 1600 + i);
    assert.deepEqual(await offsets(await fetch()), [...survivors, ...head]);
    const reads = b.upstream.reads.length;
    const warm = await fetch();
    assert.equal(warm.forwarded.topics[0].partitions[0].partitionMaxBytes, 0);
    assert.deepEqual(await offsets(warm), [...survivors, ...head], 'the survivors from the cache, then the head up to the high watermark');
    assert.deepEqual(
      b.upstream.reads.slice(reads).map((r) => r.fetchOffset),
      [1600],
      'one read on, from the horizon',
    );
  });

  test("a fetch the cache holds still gets the upstream's error, or nothing at its high watermark", async () => {
    const survivors: number[] = [];
    for (let o = 0; o < 2000; o += 10) survivors.push(o);
    const b = await bed(
      async ({ c0 }) => {
        for (let i = 0; i < 100; i++) await c0.append({ count: 20 });
        return { c0: new FakeIndex(survivors, 2000) };
      },
      { cacheBytes: 1 << 20 },
    );
    const fetch = (fetchOffset: number) =>
      roundTrip(b.view, b.upstream, { topics: [{ topic: 'c', topicId: TOPIC_ID, partitions: [{ partition: 0, fetchOffset, partitionMaxBytes: 1 << 20 }] }] });
    await fetch(0);
    assert.equal((await fetch(1000)).forwarded.topics[0].partitions[0].partitionMaxBytes, 0, 'offset 1000 is cached');
    // The upstream lost the second half of the log (an unclean leader election).
    b.logs['c-0']!.batches.length = 50;
    const atEnd = await fetch(1000);
    assert.equal(atEnd.forwarded.topics[0].partitions[0].partitionMaxBytes, 0);
    const p = atEnd.response.responses[0].partitions[0];
    assert.equal(p.errorCode, 0);
    assert.equal(p.highWatermark, 1000n);
    assert.equal((await readBatches(p.records)).records.length, 0, "nothing past the upstream's high watermark");
    const past = (await fetch(1500)).response.responses[0].partitions[0];
    assert.equal(past.errorCode, 1, 'OFFSET_OUT_OF_RANGE, as the upstream says');
    assert.equal(past.records, null);
  });

  test('a second read from offset 0 reads nothing on from the upstream, and a clean brings the upstream back', async () => {
    const { b, survivors } = await sparse(2000);
    const readAll = async () => {
      let position = 0;
      const seen: number[] = [];
      while (position < 2000) {
        const { response } = await roundTrip(b.view, b.upstream, {
          topics: [{ topic: 'c', topicId: TOPIC_ID, partitions: [{ partition: 0, fetchOffset: position, partitionMaxBytes: 4000 }] }],
        });
        const out = await readBatches(response.responses[0].partitions[0].records);
        seen.push(...out.records.map((r) => r.offset).filter((o) => o >= position));
        position = out.batches[out.batches.length - 1]!.last + 1;
      }
      return seen;
    };
    assert.deepEqual(await readAll(), survivors);
    const first = b.upstream.reads.length;
    assert.ok(first > 0);
    assert.deepEqual(await readAll(), survivors);
    assert.equal(b.upstream.reads.length, first, 'no read on the second time');
    assert.ok(b.view.cache.reads > 0);
    const fewer = survivors.filter((o) => o % 2 === 0);
    b.indexes['c-0'] = new FakeIndex(fewer, 2000);
    assert.deepEqual(await readAll(), fewer, 'the new clean is what the reader sees');
    assert.ok(b.upstream.reads.length > first, 'read from the upstream again after the clean');
  });
});
