/**
 * The fetch view as a filter, driven by the FilterHarness: what it forwards (and whether it asks
 * to see the answer), what it answers itself, and what the client gets for the upstream's answer.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ApiKey, encodeRequestFrame } from '../../../../src/protocol/messages.js';
import { ErrorCode } from '../../../../src/protocol/errors.js';
import { FilterHarness } from '../../../support/filter-harness.js';
import { createFetchView } from '../../../../src/compaction/fetch-view/fetch-view.js';
import { configView, fetchBody, FakeIndex, indexView, log, readBatches } from './fake-log.js';
import { bed, OTHER_ID, scattered, TOPIC_ID } from './fetch-bed.js';

const SURVIVORS = [4, 17, 33];

const setup = () =>
  bed(async ({ c0, plain }) => {
    await scattered(c0, 4, 10);
    await scattered(plain, 2, 10);
    return { c0: new FakeIndex(SURVIVORS, c0.end) };
  });

const plainOnly = { topics: [{ topic: 'plain', topicId: OTHER_ID, partitions: [{ partition: 0, fetchOffset: 0 }] }] };

describe('fetch view filter', () => {
  test('a request with no compacted partition is forwarded as the very bytes that came, its answer unread', async () => {
    const b = await setup();
    for (const version of [4, 12, 13, 17]) {
      const body = fetchBody(plainOnly);
      const run = await new FilterHarness(b.view).request(ApiKey.Fetch, version, body, { correlationId: 5, clientId: 'c' });
      assert.ok(run.kind === 'forward');
      assert.equal(run.changed, false);
      assert.ok(run.frame.equals(encodeRequestFrame({ apiKey: ApiKey.Fetch, apiVersion: version, correlationId: 5, clientId: 'c' }, body)));
      assert.equal(run.awaitsResponse, false, 'no continuation');
    }
    assert.equal(b.view.stats.viewedRequests, 0);
  });

  test('a full request that would open a session goes sessionless, nothing else changed', async () => {
    const b = await setup();
    const body = fetchBody({ ...plainOnly, sessionId: 0, sessionEpoch: 0 });
    const run = await new FilterHarness(b.view).request(ApiKey.Fetch, 12, body, { correlationId: 5, clientId: 'c' });
    assert.ok(run.kind === 'forward' && run.changed && !run.awaitsResponse);
    assert.deepEqual([run.body.sessionId, run.body.sessionEpoch], [0, -1]);
    const asSessionless = encodeRequestFrame({ apiKey: ApiKey.Fetch, apiVersion: 12, correlationId: 5, clientId: 'c' }, { ...body, sessionEpoch: -1 });
    assert.ok(run.frame.equals(asSessionless), 'the same bytes but for the session epoch');
  });

  test('an incremental session request is answered FETCH_SESSION_ID_NOT_FOUND without the upstream', async () => {
    const b = await setup();
    const harness = new FilterHarness(b.view);
    const run = await harness.request(ApiKey.Fetch, 15, fetchBody({ ...plainOnly, sessionId: 42, sessionEpoch: 3 }), { correlationId: 77 });
    assert.equal(run.kind, 'respond');
    if (run.kind !== 'respond') return;
    assert.equal(run.frame.readInt32BE(4), 77);
    assert.deepEqual([run.body.errorCode, run.body.sessionId, run.body.responses], [ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0, []]);
    assert.equal(b.view.stats.sessionsRefused, 1);
    assert.deepEqual(b.upstream.reads, [], 'the upstream was not asked');
  });

  test('compacted partitions: the fetch offset moves to the next survivor, and the client gets only the survivors', async () => {
    const b = await setup();
    for (const version of [12, 13]) {
      const request = fetchBody({
        sessionId: 0,
        sessionEpoch: 0,
        topics: [
          { topic: 'c', topicId: TOPIC_ID, partitions: [{ partition: 0, fetchOffset: 1 }] },
          { topic: 'plain', topicId: OTHER_ID, partitions: [{ partition: 0, fetchOffset: 0 }] },
        ],
      });
      const run = await new FilterHarness(b.view).request(ApiKey.Fetch, version, request);
      assert.ok(run.kind === 'forward' && run.changed);
      assert.equal(run.awaitsResponse, true, 'the view reads the answer');
      assert.equal(run.upstreamVersion, version);
      assert.equal(run.body.topics[0]!.partitions[0]!.fetchOffset, 4n);
      assert.equal(run.body.topics[1]!.partitions[0]!.fetchOffset, 0n, 'other topics as asked');
      assert.deepEqual([run.body.sessionId, run.body.sessionEpoch], [0, -1]);
      const upstream = b.upstream.answer(run.body, version);
      const client = await run.respond(upstream);
      assert.ok(client.kind === 'forward' && client.changed);
      const [c, plain] = client.body.responses;
      assert.deepEqual(
        (await readBatches(c!.partitions[0]!.records)).records.map((r) => r.offset),
        SURVIVORS,
      );
      assert.equal(c!.partitions[0]!.highWatermark, BigInt(b.logs['c-0']!.end), 'the high watermark as the upstream said');
      assert.ok(plain!.partitions[0]!.records!.equals(b.logs['plain-0']!.read(0, 1 << 20, false)), 'the other topic byte for byte');
    }
  });

  test('a compacted partition read past the horizon asks to see the answer and passes it as it came', async () => {
    const b = await setup();
    b.indexes['c-0']!.horizon = 20;
    const run = await new FilterHarness(b.view).request(
      ApiKey.Fetch,
      12,
      fetchBody({ topics: [{ topic: 'c', partitions: [{ partition: 0, fetchOffset: 25 }] }] }),
    );
    assert.ok(run.kind === 'forward' && !run.changed && run.awaitsResponse);
    const client = await run.respond(b.upstream.answer(run.body, 12));
    assert.ok(client.kind === 'forward' && !client.changed, "the upstream's bytes");
  });

  test('without any compacted topic even an incremental request passes untouched', async () => {
    const b = await setup();
    const view = createFetchView({ config: configView([]), index: indexView(b.indexes), topicIds: b.topicIds, upstream: b.upstream, log });
    const run = await new FilterHarness(view).request(ApiKey.Fetch, 12, fetchBody({ ...plainOnly, sessionId: 42, sessionEpoch: 3 }));
    assert.ok(run.kind === 'forward' && !run.changed && !run.awaitsResponse);
    assert.equal(view.stats.requests, 1);
  });
});
