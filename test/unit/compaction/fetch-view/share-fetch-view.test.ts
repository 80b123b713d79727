/**
 * ShareFetch answers of compacted partitions (share-fetch-view.ts): the records go through the
 * compacted view (the cleaner's removed records out, survivors and the uncleaned head at their
 * offsets, strict readers' CRCs and counts intact), the acquired ranges, the request and every
 * other topic's records pass as the broker sent them; in both ShareFetch versions. An answer
 * that holds nothing for the member goes as one that acquired nothing, and its offsets are
 * acknowledged as gaps in the member's next request on the connection (share-gap-acks.ts).
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createShareFetchView } from '../../../../src/compaction/fetch-view/share-fetch-view.js';
import { ApiKey, type BodyInit, type ShareFetchRequest, type ShareFetchResponse } from '../../../../src/protocol/messages.js';
import { TopicIds } from '../../../../src/proxy/topic-ids.js';
import { FilterHarness } from '../../../support/filter-harness.js';
import { configView, FakeIndex, FakeLog, indexView, log, readBatches } from './fake-log.js';
import { Log } from '../../engine/carry/store-log.js';
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

  test('batches keep their offset span; none that lost every record goes, not even at the end', async () => {
    const { harness } = setUp({ survivors: [5] });
    const stored = await logOf();
    const run = await harness.request(ApiKey.ShareFetch, 1, request([IDS[COMPACTED]]));
    if (run.kind !== 'forward') throw new Error(run.kind);
    // A read that ends before the uncleaned head (25-29): its last batch, 10-19, keeps nothing.
    const answer = response([{ id: IDS[COMPACTED], records: Buffer.concat([stored.batches[0]!.bytes, stored.batches[1]!.bytes]) }]);
    answer.responses![0]!.partitions![0]!.acquiredRecords = [{ firstOffset: 0n, lastOffset: 19n, deliveryCount: 1 }];
    const out = await run.respond(answer);
    if (out.kind !== 'forward') throw new Error(out.kind);
    const p = out.body.responses[0]!.partitions[0]!;
    const seen = await readBatches(p.records);
    assert.deepEqual(
      seen.batches.map((b) => [b.base, b.last, b.count]),
      [[0, 9, 1]],
    );
    assert.deepEqual(
      p.acquiredRecords.map((a) => [a.firstOffset, a.lastOffset]),
      [[0n, 19n]],
      'the offsets past the last record stay acquired: gaps the member acknowledges itself',
    );
    assert.deepEqual(await nextAcks(harness), [], 'nothing is acknowledged for a member that got records');
  });

  test('an answer of removed records only goes as one that acquired nothing; the next request acknowledges them as gaps', async () => {
    const { view, harness } = setUp({ survivors: [15] });
    const stored = await logOf();
    const run = await harness.request(ApiKey.ShareFetch, 1, request([IDS[COMPACTED]]));
    if (run.kind !== 'forward') throw new Error(run.kind);
    const answer = response([{ id: IDS[COMPACTED], records: stored.batches[0]!.bytes }]);
    answer.responses![0]!.partitions![0]!.acquiredRecords = [{ firstOffset: 0n, lastOffset: 9n, deliveryCount: 1 }];
    const out = await run.respond(answer);
    if (out.kind !== 'forward') throw new Error(out.kind);
    const p = out.body.responses[0]!.partitions[0]!;
    assert.equal(p.records.length, 0, 'no records, not even an empty batch');
    assert.deepEqual(p.acquiredRecords, []);
    assert.equal(view.stats.emptiedAnswers, 1);
    assert.deepEqual(await nextAcks(harness), [[IDS[COMPACTED], 0, [[0, 9, 0]]]]);
    assert.deepEqual(await nextAcks(harness), [], 'once');
  });
});

/** What the member's next ShareFetch (epoch 2, naming no partition) carries upstream: [topic, partition, [first, last, ...types]]. */
async function nextAcks(harness: FilterHarness, opts: { connection?: object; epoch?: number } = {}): Promise<[string, number, number[][]][]> {
  const run = await harness.request(ApiKey.ShareFetch, 1, request([], opts.epoch ?? 2), { connection: opts.connection ?? harness.connection });
  if (run.kind !== 'forward') throw new Error(run.kind);
  return run.body.topics.flatMap((t) =>
    t.partitions.map((p): [string, number, number[][]] => [
      t.topicId,
      p.partitionIndex,
      p.acknowledgementBatches.map((b) => [Number(b.firstOffset), Number(b.lastOffset), ...b.acknowledgeTypes]),
    ]),
  );
}

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

  test("a group that read the range where it was gets nothing of the pass's records: they are acknowledged as gaps for it", async () => {
    const { view, harness, answer } = await carriedSetUp(['g']);
    const run = await harness.request(ApiKey.ShareFetch, 1, request([IDS[COMPACTED]]));
    if (run.kind !== 'forward') throw new Error(run.kind);
    const out = await run.respond(answer);
    if (out.kind !== 'forward') throw new Error(out.kind);
    const p = out.body.responses[0]!.partitions[0]!;
    assert.equal(p.records.length, 0);
    assert.deepEqual(p.acquiredRecords, []);
    assert.equal(view.stats.copiedRecords, 0);
    assert.deepEqual(await nextAcks(harness, { connection: {} }), [], 'not on another connection (another broker)');
    assert.deepEqual(await nextAcks(harness, { epoch: 0 }), [], 'not in a request opening a share session');
    assert.deepEqual(await nextAcks(harness, { epoch: 1 }), [[IDS[COMPACTED], 0, [[40, 42, 0]]]], "in the session's next request");
    assert.equal(view.gapAcks.stats.gapsAcknowledged, 3);
  });
});

