import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createFetchView } from '../../../../src/compaction/fetch-view/fetch-view.js';
import { TopicIds } from '../../../../src/proxy/topic-ids.js';
import { ApiKey } from '../../../../src/protocol/messages.js';
import { FilterHarness } from '../../../support/filter-harness.js';
import { configView, FakeIndex, FakeUpstream, indexView, log, readBatches, roundTrip, type SeenRecord } from './fake-log.js';
import { bed, OTHER_ID, readLikeJava, scattered, spec, TOPIC_ID, type Bed } from './fetch-bed.js';

/** Reads like kafkajs: next offset is the last record's + 1; an empty answer leaves it in place. */
async function readLikeKafkajs(b: Bed, from: number, fetches: number) {
  let offset = from;
  const seen: SeenRecord[] = [];
  const forwardedOffsets: number[] = [];
  for (let i = 0; i < fetches; i++) {
    const { response, forwarded } = await roundTrip(b.view, b.upstream, spec(offset, { clientId: 'kafkajs' }));
    forwardedOffsets.push(Number(forwarded.topics[0].partitions[0].fetchOffset));
    const out = await readBatches(response.responses[0].partitions[0].records);
    const mine = out.records.filter((r) => r.offset >= offset);
    seen.push(...mine);
    if (mine.length) offset = mine[mine.length - 1]!.offset + 1;
    else if (out.records.length) offset += 1;
  }
  return { seen, offset, forwardedOffsets };
}

