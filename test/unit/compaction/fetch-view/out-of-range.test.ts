/**
 * A store that answers OFFSET_OUT_OF_RANGE below its log start, for a compacted partition whose
 * index may not have read the carry pass that let the range go (out-of-range.ts): the client
 * gets an empty answer, never the error, until the index knows; then the copies answer, or the
 * store's error stands where no pass holds the offset.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createFetchView } from '../../../../src/compaction/fetch-view/fetch-view.js';
import type { IndexView } from '../../../../src/engine/api/index-view.js';
import { TopicIds } from '../../../../src/proxy/topic-ids.js';
import { configView, FakeIndex, FakeLog, FakeUpstream, indexView, log, readBatches, roundTrip } from './fake-log.js';
import { markerBatch } from '../../../../src/protocol/carry/carried-batch.js';
import { encodePassStart } from '../../../../src/protocol/carry/carry-record.js';

const OUT_OF_RANGE = 1;

/** Topic "c" partition 0: 40 records, of which the store let the first 30 go. */
async function store(): Promise<{ upstream: FakeUpstream; c0: FakeLog }> {
  const c0 = new FakeLog();
  for (let i = 0; i < 4; i++) await c0.append({ count: 10 });
  c0.logStart = 30;
  return { upstream: new FakeUpstream({ 'c-0': c0 }), c0 };
}

function viewOver(upstream: FakeUpstream, index: IndexView) {
  return createFetchView({ config: configView(['c']), index, topicIds: new TopicIds(), upstream, log, cacheBytes: 0 });
}

const fetchAt = (offset: number, isolationLevel = 0) => ({
  maxWaitMs: 50,
  isolationLevel,
  topics: [{ topic: 'c', partitions: [{ partition: 0, fetchOffset: offset }] }],
});

describe('OFFSET_OUT_OF_RANGE of a compacted partition', () => {
  for (const indexed of [false, true]) {
    test(`an index ${indexed ? 'that has not read the pass' : 'not there yet'}: an empty answer with the store's ends, not the error`, async () => {
      const { upstream } = await store();
      const asked: number[] = [];
      const caughtUp = async (_t: string, _p: number, ms: number) => (asked.push(ms), false);
      const view = viewOver(upstream, indexView(indexed ? { 'c-0': new FakeIndex([], 0) } : {}, caughtUp));
      for (const isolationLevel of [0, 1]) {
        const p = (await roundTrip(view, upstream, fetchAt(0, isolationLevel))).response.responses[0].partitions[0];
        assert.equal(p.errorCode, 0);
        assert.equal(p.records?.length ?? 0, 0);
        assert.equal(p.highWatermark, 40n);
        assert.equal(p.lastStableOffset, 40n);
        assert.deepEqual(p.abortedTransactions, isolationLevel === 1 ? [] : null);
      }
      assert.equal(asked.length, 2, 'the index was asked to catch up each time');
      assert.ok(
        asked.every((ms) => ms > 0 && ms <= 50),
        `within the client's max wait: ${asked.join(', ')}`,
      );
      assert.equal(view.stats.outOfRangeHeld, 2);
    });
  }

  test('the index read a pass holding the offset: an empty answer, and the next fetch is served from the copies', async () => {
    const { upstream } = await store();
    const index = new FakeIndex([], 0);
    // What the worker's index knows once it has caught up: the pass's copies (none survive here).
    const caughtUp = async () => {
      index.carry = { copiesBelow: 30, topicStart: 0, copiesFrom: 35, copiesTo: 39, passOnly: false, marks: new Float64Array(0) };
      return true;
    };
    const view = viewOver(upstream, indexView({ 'c-0': index }, caughtUp));
    const first = (await roundTrip(view, upstream, fetchAt(5))).response.responses[0].partitions[0];
    assert.equal(first.errorCode, 0);
    const second = await roundTrip(view, upstream, fetchAt(5));
    assert.equal(Number(second.forwarded.topics[0].partitions[0].fetchOffset), 30, "the store is asked at the copies' end, for its offsets only");
    assert.equal(second.response.responses[0].partitions[0].errorCode, 0);
    assert.equal(second.response.responses[0].partitions[0].logStartOffset, 0n, "the topic's own log start");
  });

  test("the index read everything and no pass holds the offset: the store's error stands, as Kafka's", async () => {
    const { upstream } = await store();
    const view = viewOver(
      upstream,
      indexView({ 'c-0': new FakeIndex([], 0) }, async () => true),
    );
    assert.equal((await roundTrip(view, upstream, fetchAt(5))).response.responses[0].partitions[0].errorCode, OUT_OF_RANGE);
    // Below the topic's own start (compact,delete retention, DeleteRecords) the copies hold nothing either.
    const index = new FakeIndex([], 0);
    index.carry = { copiesBelow: 30, topicStart: 10, copiesFrom: 35, copiesTo: 39, passOnly: false, marks: new Float64Array(0) };
    const carried = viewOver(
      upstream,
      indexView({ 'c-0': index }, async () => true),
    );
    assert.equal((await roundTrip(carried, upstream, fetchAt(5))).response.responses[0].partitions[0].errorCode, OUT_OF_RANGE);
  });

  test('past the end of the log the error stands at once, without waiting for the index', async () => {
    const { upstream } = await store();
    let asked = 0;
    const view = viewOver(
      upstream,
      indexView({}, async () => (asked++, false)),
    );
    assert.equal((await roundTrip(view, upstream, fetchAt(41))).response.responses[0].partitions[0].errorCode, OUT_OF_RANGE);
    assert.equal(asked, 0);
  });

  test("an index not there yet: the client's records pass as the store sent them, kcompact's carry records do not", async () => {
    const c0 = new FakeLog();
    await c0.append({ count: 10 });
    const marker = await markerBatch(encodePassStart({ releaseEnd: 0, topicStart: 0 }), 0);
    marker.writeBigInt64BE(10n, 0);
    c0.batches.push({ bytes: marker, base: 10, last: 10 });
    await c0.append({ count: 5 });
    const upstream = new FakeUpstream({ 'c-0': c0 });
    const view = viewOver(
      upstream,
      indexView({}, async () => false),
    );
    const { response } = await roundTrip(view, upstream, fetchAt(0));
    const p = response.responses[0].partitions[0];
    const out = await readBatches(p.records);
    assert.deepEqual(
      out.records.map((r) => r.offset),
      [...Array(10).keys(), 11, 12, 13, 14, 15],
    );
    assert.ok(p.records!.subarray(0, c0.batches[0]!.bytes.length).equals(c0.batches[0]!.bytes), 'the first batch as the store sent it');
  });

  test("a partition of a topic kcompact does not compact keeps the store's error", async () => {
    const { upstream } = await store();
    const view = createFetchView({ config: configView(['other']), index: indexView({}, async () => false), topicIds: new TopicIds(), upstream, log });
    assert.equal((await roundTrip(view, upstream, fetchAt(0))).response.responses[0].partitions[0].errorCode, OUT_OF_RANGE);
  });
});
