import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { BATCH_HEADER_SIZE, iterateBatches } from '../../../../src/protocol/records/batch.js';
import { FakeIndex, FakeLog, readBatches, roundTrip, type FetchSpec, type SeenRecord } from './fake-log.js';
import { bed, OTHER_ID, readLikeJava, scattered, spec, TOPIC_ID, type Bed } from './fetch-bed.js';
import { seededRng, type Rng } from '../../protocol/sample-body.js';

type Batches = Awaited<ReturnType<typeof readBatches>>;

/** Offsets from `first` in steps of `step`, below `end`. */
function every(first: number, step: number, end: number): number[] {
  const out: number[] = [];
  for (let o = first; o < end; o += step) out.push(o);
  return out;
}

/** Uncompressed batches of ten records: raw windows of a known size. */
async function uncompressed(log: FakeLog, batches: number): Promise<void> {
  for (let i = 0; i < batches; i++) await log.append({ count: 10 });
}

/** Answers are one run of batches in offset order: no batch overlaps or precedes the last one. */
function assertOrdered(out: Batches, position: number, what: string): void {
  let after = position - 1;
  for (const [i, b] of out.batches.entries()) {
    if (i === 0) assert.ok(b.last >= position, `${what}: the first batch ends at or after the fetch offset`);
    else assert.ok(b.base > after, `${what}: batch at ${b.base} follows the one ending at ${after}`);
    after = b.last;
  }
}