describe('fetch view', () => {
  test('a Java-like reader sees exactly the survivors and reaches the high watermark in one fetch', async () => {
    const survivors = [7, 130, 131, 650, 1203, 1999];
    const b = await bed(async ({ c0 }) => {
      await scattered(c0, 100, 20);
      await c0.append({ count: 30 });
      return { c0: new FakeIndex(survivors, c0.end) };
    });
    const { seen, fetches, position, highWatermark } = await readLikeJava(b, 0, {}, 2048);
    assert.deepEqual(
      seen.map((r) => r.offset),
      survivors,
    );
    assert.equal(highWatermark, 2000, 'the log ends after the last record a client sees');
    assert.equal(position, 2000);
    assert.equal(fetches, 1, 'the survivors fit the partition limit, as in a Kafka-cleaned log');
    // The read on is sized by the index: the survivors left and what an offset of the raw log
    // costs say that one read to the end of the log fills the room.
    assert.deepEqual(
      b.upstream.reads.map((r) => r.fetchOffset),
      [130],
    );
    assert.ok(b.upstream.reads[0]!.maxBytes >= b.logs['c-0']!.read(130, Infinity, true).length);
  });

  test('a client past its last record is at the end: no records, the log ending where it is, answered at once', async () => {
    const b = await bed(async ({ c0 }) => {
      await scattered(c0, 10, 10);
      return { c0: new FakeIndex([5, 42], c0.end) };
    });
    const hw = b.logs['c-0']!.end;
    const { response, forwarded } = await roundTrip(b.view, b.upstream, spec(43));
    assert.equal(Number(forwarded.topics[0].partitions[0].fetchOffset), hw - 1, 'reads the last removed offset, not the high watermark');
    const p = response.responses[0].partitions[0];
    // No empty batch: librdkafka doubles its fetch size on an answer without a whole message.
    assert.equal(p.records?.length ?? 0, 0);
    assert.equal(p.highWatermark, 43n);
    assert.equal(p.lastStableOffset, 43n);
  });

  test('a kafkajs-like reader gets every survivor and then waits at the end, upstream past the removed tail', async () => {
    const b = await bed(async ({ c0 }) => {
      await scattered(c0, 20, 10, 1);
      const index = new FakeIndex([3, 77, 150], c0.end);
      index.logEnd = { indexedTo: c0.end, visibleEnd: 151 };
      return { c0: index };
    });
    const hw = b.logs['c-0']!.end;
    const { seen, offset, forwardedOffsets } = await readLikeKafkajs(b, 0, 6);
    assert.deepEqual(
      seen.map((r) => r.offset),
      [3, 77, 150],
    );
    assert.equal(offset, 151);
    // The survivors come in one answer; every fetch after it waits upstream at the end.
    assert.deepEqual(forwardedOffsets, [3, hw, hw, hw, hw, hw]);
    assert.equal(b.view.stats.emptyAnswers, 0, 'no empty batch');
  });

  test('a repeated fetch past the tail gets new records once they arrive', async () => {
    const b = await bed(async ({ c0 }) => {
      await scattered(c0, 5, 10);
      return { c0: new FakeIndex([3], c0.end) };
    });
    await readLikeKafkajs(b, 4, 2);
    await b.logs['c-0']!.append({ count: 4 });
    const { seen, offset } = await readLikeKafkajs(b, 4, 1);
    assert.deepEqual(
      seen.map((r) => r.offset),
      [50, 51, 52, 53],
    );
    assert.equal(offset, 54);
  });

  test('other topics in the same request pass byte for byte; a request without compacted topics is not touched', async () => {
    const b = await bed(async ({ c0, plain }) => {
      await scattered(c0, 5, 10, 3);
      await scattered(plain, 5, 10, 4);
      return { c0: new FakeIndex([12], c0.end) };
    });
    const both = await roundTrip(b.view, b.upstream, {
      topics: [
        { topic: 'plain', topicId: OTHER_ID, partitions: [{ partition: 0, fetchOffset: 0 }] },
        { topic: 'c', topicId: TOPIC_ID, partitions: [{ partition: 0, fetchOffset: 0 }] },
      ],
    });
    assert.ok(both.response.responses[0].partitions[0].records!.equals(b.logs['plain-0']!.read(0, 1 << 20, true)));
    assert.deepEqual(
      (await readBatches(both.response.responses[1].partitions[0].records)).records.map((r) => r.offset),
      [12],
    );
    const plainOnly = await roundTrip(b.view, b.upstream, { sessionEpoch: -1, topics: [{ topic: 'plain', partitions: [{ partition: 0, fetchOffset: 0 }] }] });
    assert.ok(plainOnly.run.kind === 'forward' && !plainOnly.run.changed && !plainOnly.run.awaitsResponse, 'forwarded as it came, its answer unread');
  });

  test('a reader past the horizon gets the upstream frame itself', async () => {
    const b = await bed(async ({ c0 }) => {
      await scattered(c0, 6, 10);
      return { c0: new FakeIndex([5], 30) };
    });
    const r = await roundTrip(b.view, b.upstream, spec(30, { sessionEpoch: -1 }));
    assert.equal(r.responseChanged, false, "the upstream's bytes");
    assert.equal((await readBatches(r.response.responses[0].partitions[0].records)).records.length, 30);
    assert.ok(r.run.kind === 'forward' && !r.run.changed, 'the request went as the client sent it');
  });

  test('partitions of a compacted topic that are not indexed yet pass unfiltered', async () => {
    const b = await bed(async ({ c0, c1 }) => {
      await scattered(c0, 2, 5);
      await scattered(c1, 2, 5);
      return { c0: new FakeIndex([], c0.end) };
    });
    const { response } = await roundTrip(b.view, b.upstream, { topics: [{ topic: 'c', partitions: [{ partition: 1, fetchOffset: 0 }] }] });
    assert.ok(response.responses[0].partitions[0].records!.equals(b.logs['c-1']!.read(0, 1 << 20, true)));
  });

  for (let version = 4; version <= 18; version++) {
    test(`Fetch v${version}: topics by ${version >= 13 ? 'id' : 'name'}, filtered and seeked`, async () => {
      const b = await bed(async ({ c0 }) => {
        await scattered(c0, 6, 10, version);
        return { c0: new FakeIndex([25, 26, 48], c0.end) };
      });
      const { response, forwarded } = await roundTrip(b.view, b.upstream, spec(0, { version }));
      assert.equal(Number(forwarded.topics[0].partitions[0].fetchOffset), 25);
      if (version >= 7) assert.deepEqual([forwarded.sessionId, forwarded.sessionEpoch], [0, -1]);
      const t = response.responses[0];
      if (version >= 13) assert.equal(t.topicId, TOPIC_ID);
      else assert.equal(t.topic, 'c');
      assert.deepEqual(
        (await readBatches(t.partitions[0].records)).records.map((r) => r.offset),
        [25, 26, 48],
      );
    });
  }

  test('an unknown topic id is resolved before the request is planned', async () => {
    const b = await bed(async ({ c0 }) => {
      await scattered(c0, 3, 10);
      return { c0: new FakeIndex([15], c0.end) };
    });
    const fresh = new TopicIds();
    const upstream = new FakeUpstream(b.upstream.logs, b.upstream.ids, () => fresh.learn('c', TOPIC_ID));
    const view = createFetchView({ config: configView(['c']), index: indexView(b.indexes), topicIds: fresh, upstream, log });
    const { response } = await roundTrip(view, upstream, spec(0, { version: 16 }));
    assert.deepEqual(upstream.resolved, [[TOPIC_ID]]);
    assert.deepEqual(
      (await readBatches(response.responses[0].partitions[0].records)).records.map((r) => r.offset),
      [15],
    );
  });

  test('partition and total max bytes hold; the first batch always comes', async () => {
    const b = await bed(async ({ c0, c1 }) => {
      for (let i = 0; i < 10; i++) await c0.append({ count: 10 });
      for (let i = 0; i < 10; i++) await c1.append({ count: 10 });
      const all = Array.from({ length: 100 }, (_, i) => i);
      return { c0: new FakeIndex(all, 100), c1: new FakeIndex(all, 100) };
    });
    const [first, second] = b.logs['c-0']!.batches.map((s) => s.bytes.length);
    const { response } = await roundTrip(b.view, b.upstream, {
      maxBytes: first! + second! + 15,
      topics: [
        {
          topic: 'c',
          partitions: [
            { partition: 0, fetchOffset: 0, partitionMaxBytes: first! + second! + 5 },
            { partition: 1, fetchOffset: 0, partitionMaxBytes: 1 << 20 },
          ],
        },
      ],
    });
    const [p0, p1] = response.responses[0].partitions;
    const out0 = await readBatches(p0.records);
    assert.equal(out0.batches.length, 2);
    assert.equal(out0.tail, 5, 'the cut-off tail passes through');
    assert.equal(p1.records!.length, 10, 'a later partition gets only what fits (a cut-off tail)');
  });

  test('a response with records to filter holds at most 8 MiB; one with nothing to filter asks for what the client did', async () => {
    const b = await bed(async ({ c0, c1 }) => {
      for (let i = 0; i < 12; i++) {
        await c0.append({ count: 100, valueSize: 10_000 });
        await c1.append({ count: 100, valueSize: 10_000 });
      }
      const all = Array.from({ length: 1200 }, (_, i) => i);
      return {
        c0: new FakeIndex(
          all.filter((o) => o % 100 !== 0),
          1200,
        ),
        c1: new FakeIndex(
          all.filter((o) => o % 100 !== 1),
          1200,
        ),
      };
    });
    const partitions = [0, 1].map((partition) => ({ partition, fetchOffset: 0, partitionMaxBytes: 16 << 20 }));
    const r = await roundTrip(b.view, b.upstream, { maxBytes: 50 << 20, topics: [{ topic: 'c', topicId: TOPIC_ID, partitions }] });
    assert.equal(r.forwarded.maxBytes, 8 << 20);
    const [p0, p1] = r.response.responses[0].partitions;
    assert.ok(p0.records!.length + (p1.records?.length ?? 0) <= 8 << 20, 'the answer keeps to it');
    assert.ok(p0.records!.length > 7 << 20, 'and fills it');
    const past = await roundTrip(b.view, b.upstream, {
      maxBytes: 50 << 20,
      topics: [{ topic: 'c', topicId: TOPIC_ID, partitions: [{ partition: 0, fetchOffset: 1200, partitionMaxBytes: 16 << 20 }] }],
    });
    assert.equal(past.forwarded.maxBytes, 50 << 20, 'a reader at the horizon');
  });

  test('a rebuilt batch that came out larger than the upstream’s keeps to the limit: the cut-off tail gives way', async () => {
    let zstd = 0;
    const b = await bed(async ({ c0 }) => {
      await c0.append({ count: 2 });
      // Found by search: these 15 records, 10 dropped, recompress 6 bytes larger with zstd.
      zstd = (await c0.append({ count: 15, codec: 4, valueSize: 10 })).bytes.length;
      await c0.append({ count: 10 });
      return {
        c0: new FakeIndex(
          Array.from({ length: 27 }, (_, i) => i).filter((o) => o !== 10),
          27,
        ),
      };
    });
    const expected = Array.from({ length: 15 }, (_, i) => i + 2).filter((o) => o !== 10);
    for (const limit of [zstd + 100, zstd]) {
      const { response } = await roundTrip(b.view, b.upstream, spec(2, {}, limit));
      const records: Buffer = response.responses[0].partitions[0].records!;
      const out = await readBatches(records);
      assert.deepEqual(
        out.records.map((r) => r.offset),
        expected,
      );
      assert.equal(out.tail, 0);
      if (limit > zstd) assert.ok(records.length <= limit, `${records.length} bytes for a limit of ${limit}`);
      else assert.equal(out.batches.length, 1, 'a lone batch that grew past the limit still comes');
    }
  });

  test('when the index moved on after planning, the proxy reads on to a survivor and to the end of the log', async () => {
    const b = await bed(async ({ c0 }) => {
      await scattered(c0, 30, 10);
      return { c0: new FakeIndex([20, 250], c0.end) };
    });
    const index = b.indexes['c-0']!;
    const view = b.view;
    const frameSpec = spec(0, {}, 25 * 10 + 200);
    // Planned against survivors {20, 250}; the cleaner drops 20 before the answer is filtered.
    const answer = roundTrip(view, b.upstream, frameSpec);
    index.setSurvivors([250]);
    const { response } = await answer;
    const out = await readBatches(response.responses[0].partitions[0].records);
    assert.deepEqual(
      out.records.map((r) => r.offset),
      [250],
    );
    // Nothing survived in the client's own read, so the read on asks for as much as it may and
    // reaches the end: nothing the client sees lies past 250, so the log ends there for it.
    assert.deepEqual(
      b.upstream.reads.map((r) => r.fetchOffset),
      [250],
    );
    assert.deepEqual(
      out.batches.map((x) => [x.base, x.last, x.count]),
      [[250, 259, 1]],
    );
    assert.equal(response.responses[0].partitions[0].highWatermark, 260n, 'the client moves to the end of the batch holding 250');
    assert.equal(view.stats.extraReads, 1);
  });

  test('reading on keeps to the partition limit beside other data, and takes one batch when alone', async () => {
    const setup = () =>
      bed(async ({ c0, c1 }) => {
        await scattered(c0, 30, 10);
        for (let i = 0; i < 3; i++) await c1.append({ count: 10 });
        return {
          c0: new FakeIndex([20, 250], c0.end),
          c1: new FakeIndex(
            Array.from({ length: 30 }, (_, i) => i),
            30,
          ),
        };
      });
    const read = async (b: Bed, partitions: number[]) => {
      const answer = roundTrip(b.view, b.upstream, {
        topics: [
          { topic: 'c', partitions: partitions.map((partition) => ({ partition, fetchOffset: 0, partitionMaxBytes: partition === 0 ? 100 : 1 << 20 })) },
        ],
      });
      b.indexes['c-0']!.setSurvivors([250]);
      const { response } = await answer;
      return readBatches(response.responses[0].partitions[0].records);
    };
    const beside = await setup();
    const crowded = await read(beside, [0, 1]);
    assert.equal(beside.view.stats.extraReads, 1);
    assert.deepEqual(crowded.records, [], 'the batch read on is larger than the partition limit');
    assert.equal(crowded.batches.length, 1, 'an empty batch lets the client move on');
    const alone = await read(await setup(), [0]);
    assert.deepEqual(
      alone.records.map((r) => r.offset),
      [250],
    );
  });

  test('read_committed: aborted transactions whose markers were removed are not listed', async () => {
    const b = await bed(async ({ c0 }) => {
      await c0.append({ count: 3, producerId: 7n, transactional: true });
      await c0.append({ count: 1, producerId: 7n, marker: 0 });
      c0.aborted.push({ producerId: 7n, firstOffset: 0n, markerOffset: 3 });
      await c0.append({ count: 3, producerId: 7n, transactional: true });
      await c0.append({ count: 1, producerId: 7n, marker: 1 });
      await c0.append({ count: 3, producerId: 9n, transactional: true });
      await c0.append({ count: 1, producerId: 9n, marker: 0 });
      c0.aborted.push({ producerId: 9n, firstOffset: 8n, markerOffset: 11 });
      return { c0: new FakeIndex([4, 5, 6, 7, 8, 11], 12) };
    });
    const { response } = await roundTrip(b.view, b.upstream, spec(0, { isolationLevel: 1 }));
    const p = response.responses[0].partitions[0];
    assert.deepEqual(p.abortedTransactions, [{ producerId: 9n, firstOffset: 8n }]);
    assert.deepEqual(
      (await readBatches(p.records)).records.map((r) => r.offset),
      [4, 5, 6, 8],
    );
  });

  test('sessions: incremental requests are refused, full ones go upstream sessionless', async () => {
    const b = await bed(async ({ c0 }) => {
      await scattered(c0, 2, 10);
      return { c0: new FakeIndex([3], c0.end) };
    });
    const incremental = await roundTrip(b.view, b.upstream, spec(0, { sessionId: 42, sessionEpoch: 5 }));
    assert.equal(incremental.response.errorCode, 70);
    const plainFull = await roundTrip(b.view, b.upstream, {
      sessionId: 0,
      sessionEpoch: 0,
      topics: [{ topic: 'plain', partitions: [{ partition: 0, fetchOffset: 0 }] }],
    });
    assert.deepEqual([plainFull.forwarded.sessionId, plainFull.forwarded.sessionEpoch], [0, -1]);
    const full = await roundTrip(b.view, b.upstream, spec(3, { sessionId: 0, sessionEpoch: 0 }));
    assert.deepEqual([full.forwarded.sessionId, full.forwarded.sessionEpoch], [0, -1]);
    assert.equal(full.response.sessionId, 0);
    assert.equal(b.view.stats.sessionsRefused, 1);
  });

  test('without any compacted topic every Fetch passes untouched, sessions included', async () => {
    const upstream = new FakeUpstream({});
    const view = createFetchView({ config: configView([]), index: indexView({}), topicIds: new TopicIds(), upstream, log });
    const r = await roundTrip(view, upstream, spec(0, { sessionId: 42, sessionEpoch: 5 }));
    assert.ok(r.run.kind === 'forward' && !r.run.changed && !r.run.awaitsResponse);
  });

  test('followers are never filtered', async () => {
    const b = await bed(async ({ c0 }) => {
      await scattered(c0, 2, 10);
      return { c0: new FakeIndex([3], c0.end) };
    });
    const run = await new FilterHarness(b.view).request(ApiKey.Fetch, 12, {
      replicaId: 2,
      maxWaitMs: 0,
      minBytes: 1,
      maxBytes: 100,
      sessionId: 0,
      sessionEpoch: -1,
      topics: [{ topic: 'c', partitions: [{ partition: 0, fetchOffset: 0n, partitionMaxBytes: 100 }] }],
    });
    assert.ok(run.kind === 'forward' && !run.changed && !run.awaitsResponse);
  });
});
