/**
 * ShareFetch answers of compacted partitions (share-fetch-view.ts): the records go through the
 * compacted view (the cleaner's removed records out, survivors and the uncleaned head at their
 * offsets, strict readers' CRCs and counts intact), the acquired ranges, the request and every
 * other topic's records pass as the broker sent them; in both ShareFetch versions.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createShareFetchView } from '../../../../src/compaction/fetch-view/share-fetch-view.js';
import { ApiKey, type BodyInit, type ShareFetchRequest, type ShareFetchResponse } from '../../../../src/protocol/messages.js';
import { TopicIds } from '../../../../src/proxy/topic-ids.js';
import { FilterHarness } from '../../../support/filter-harness.js';
import { configView, FakeIndex, FakeLog, indexView, log, readBatches } from './fake-log.js';
import { Log } from '../carry/store-log.js';
import type { AckBatch } from '../../../../src/compaction/fetch-view/copy-acks.js';

const COMPACTED = 'c';
const PLAIN = 'p';
const IDS = { [COMPACTED]: 'AAAAAAAAAAAAAAAAAAAAAQ', [PLAIN]: 'AAAAAAAAAAAAAAAAAAAAAg', late: 'AAAAAAAAAAAAAAAAAAAAAw' };
const SURVIVORS = [3, 7, 15, 22];
const HORIZON = 25;

async function logOf(): Promise<FakeLog> {
  const log = new FakeLog();
  for (let i = 0; i < 3; i++) await log.append({ count: 10 });
  return log;
}

function request(topics: string[], epoch = 0): BodyInit<ShareFetchRequest> {
  return {
    groupId: 'g',
    memberId: 'member-1',
    shareSessionEpoch: epoch,
    maxWaitMs: 500,
    minBytes: 1,
    maxBytes: 1 << 20,
    maxRecords: 500,
    batchSize: 500,
    topics: topics.map((id) => ({ topicId: id, partitions: [{ partitionIndex: 0, acknowledgementBatches: [] }] })),
    forgottenTopicsData: [],
  };
}

function response(topics: { id: string; records: Buffer }[]): BodyInit<ShareFetchResponse> {
  return {
    throttleTimeMs: 0,
    errorCode: 0,
    acquisitionLockTimeoutMs: 30_000,
    responses: topics.map((t) => ({
      topicId: t.id,
      partitions: [
        {
          partitionIndex: 0,
          errorCode: 0,
          acknowledgeErrorCode: 0,
          currentLeader: { leaderId: 1, leaderEpoch: 4 },
          records: t.records,
          acquiredRecords: [{ firstOffset: 0n, lastOffset: 29n, deliveryCount: 1 }],
        },
      ],
    })),
    nodeEndpoints: [],
  };
}

function setUp(opts: { resolvable?: Record<string, string>; survivors?: number[] } = {}) {
  const topicIds = new TopicIds();
  topicIds.learn(COMPACTED, IDS[COMPACTED]);
  topicIds.learn(PLAIN, IDS[PLAIN]);
  const uses: string[] = [];
  const resolved: string[][] = [];
  const view = createShareFetchView({
    config: configView([COMPACTED, 'late']),
    index: indexView({ [`${COMPACTED}-0`]: new FakeIndex(opts.survivors ?? SURVIVORS, HORIZON), 'late-0': new FakeIndex(SURVIVORS, HORIZON) }, undefined, uses),
    topicIds,
    resolveTopicIds: async (ids) => {
      resolved.push(ids);
      for (const [name, id] of Object.entries(opts.resolvable ?? {})) if (ids.includes(id)) topicIds.learn(name, id);
    },
    logStartOffset: async () => 0n,
    log,
  });
  return { view, harness: new FilterHarness(view), uses, resolved };
}

const VISIBLE = [...SURVIVORS, 25, 26, 27, 28, 29];

describe('ShareFetch answers of compacted partitions', () => {
  for (const version of [1, 2]) {
    test(`v${version}: only the survivors and the uncleaned head, at their offsets; the acquired ranges as the broker gave them`, async () => {
      const { harness, uses } = setUp();
      const stored = await logOf();
      const run = await harness.request(ApiKey.ShareFetch, version, request([IDS[COMPACTED]]));
      assert.equal(run.kind, 'forward');
      if (run.kind !== 'forward') return;
      assert.equal(run.changed, false, 'the request goes as the client sent it');
      const answer = await run.respond(response([{ id: IDS[COMPACTED], records: stored.read(0, 1 << 20, true) }]));
      assert.equal(answer.kind, 'forward');
      if (answer.kind !== 'forward') return;
      const p = answer.body.responses[0]!.partitions[0]!;
      const seen = await readBatches(p.records);
      assert.deepEqual(
        seen.records.map((r) => r.offset),
        VISIBLE,
      );
      assert.deepEqual(
        p.acquiredRecords.map((a) => [a.firstOffset, a.lastOffset, a.deliveryCount]),
        [[0n, 29n, 1]],
      );
      assert.ok(uses.includes(`${COMPACTED}-0`), 'the partition is marked used');
    });
  }

  test("other topics' records pass byte for byte", async () => {
    const { harness } = setUp();
    const stored = await logOf();
    const run = await harness.request(ApiKey.ShareFetch, 1, request([IDS[PLAIN]]));
    if (run.kind !== 'forward') throw new Error(run.kind);
    const answer = await run.respond(response([{ id: IDS[PLAIN], records: stored.read(0, 1 << 20, true) }]));
    if (answer.kind !== 'forward') throw new Error(answer.kind);
    assert.equal(answer.changed, false);
    assert.equal((await readBatches(answer.body.responses[0]!.partitions[0]!.records)).records.length, 30);
  });

  test('a later request of the share session names no partition: its answer is filtered all the same', async () => {
    const { harness } = setUp();
    const stored = await logOf();
    const run = await harness.request(ApiKey.ShareFetch, 1, request([], 3));
    if (run.kind !== 'forward') throw new Error(run.kind);
    const answer = await run.respond(response([{ id: IDS[COMPACTED], records: stored.read(0, 1 << 20, true) }]));
    if (answer.kind !== 'forward') throw new Error(answer.kind);
    assert.deepEqual(
      (await readBatches(answer.body.responses[0]!.partitions[0]!.records)).records.map((r) => r.offset),
      VISIBLE,
    );
  });

  test('a topic id the proxy has not seen yet is looked up before the answer goes out', async () => {
    const { harness, resolved } = setUp({ resolvable: { late: IDS.late } });
    const stored = await logOf();
    const run = await harness.request(ApiKey.ShareFetch, 1, request([IDS.late]));
    if (run.kind !== 'forward') throw new Error(run.kind);
    const answer = await run.respond(response([{ id: IDS.late, records: stored.read(0, 1 << 20, true) }]));
    if (answer.kind !== 'forward') throw new Error(answer.kind);
    assert.deepEqual(resolved, [[IDS.late]]);
    assert.deepEqual(
      (await readBatches(answer.body.responses[0]!.partitions[0]!.records)).records.map((r) => r.offset),
      VISIBLE,
    );
  });

  test('batches keep their offset span; one that lost every record goes only at the end, as an empty batch', async () => {
    const { harness } = setUp({ survivors: [15] });
    const stored = await logOf();
    const run = await harness.request(ApiKey.ShareFetch, 1, request([IDS[COMPACTED]]));
    if (run.kind !== 'forward') throw new Error(run.kind);
    const answer = await run.respond(response([{ id: IDS[COMPACTED], records: stored.read(0, 1 << 20, true) }]));
    if (answer.kind !== 'forward') throw new Error(answer.kind);
    const seen = await readBatches(answer.body.responses[0]!.partitions[0]!.records);
    assert.deepEqual(
      seen.batches.map((b) => [b.base, b.last, b.count]),
      [
        [10, 19, 1],
        [20, 29, 5],
      ],
    );
    const onlyRemoved = await harness.request(ApiKey.ShareFetch, 1, request([IDS[COMPACTED]]));
    if (onlyRemoved.kind !== 'forward') throw new Error(onlyRemoved.kind);
    const empty = await onlyRemoved.respond(response([{ id: IDS[COMPACTED], records: stored.batches[0]!.bytes }]));
    if (empty.kind !== 'forward') throw new Error(empty.kind);
    const none = await readBatches(empty.body.responses[0]!.partitions[0]!.records);
    assert.deepEqual(
      none.batches.map((b) => [b.base, b.last, b.count]),
      [[0, 9, 0]],
    );
  });
});

describe('ShareFetch answers of carried partitions', () => {
  /** Forty records, ten keys; a pass carries the latest of each key (copy at 41) and the store let everything below 40 go. */
  async function carriedSetUp(groups: string[]) {
    const stored = new Log();
    await stored.writeRecords(40, 10);
    const survivors = Array.from({ length: 10 }, (_, i) => 30 + i);
    const pass = await stored.carry(new Set(survivors), 40);
    const index = new FakeIndex(survivors, 40);
    index.carry = {
      copiesBelow: 40,
      topicStart: 0,
      copiesFrom: pass,
      copiesTo: stored.end - 1,
      passOnly: true,
      marks: Float64Array.from([30, pass + 1]),
      releases: [{ at: stored.end, pass, releasedEnd: 40, groups }],
    };
    const topicIds = new TopicIds();
    topicIds.learn(COMPACTED, IDS[COMPACTED]);
    const view = createShareFetchView({
      config: configView([COMPACTED]),
      index: indexView({ [`${COMPACTED}-0`]: index }),
      topicIds,
      resolveTopicIds: async () => undefined,
      logStartOffset: async () => 40n,
      log,
    });
    const answer = response([{ id: IDS[COMPACTED], records: stored.from(40) }]);
    answer.responses![0]!.partitions![0]!.acquiredRecords = [{ firstOffset: 40n, lastOffset: 42n, deliveryCount: 1 }];
    return { view, harness: new FilterHarness(view), answer, survivors };
  }

  test('a group new to the partition gets the survivors from the copy, and its acknowledgements of them settle the copy', async () => {
    const { view, harness, answer, survivors } = await carriedSetUp(['earlier']);
    const run = await harness.request(ApiKey.ShareFetch, 1, request([IDS[COMPACTED]]));
    if (run.kind !== 'forward') throw new Error(run.kind);
    const out = await run.respond(answer);
    if (out.kind !== 'forward') throw new Error(out.kind);
    const p = out.body.responses[0]!.partitions[0]!;
    assert.deepEqual(
      (await readBatches(p.records)).records.map((r) => r.offset),
      survivors,
    );
    assert.deepEqual(
      p.acquiredRecords.map((a) => [a.firstOffset, a.lastOffset, a.deliveryCount]),
      [
        [30n, 39n, 1],
        [40n, 40n, 1],
        [42n, 42n, 1],
      ],
    );
    assert.equal(view.stats.copiedRecords, 10);

    const acks = (batches: [number, number, number][], epoch = 1) => ({
      groupId: 'g',
      memberId: 'member-1',
      shareSessionEpoch: epoch,
      topics: [
        {
          topicId: IDS[COMPACTED],
          partitions: [
            {
              partitionIndex: 0,
              acknowledgementBatches: batches.map(([f, l, t]) => ({ firstOffset: BigInt(f), lastOffset: BigInt(l), acknowledgeTypes: [t] })),
            },
          ],
        },
      ],
    });
    type Acked = { body: { topics: { partitions: { acknowledgementBatches: AckBatch[] }[] }[] } };
    const sent = (r: { kind: string }) => {
      if (r.kind !== 'forward') throw new Error(r.kind);
      return (r as unknown as Acked).body.topics[0]!.partitions[0]!.acknowledgementBatches.map((b) => [
        Number(b.firstOffset),
        Number(b.lastOffset),
        ...b.acknowledgeTypes,
      ]);
    };
    assert.deepEqual(
      sent(
        await harness.request(
          ApiKey.ShareAcknowledge,
          1,
          acks([
            [30, 34, 1],
            [40, 40, 0],
          ]),
        ),
      ),
      [[40, 40, 0]],
    );
    const fetch = {
      ...request([IDS[COMPACTED]], 2),
      topics: acks([
        [35, 39, 1],
        [42, 42, 0],
      ]).topics,
    };
    assert.deepEqual(sent(await harness.request(ApiKey.ShareFetch, 2, fetch)), [
      [41, 41, 1],
      [42, 42, 0],
    ]);
    assert.equal(view.copyAcks.size, 0);
  });

  test('a group that read the range where it was gets the copy as a gap, as before', async () => {
    const { harness, answer } = await carriedSetUp(['g']);
    const run = await harness.request(ApiKey.ShareFetch, 1, request([IDS[COMPACTED]]));
    if (run.kind !== 'forward') throw new Error(run.kind);
    const out = await run.respond(answer);
    if (out.kind !== 'forward') throw new Error(out.kind);
    const p = out.body.responses[0]!.partitions[0]!;
    assert.deepEqual((await readBatches(p.records)).records, []);
    assert.deepEqual(
      p.acquiredRecords.map((a) => [a.firstOffset, a.lastOffset]),
      [[40n, 42n]],
    );
  });
});