describe('Gaps acknowledged for a member', () => {
  /** A member got only kcompact's own records at 40-42 on `connection`. */
  async function owed(groups = ['g']) {
    const set = await (async () => {
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
      return { view, harness: new FilterHarness(view), stored };
    })();
    const run = await set.harness.request(ApiKey.ShareFetch, 1, request([IDS[COMPACTED]]));
    if (run.kind !== 'forward') throw new Error(run.kind);
    const answer = response([{ id: IDS[COMPACTED], records: set.stored.from(40) }]);
    answer.responses![0]!.partitions![0]!.acquiredRecords = [{ firstOffset: 40n, lastOffset: 42n, deliveryCount: 1 }];
    const out = await run.respond(answer);
    if (out.kind !== 'forward') throw new Error(out.kind);
    assert.deepEqual(out.body.responses[0]!.partitions[0]!.acquiredRecords, []);
    return set;
  }

  const ackBatches = (batches: [number, number, number][]) =>
    batches.map(([f, l, t]) => ({ firstOffset: BigInt(f), lastOffset: BigInt(l), acknowledgeTypes: [t] }));

  test("they go beside the member's own acknowledgements of the partition, clear of every offset it acknowledges", async () => {
    const { harness } = await owed();
    const fetch = request([IDS[COMPACTED]], 2);
    fetch.topics![0]!.partitions![0]!.acknowledgementBatches = ackBatches([
      [30, 35, 1],
      [41, 41, 0],
    ]);
    const run = await harness.request(ApiKey.ShareFetch, 1, fetch);
    if (run.kind !== 'forward') throw new Error(run.kind);
    assert.equal(run.changed, true);
    assert.deepEqual(
      run.body.topics[0]!.partitions[0]!.acknowledgementBatches.map((b) => [Number(b.firstOffset), Number(b.lastOffset), ...b.acknowledgeTypes]),
      [
        [30, 35, 1],
        [40, 40, 0],
        [41, 41, 0],
        [42, 42, 0],
      ],
    );
    // The member acknowledged the partition itself: the outcome is its own too.
    const answer = response([]);
    answer.responses = [
      {
        topicId: IDS[COMPACTED],
        partitions: [
          {
            partitionIndex: 0,
            errorCode: 0,
            acknowledgeErrorCode: 0,
            currentLeader: { leaderId: 1, leaderEpoch: 4 },
            records: Buffer.alloc(0),
            acquiredRecords: [],
          },
        ],
      },
    ];
    const out = await run.respond(answer);
    if (out.kind !== 'forward') throw new Error(out.kind);
    assert.equal(out.body.responses.length, 1);
  });

  test('a ShareFetch answer keeps no trace of them where the member acknowledged nothing of the partition', async () => {
    const { harness } = await owed();
    const run = await harness.request(ApiKey.ShareFetch, 1, request([], 2));
    if (run.kind !== 'forward') throw new Error(run.kind);
    const refused = (records: Buffer) => ({
      partitionIndex: 0,
      errorCode: 0,
      acknowledgeErrorCode: 0x7a,
      acknowledgeErrorMessage: 'INVALID_RECORD_STATE',
      currentLeader: { leaderId: 1, leaderEpoch: 4 },
      records,
      acquiredRecords: records.length > 0 ? [{ firstOffset: 43n, lastOffset: 43n, deliveryCount: 1 }] : [],
    });
    // The broker answers an acknowledgement of a partition it fetched nothing of with an entry of its own.
    const alone = response([]);
    alone.responses = [
      { topicId: IDS[COMPACTED], partitions: [refused(Buffer.alloc(0))] },
      { topicId: IDS[PLAIN], partitions: [{ ...refused(Buffer.alloc(0)), acknowledgeErrorCode: 0, acknowledgeErrorMessage: null }] },
    ];
    const out = await run.respond(alone);
    if (out.kind !== 'forward') throw new Error(out.kind);
    assert.deepEqual(
      out.body.responses.map((t) => t.topicId),
      [IDS[PLAIN]],
    );

    // An answer that also brings records of the partition keeps them, without the refusal.
    const { harness: h2, stored } = await owed();
    const run2 = await h2.request(ApiKey.ShareFetch, 1, request([], 2));
    if (run2.kind !== 'forward') throw new Error(run2.kind);
    const next = stored.end;
    await stored.writeRecords(1, 10);
    const withRecords = response([]);
    withRecords.responses = [
      {
        topicId: IDS[COMPACTED],
        partitions: [{ ...refused(stored.from(next)), acquiredRecords: [{ firstOffset: BigInt(next), lastOffset: BigInt(next), deliveryCount: 1 }] }],
      },
    ];
    const out2 = await run2.respond(withRecords);
    if (out2.kind !== 'forward') throw new Error(out2.kind);
    const p = out2.body.responses[0]!.partitions[0]!;
    assert.deepEqual([p.acknowledgeErrorCode, p.acknowledgeErrorMessage], [0, null]);
    assert.deepEqual(
      (await readBatches(p.records)).records.map((r) => r.offset),
      [next],
    );
  });

  test('ShareAcknowledge carries them too, and its answer loses the entry the member did not ask about', async () => {
    const { harness } = await owed();
    const run = await harness.request(ApiKey.ShareAcknowledge, 1, { groupId: 'g', memberId: 'member-1', shareSessionEpoch: 2, topics: [] });
    if (run.kind !== 'forward') throw new Error(run.kind);
    assert.deepEqual(
      run.body.topics.map((t) => [
        t.topicId,
        t.partitions.map((p) => p.acknowledgementBatches.map((b) => [Number(b.firstOffset), Number(b.lastOffset), ...b.acknowledgeTypes])),
      ]),
      [[IDS[COMPACTED], [[[40, 42, 0]]]]],
    );
    const out = await run.respond({
      throttleTimeMs: 0,
      errorCode: 0,
      responses: [{ topicId: IDS[COMPACTED], partitions: [{ partitionIndex: 0, errorCode: 0, currentLeader: { leaderId: 1, leaderEpoch: 4 } }] }],
      nodeEndpoints: [],
    });
    if (out.kind !== 'forward') throw new Error(out.kind);
    assert.deepEqual(out.body.responses, []);
  });

  test('a session closing, or the partition leaving it, drops them: the broker takes the offsets back', async () => {
    const closing = await owed();
    const close = await closing.harness.request(ApiKey.ShareFetch, 1, request([], -1));
    if (close.kind !== 'forward') throw new Error(close.kind);
    assert.deepEqual(close.body.topics, [], 'a closing ShareFetch carries none');
    assert.deepEqual(await nextAcks(closing.harness, { epoch: 1 }), []);

    const forgetting = await owed();
    const forget = request([], 2);
    forget.forgottenTopicsData = [{ topicId: IDS[COMPACTED], partitions: [0] }];
    const run = await forgetting.harness.request(ApiKey.ShareFetch, 1, forget);
    if (run.kind !== 'forward') throw new Error(run.kind);
    assert.deepEqual(run.body.topics, []);
    assert.deepEqual(await nextAcks(forgetting.harness, { epoch: 3 }), []);
  });
});