describe('reading on past one upstream window', () => {
  test('fills the answer up to the partition limit: each answer leaves no room for the next batch', async () => {
    const survivors = every(3, 20, 600);
    const b = await bed(async ({ c0 }) => {
      await scattered(c0, 60, 10);
      return { c0: new FakeIndex(survivors, c0.end) };
    });
    const limit = 1000;
    const answers: Buffer[] = [];
    let position = 0;
    const seen: SeenRecord[] = [];
    let end = b.logs['c-0']!.end;
    while (position < end) {
      const { response } = await roundTrip(b.view, b.upstream, spec(position, {}, limit));
      end = Number(response.responses[0].partitions[0].highWatermark);
      const records: Buffer = response.responses[0].partitions[0].records!;
      if (records.length === 0 && position >= end) break;
      const out = await readBatches(records);
      assertOrdered(out, position, `fetch at ${position}`);
      assert.ok(records.length <= limit, `${records.length} bytes for a limit of ${limit}`);
      answers.push(records);
      seen.push(...out.records.filter((r) => r.offset >= position));
      position = out.batches[out.batches.length - 1]!.last + 1;
    }
    assert.deepEqual(
      seen.map((r) => r.offset),
      survivors,
    );
    assert.ok(answers.length <= 6, `${answers.length} fetches for ${survivors.length} survivors of ~120 bytes each`);
    for (let i = 0; i + 1 < answers.length; i++) {
      const next = iterateBatches(answers[i + 1]!).batches[0]!;
      assert.ok(answers[i]!.length + next.bytes.length > limit, `answer ${i} (${answers[i]!.length} bytes) had room for the batch at ${next.baseOffset}`);
    }
  });

  test('stops at the horizon: no read starts at or past it', async () => {
    const horizon = 2000;
    const setup = (survivors: number[]) =>
      bed(async ({ c0 }) => {
        await uncompressed(c0, 400);
        return { c0: new FakeIndex(survivors, horizon) };
      });
    const limit = 64 * 1024;
    // The client's own read reaches past the horizon: it goes as it is, with room to spare.
    const reached = await setup([1500]);
    const first = await roundTrip(reached.view, reached.upstream, spec(0, {}, limit));
    const records: Buffer = first.response.responses[0].partitions[0].records!;
    const offsets = (await readBatches(records)).records.map((r) => r.offset);
    assert.deepEqual(reached.upstream.reads, []);
    assert.equal(offsets[0], 1500);
    assert.ok(offsets.length > 100, 'the records past the horizon that read returned go out unfiltered');
    assert.deepEqual(offsets.slice(1), every(horizon, 1, horizon + offsets.length - 1));
    assert.ok(records.length < limit - 16 * 1024, `${records.length} bytes: the limit did not stop it`);
    // A read on that crosses the horizon fills the room with the uncleaned records after it, as
    // Kafka's uncleaned head would, and is the last.
    const crossed = await setup([5, 1500]);
    const { response } = await roundTrip(crossed.view, crossed.upstream, spec(0, {}, limit));
    const out = await readBatches(response.responses[0].partitions[0].records);
    assertOrdered(out, 0, 'the answer');
    assert.deepEqual(
      crossed.upstream.reads.map((r) => r.fetchOffset),
      [1500],
    );
    assert.deepEqual(
      out.records.slice(0, 3).map((r) => r.offset),
      [5, 1500, horizon],
    );
    assert.ok(response.responses[0].partitions[0].records!.length <= limit);
  });

  test('stops at the client’s max wait; with nothing for the client yet, one read comes even past it', async () => {
    const survivors = every(5, 30, 300);
    const setup = () =>
      bed(async ({ c0 }) => {
        await uncompressed(c0, 30);
        return { c0: new FakeIndex(survivors, c0.end) };
      });
    // An upstream that takes 200 ms a read and answers at most 2000 bytes, whatever is asked.
    const slow = (b: Bed) => {
      const read = b.upstream.readPartition.bind(b.upstream);
      b.upstream.readPartition = async (r) => {
        b.now.ms += 200;
        return read({ ...r, maxBytes: Math.min(r.maxBytes, 2000) });
      };
    };
    const waited = await setup();
    slow(waited);
    const { response } = await roundTrip(waited.view, waited.upstream, spec(0, { maxWaitMs: 500 }, 2000));
    const out = await readBatches(response.responses[0].partitions[0].records);
    assert.equal(waited.view.stats.extraReads, 3, 'reads at +0, +200 and +400 ms; none at +600');
    assert.deepEqual(
      out.records.map((r) => r.offset),
      survivors.slice(0, 4),
    );
    const rest = await readLikeJava(waited, out.batches[out.batches.length - 1]!.last + 1, { maxWaitMs: 500 }, 2000);
    assert.deepEqual(
      rest.seen.map((r) => r.offset),
      survivors.slice(4),
    );

    const hurried = await setup();
    slow(hurried);
    const some = await roundTrip(hurried.view, hurried.upstream, spec(0, { maxWaitMs: 0 }, 2000));
    assert.deepEqual(
      (await readBatches(some.response.responses[0].partitions[0].records)).records.map((r) => r.offset),
      [5],
    );
    assert.equal(hurried.view.stats.extraReads, 0, 'survivors in hand and no wait: the answer goes as it is');
    // The cleaner removes 35 after planning: the answer would hold nothing.
    const pending = roundTrip(hurried.view, hurried.upstream, spec(35, { maxWaitMs: 0 }, 2000));
    hurried.indexes['c-0']!.setSurvivors(survivors.filter((o) => o !== 35));
    const none = await pending;
    assert.deepEqual(
      (await readBatches(none.response.responses[0].partitions[0].records)).records.map((r) => r.offset),
      [65],
    );
    assert.equal(hurried.view.stats.extraReads, 1);
  });

  test('keeps to the response max bytes beside another topic, which passes byte for byte', async () => {
    const survivors = every(5, 20, 300);
    const b = await bed(async ({ c0, plain }) => {
      await scattered(c0, 30, 10);
      await scattered(plain, 5, 10, 2);
      return { c0: new FakeIndex(survivors, c0.end) };
    });
    const plainBytes = b.logs['plain-0']!.read(0, 1 << 20, true).length;
    const maxBytes = plainBytes + 700;
    const { response } = await roundTrip(b.view, b.upstream, {
      maxBytes,
      topics: [
        { topic: 'plain', topicId: OTHER_ID, partitions: [{ partition: 0, fetchOffset: 0 }] },
        { topic: 'c', topicId: TOPIC_ID, partitions: [{ partition: 0, fetchOffset: 0 }] },
      ],
    });
    const plain: Buffer = response.responses[0].partitions[0].records!;
    const c: Buffer = response.responses[1].partitions[0].records!;
    assert.ok(plain.equals(b.logs['plain-0']!.read(0, 1 << 20, true)));
    assert.ok(plain.length + c.length <= maxBytes, `${plain.length} + ${c.length} bytes for a max of ${maxBytes}`);
    const out = await readBatches(c);
    assertOrdered(out, 0, 'the compacted partition');
    const offsets = out.records.map((r) => r.offset);
    assert.deepEqual(offsets, survivors.slice(0, offsets.length));
    assert.ok(offsets.length >= 4, `${offsets.length} survivors in 700 bytes: it read on`);
    assert.ok(c.length + c.length / offsets.length > 700, 'and stopped only when the next one would not fit');
    assert.equal(b.upstream.reads.length, 1, 'one read on brought more than the room: no more reads');
  });

  test('past the last survivor the log ends for the client: no empty batch, with room or without', async () => {
    const setup = () =>
      bed(async ({ c0 }) => {
        await uncompressed(c0, 10);
        return { c0: new FakeIndex([5], c0.end) };
      });
    const roomy = await setup();
    const whole = await roundTrip(roomy.view, roomy.upstream, spec(0));
    const [survivor, ...after] = iterateBatches(whole.response.responses[0].partitions[0].records!).batches;
    assert.equal(after.length, 0, 'nothing after the survivor');
    assert.equal(whole.response.responses[0].partitions[0].highWatermark, 10n);
    const limit = survivor!.bytes.length + 30;
    const tight = await setup();
    const { response } = await roundTrip(tight.view, tight.upstream, spec(0, {}, limit));
    const records: Buffer = response.responses[0].partitions[0].records!;
    assert.ok(records.length <= limit, `${records.length} bytes for a limit of ${limit}`);
    assert.deepEqual(
      (await readBatches(records)).batches.map((x) => [x.base, x.last, x.count]),
      [[0, 9, 1]],
    );
    const rest = await readLikeJava(tight, 10, {}, limit);
    assert.deepEqual([rest.seen, rest.fetches, rest.position, rest.highWatermark], [[], 1, 10, 10]);
  });

  test('when the cleaner overtakes a read on and nothing it brings fits, the empty batch still moves the client on', async () => {
    const b = await bed(async ({ c0, c1 }) => {
      await uncompressed(c0, 30);
      await uncompressed(c1, 3);
      return { c0: new FakeIndex([20, 250, 260], c0.end), c1: new FakeIndex(every(0, 1, 30), 30) };
    });
    const index = b.indexes['c-0']!;
    const read = b.upstream.readPartition.bind(b.upstream);
    b.upstream.readPartition = async (r) => {
      const answer = read(r);
      index.setSurvivors([260]);
      return answer;
    };
    const pending = roundTrip(b.view, b.upstream, {
      topics: [
        {
          topic: 'c',
          topicId: TOPIC_ID,
          partitions: [
            { partition: 0, fetchOffset: 0, partitionMaxBytes: 100 },
            { partition: 1, fetchOffset: 0 },
          ],
        },
      ],
    });
    index.setSurvivors([250, 260]);
    const { response } = await pending;
    assert.deepEqual(
      b.upstream.reads.map((r) => r.fetchOffset),
      [250],
      'it read on, found 250 gone and 260 too big',
    );
    const out = await readBatches(response.responses[0].partitions[0].records);
    assert.deepEqual(
      out.batches.map((x) => [x.base, x.last, x.count]),
      [[20, 29, 0]],
    );
  });

  test('an answer holds its survivors, not its reads: each read goes back before the next is made', async () => {
    const survivors = every(5, 40, 20_000);
    const b = await bed(async ({ c0, c1 }) => {
      for (let i = 0; i < 200; i++) {
        await c0.append({ count: 100, valueSize: 200 });
        await c1.append({ count: 100, valueSize: 200 });
      }
      return { c0: new FakeIndex(survivors, c0.end), c1: new FakeIndex(survivors, c1.end) };
    });
    const partitions = [0, 1].map((partition) => ({ partition, fetchOffset: 0, partitionMaxBytes: 1 << 20 }));
    const { response } = await roundTrip(b.view, b.upstream, { topics: [{ topic: 'c', topicId: TOPIC_ID, partitions }] });
    assert.deepEqual(
      b.upstream.reads.map((r) => r.partition),
      [0, 1],
      'each partition read on',
    );
    assert.deepEqual(b.upstream.releasedAtRead, [0, 1], 'the first read was given back before the second was made');
    assert.equal(b.upstream.released, 2);
    // Given back reads are overwritten (FakeUpstream): the answers' batches are copies, CRCs intact.
    for (const p of response.responses[0].partitions) {
      assert.deepEqual(
        (await readBatches(p.records)).records.map((r) => r.offset),
        survivors,
      );
    }
  });

  test('large answers of fetches served at once each come out whole, their reads given back', async () => {
    const survivors = every(2, 3, 6000);
    const b = await bed(async ({ c0 }) => {
      for (let i = 0; i < 60; i++) await c0.append({ count: 100, valueSize: 300 });
      return { c0: new FakeIndex(survivors, c0.end) };
    });
    const limit = 256 * 1024;
    for (const round of ['first', 'second']) {
      const positions = [0, 1500, 3000, 4500];
      const results = await Promise.all(positions.map((position) => roundTrip(b.view, b.upstream, spec(position, {}, limit))));
      for (const [i, { response }] of results.entries()) {
        const records: Buffer = response.responses[0].partitions[0].records!;
        assert.ok(records.length > 64 * 1024 && records.length <= limit, `${round}: ${records.length} bytes at ${positions[i]}`);
        const offsets = (await readBatches(records)).records.map((r) => r.offset).filter((o) => o >= positions[i]!);
        assert.ok(offsets.length > 200, `${round}: ${offsets.length} records at ${positions[i]}`);
        assert.deepEqual(offsets, survivors.filter((o) => o >= positions[i]!).slice(0, offsets.length), `${round}: the survivors from ${positions[i]}`);
      }
    }
    assert.ok(b.upstream.reads.length > 0, 'the answers read on');
    assert.equal(b.upstream.released, b.upstream.reads.length);
  });

  test('an unreadable batch met reading on waits for the client’s own fetch, which brings it as read', async () => {
    const b = await bed(async ({ c0 }) => {
      await uncompressed(c0, 30);
      return { c0: new FakeIndex([5, 105, 205, 255], c0.end) };
    });
    const bad = b.logs['c-0']!.batches[20]!;
    // The first record's length, as a varint far past the batch's end.
    bad.bytes[BATCH_HEADER_SIZE]! = 0xfe;
    bad.bytes[BATCH_HEADER_SIZE + 1]! = 0x7f;
    const limit = 3000;
    const seen: number[] = [];
    let position = 0;
    for (;;) {
      const { response } = await roundTrip(b.view, b.upstream, spec(position, {}, limit));
      const records: Buffer = response.responses[0].partitions[0].records!;
      assert.ok(records.length <= limit, `${records.length} bytes at ${position} for a limit of ${limit}`);
      if (records.includes(bad.bytes)) {
        assert.ok(records.equals(b.logs['c-0']!.read(bad.base, limit, true)), 'the upstream’s own read, unfiltered');
        break;
      }
      const out = await readBatches(records);
      seen.push(...out.records.map((r) => r.offset));
      position = out.batches[out.batches.length - 1]!.last + 1;
    }
    assert.deepEqual(seen, [5, 105]);
  });

  for (let seed = 1; seed <= 24; seed++) {
    test(`seed ${seed}: random logs, limits and cleaner moves; every fetch makes progress within the limits`, async () => {
      await randomReads(seededRng(seed));
    });
  }
});

interface Reader {
  partition: number;
  position: number;
  seen: number[];
  /** Survivors the cleaner removed before this reader reached them. */
  removed: Set<number>;
}

const pick = (rng: Rng, lo: number, hi: number) => lo + Math.floor(rng() * (hi - lo + 1));

/**
 * Two partitions of random batches (sizes, codecs, record counts), random survivors and horizon,
 * read Java-like with random partition and response limits in random order; now and then the
 * cleaner removes survivors not yet read, between planning and answering or while the proxy reads
 * on. Every answer must hold one run of ordered batches within Kafka's limits, and every fetch
 * must move some reader on.
 */
async function randomReads(rng: Rng): Promise<void> {
  const survivorsOf: Record<number, number[]> = {};
  const horizons: Record<number, number> = {};
  const b = await bed(async ({ c0, c1 }) => {
    const indexes: FakeIndex[] = [];
    for (const [p, log] of [c0, c1].entries()) {
      const batches = pick(rng, 5, 60);
      for (let i = 0; i < batches; i++) await log.append({ count: pick(rng, 1, 20), codec: pick(rng, 0, 4), valueSize: pick(rng, 10, 200) });
      const density = rng() * 0.3;
      const horizon = rng() < 0.5 ? log.end : pick(rng, 0, log.end);
      survivorsOf[p] = every(0, 1, horizon).filter(() => rng() < density);
      horizons[p] = horizon;
      indexes.push(new FakeIndex(survivorsOf[p]!, horizon));
    }
    return { c0: indexes[0]!, c1: indexes[1]! };
  });
  const readers: Reader[] = [0, 1].map((partition) => ({ partition, position: 0, seen: [], removed: new Set() }));
  // Survivors before `from` may already be in the answer being put together: they stay.
  const clean = (r: Reader, from: number) => {
    for (const o of survivorsOf[r.partition]!) if (o >= from && rng() < 0.5) r.removed.add(o);
    b.indexes[`c-${r.partition}`]!.setSurvivors(survivorsOf[r.partition]!.filter((o) => !r.removed.has(o)));
  };
  const read = b.upstream.readPartition.bind(b.upstream);
  b.upstream.readPartition = async (request) => {
    const answer = read(request);
    if (rng() < 0.2) clean(readers[request.partition]!, request.fetchOffset);
    return answer;
  };
  const logEnds = [b.logs['c-0']!.end, b.logs['c-1']!.end];
  // Where each reader is told the log ends: the upstream's, or before it when nothing it sees lies past that.
  const ends = [...logEnds];
  let fetches = 0;
  while (readers.some((r) => r.position < ends[r.partition]!)) {
    assert.ok(++fetches < 2000, 'the readers reach the end');
    const order = rng() < 0.5 ? readers : [...readers].reverse();
    const maxBytes = rng() < 0.3 ? 50 << 20 : pick(rng, 100, 12_000);
    const limits = order.map(() => pick(rng, 80, 6000));
    const request: FetchSpec = {
      maxBytes,
      maxWaitMs: rng() < 0.2 ? 0 : 500,
      topics: [
        { topic: 'c', topicId: TOPIC_ID, partitions: order.map((r, i) => ({ partition: r.partition, fetchOffset: r.position, partitionMaxBytes: limits[i] })) },
      ],
    };
    const pending = roundTrip(b.view, b.upstream, request);
    if (rng() < 0.3) {
      const r = readers[pick(rng, 0, 1)]!;
      clean(r, r.position);
    }
    const { response } = await pending;
    // Reads on are given back (and overwritten, see FakeUpstream) as soon as they are viewed: the
    // response's batches must be copies, which the CRC checks of readBatches below confirm.
    assert.equal(b.upstream.released, b.upstream.reads.length, 'every read on is given back');
    const parts = response.responses[0].partitions as { partitionIndex: number; errorCode: number; records: Buffer | null }[];
    let total = 0;
    let batchCount = 0;
    let moved = false;
    for (const [i, p] of parts.entries()) {
      assert.equal(p.errorCode, 0);
      const r = readers[p.partitionIndex]!;
      const records = p.records ?? Buffer.alloc(0);
      const out = await readBatches(records);
      assertOrdered(out, r.position, `partition ${r.partition} at ${r.position}`);
      const firstWithData = parts.slice(0, i).every((q) => (q.records?.length ?? 0) === 0);
      if (records.length > limits[i]!)
        assert.ok(
          firstWithData && out.batches.length === 1 && out.tail === 0,
          `partition ${r.partition}: ${records.length} bytes over its limit of ${limits[i]}`,
        );
      total += records.length;
      batchCount += out.batches.length;
      r.seen.push(...out.records.filter((x) => x.offset >= r.position).map((x) => x.offset));
      const last = out.batches[out.batches.length - 1];
      if (last && last.last + 1 > r.position) {
        r.position = last.last + 1;
        moved = true;
      }
      const hw = Number((p as unknown as { highWatermark: bigint }).highWatermark);
      assert.ok(hw <= logEnds[r.partition]!, `partition ${r.partition}: told the log ends at ${hw}, past the upstream's ${logEnds[r.partition]}`);
      assert.ok(hw >= r.position, `partition ${r.partition}: told the log ends at ${hw}, before its position ${r.position}`);
      if (hw < ends[r.partition]!) moved = true;
      ends[r.partition] = hw;
    }
    if (total > maxBytes) assert.equal(batchCount, 1, `${total} bytes over the response max of ${maxBytes}, in more than one batch`);
    assert.ok(moved, `fetch ${fetches} moved no reader on`);
  }
  for (const r of readers) {
    const end = logEnds[r.partition]!;
    const expected = [...survivorsOf[r.partition]!.filter((o) => !r.removed.has(o)), ...every(horizons[r.partition]!, 1, end)];
    assert.deepEqual(r.seen, expected, `partition ${r.partition}`);
  }
}
