/**
 * ListOffsets of compacted partitions (list-offsets-view.ts): a carried partition's earliest
 * offset is the topic's own; a replica whose index has read no pass answers the store's, but
 * where the store no longer starts at 0 only once its index has read what the store holds (it
 * may yet find a pass there), and OFFSET_NOT_AVAILABLE, which clients retry, if that takes too long.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createListOffsetsView } from '../../../../src/compaction/list-offsets/list-offsets-view.js';
import type { OffsetAtTime } from '../../../../src/engine/api/engine-reports.js';
import type { CarriedSnapshot } from '../../../../src/engine/api/index-view.js';
import { ApiKey } from '../../../../src/protocol/messages.js';
import { FilterHarness } from '../../../support/filter-harness.js';
import { configView, FakeIndex, indexView } from '../fetch-view/fake-log.js';

const EARLIEST = -2n;
const LATEST = -1n;
const OFFSET_NOT_AVAILABLE = 78;
const CARRIED: CarriedSnapshot = { copiesBelow: 300, topicStart: 0, copiesFrom: 310, copiesTo: 340, passOnly: false, marks: new Float64Array(0) };

interface Store {
  /** What the store answers: its log start for EARLIEST, its end for LATEST, this offset by time. */
  logStart: bigint;
  end: bigint;
  byTime: bigint;
}

async function ask(
  timestamp: bigint,
  opts: {
    store: Store;
    index?: FakeIndex;
    /** The index catching up, given the wait the view bounds it by. */
    caughtUp?: (index: FakeIndex | undefined, waitMs: number) => boolean | Promise<boolean>;
    indexAnswer?: OffsetAtTime | null | (() => OffsetAtTime | null);
    /** What the store's last batch is, when asked (store-tail.ts); not asked when omitted. */
    endsWithOwn?: boolean;
  },
) {
  const probes: number[] = [];
  const waits: number[] = [];
  const view = createListOffsetsView({
    config: configView(['c']),
    index: indexView(opts.index ? { 'c-0': opts.index } : {}, async (_t, _p, ms) => (waits.push(ms), (await opts.caughtUp?.(opts.index, ms)) ?? true)),
    offsetForTime: async () => (typeof opts.indexAnswer === 'function' ? opts.indexAnswer() : (opts.indexAnswer ?? null)),
    logStartOffset: async () => opts.store.logStart,
    ...(opts.endsWithOwn !== undefined && { endsWithOwnRecords: async (_t: string, _p: number, end: number) => (probes.push(end), opts.endsWithOwn) }),
    unsettledWaitMs: 40,
  });
  const run = await new FilterHarness(view).request(ApiKey.ListOffsets, 7, {
    replicaId: -1,
    isolationLevel: 0,
    topics: [{ name: 'c', partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp }] }],
    timeoutMs: 30_000,
  });
  assert.equal(run.kind, 'forward');
  if (run.kind !== 'forward') throw new Error('not forwarded');
  const offset = timestamp === EARLIEST ? opts.store.logStart : timestamp === LATEST ? opts.store.end : opts.store.byTime;
  const answer = run.awaitsResponse
    ? await run.respond({ topics: [{ name: 'c', partitions: [{ partitionIndex: 0, errorCode: 0, timestamp: -1n, offset, leaderEpoch: 3 }] }] })
    : null;
  if (answer && answer.kind !== 'forward') throw new Error('closed');
  return { p: answer ? answer.body.topics[0]!.partitions[0]! : { errorCode: 0, offset, leaderEpoch: 3 }, waits, probes };
}

/** Lets promise reactions and I/O callbacks run, a few turns of the event loop, until `done()`; mocked timers stay put. */
async function turns(done: () => boolean): Promise<void> {
  for (let i = 0; i < 20 && !done(); i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('ListOffsets of compacted partitions', () => {
  test("a carried partition's earliest offset is the topic's own, without waiting", async () => {
    const index = new FakeIndex([], 0);
    index.carry = CARRIED;
    const { p, waits } = await ask(EARLIEST, { store: { logStart: 300n, end: 400n, byTime: 0n }, index });
    assert.equal(p.offset, 0n);
    assert.equal(waits.length, 0);
  });

  test('a store that starts at 0 answers EARLIEST itself: nothing was let go', async () => {
    const { p, waits } = await ask(EARLIEST, { store: { logStart: 0n, end: 400n, byTime: 0n }, index: new FakeIndex([], 0) });
    assert.equal(p.offset, 0n);
    assert.equal(waits.length, 0);
  });

  test('the latest offset is the store\u2019s where the index saw a client\u2019s record last', async () => {
    const index = new FakeIndex([], 0);
    index.logEnd = { indexedTo: 400, visibleEnd: 400 };
    const { p, waits } = await ask(LATEST, { store: { logStart: 300n, end: 400n, byTime: 0n }, index });
    assert.equal(p.offset, 400n);
    assert.equal(p.errorCode, 0);
    assert.equal(waits.length, 0, 'an index at the store\u2019s end is not waited for');
  });

  test('the latest offset is after the last record clients see, where only kcompact\u2019s own records follow it', async () => {
    const index = new FakeIndex([], 0);
    index.carry = { ...CARRIED, topicStart: 0 };
    index.logEnd = { indexedTo: 400, visibleEnd: 341 };
    const { p, waits } = await ask(LATEST, { store: { logStart: 300n, end: 400n, byTime: 0n }, index });
    assert.equal(p.offset, 341n);
    assert.equal(waits.length, 0);
  });

  test('an index behind the store is waited for; one that does not catch up leaves the store\u2019s answer', async () => {
    const index = new FakeIndex([], 0);
    index.logEnd = { indexedTo: 380, visibleEnd: 341 };
    const behind = await ask(LATEST, { store: { logStart: 300n, end: 400n, byTime: 0n }, index, caughtUp: () => false });
    assert.equal(behind.p.offset, 400n, 'what lies past the index is not known');
    assert.equal(behind.waits.length, 1);
    const caught = await ask(LATEST, {
      store: { logStart: 300n, end: 400n, byTime: 0n },
      index,
      caughtUp: (i) => {
        i!.logEnd = { indexedTo: 400, visibleEnd: 341 };
        return true;
      },
    });
    assert.equal(caught.p.offset, 341n);
  });

  test('an index behind a store whose last batch is a client\u2019s is not waited for: the store\u2019s end stands', async () => {
    const index = new FakeIndex([], 0);
    index.logEnd = { indexedTo: 380, visibleEnd: 341 };
    const client = await ask(LATEST, { store: { logStart: 300n, end: 400n, byTime: 0n }, index, endsWithOwn: false, caughtUp: () => false });
    assert.equal(client.p.offset, 400n);
    assert.deepEqual(client.probes, [400], 'the batch holding 399 is looked at');
    assert.equal(client.waits.length, 0, 'a produce the index has not read yet costs no wait');
    const own = await ask(LATEST, {
      store: { logStart: 300n, end: 400n, byTime: 0n },
      index,
      endsWithOwn: true,
      caughtUp: (i) => {
        i!.logEnd = { indexedTo: 400, visibleEnd: 341 };
        return true;
      },
    });
    assert.equal(own.waits.length, 1, 'kcompact\u2019s own records last: the index says where the log ends');
    assert.equal(own.p.offset, 341n);
  });

  test('the latest offset is never below the earliest', async () => {
    const index = new FakeIndex([], 0);
    index.logEnd = { indexedTo: 400, visibleEnd: 0 };
    const { p } = await ask(LATEST, { store: { logStart: 300n, end: 400n, byTime: 0n }, index });
    assert.equal(p.offset, 300n, 'an uncarried partition: the store\u2019s log start');
  });

  for (const indexed of [true, false]) {
    test(`${indexed ? 'an index' : 'no index yet'}: EARLIEST past 0 waits for it, then answers the pass it read`, async () => {
      const index = new FakeIndex([], 0);
      const { p, waits } = await ask(EARLIEST, {
        store: { logStart: 300n, end: 400n, byTime: 0n },
        ...(indexed && { index }),
        caughtUp: (i) => {
          if (i) i.carry = CARRIED;
          return true;
        },
      });
      assert.deepEqual(waits, [40]);
      assert.equal(p.errorCode, 0);
      // Without an index the view has nothing to answer from: the store's answer stands.
      assert.equal(p.offset, indexed ? 0n : 300n);
    });
  }

  test('EARLIEST past 0: a pass the new index finds in the store answers before the index catches up', async (t) => {
    // On a mocked clock: the view looks for a pass found in the store every few ms (caught-up.ts)
    // until the wait it set (unsettledWaitMs, 40 ms) is over.
    t.mock.timers.enable({ apis: ['setTimeout', 'Date'] });
    const index = new FakeIndex([], 0);
    let [asked, indexDone] = [false, false];
    const answering = ask(EARLIEST, {
      store: { logStart: 300n, end: 400n, byTime: 0n },
      index,
      // Asked to catch up, the index finds the store's last pass at once, but reads the rest for
      // longer than the view waits: it gives up, not caught up, at the bound the view set.
      caughtUp: (i, waitMs) => {
        asked = true;
        i!.carry = CARRIED;
        return new Promise<boolean>((resolve) => setTimeout(() => ((indexDone = true), resolve(false)), waitMs));
      },
    });
    let answered = false;
    void answering.then(() => (answered = true));
    await turns(() => asked);
    await turns(() => answered);
    assert.equal(asked, true, 'the view waits for the index');
    assert.equal(answered, false, 'no answer before the view looks for a pass again');
    // A millisecond at a time, up to the index's bound: the answer comes at the look that finds the pass.
    for (let ms = 0; ms < 40 && !answered; ms++) {
      t.mock.timers.tick(1);
      await turns(() => answered);
    }
    assert.equal(answered, true, 'answered within the wait');
    assert.equal(indexDone, false, 'while the index was still catching up');
    t.mock.timers.tick(40);
    const { p, waits } = await answering;
    assert.deepEqual(waits, [40], 'one wait, bounded by unsettledWaitMs');
    assert.equal(p.errorCode, 0, 'not OFFSET_NOT_AVAILABLE, which an index that does not catch up gets');
    assert.equal(p.offset, 0n, "the pass's topic start");
  });

  for (const caughtUp of [true, false]) {
    test(`by timestamp, a pass found is not enough: the answer waits for the index of the records (${caughtUp ? 'read' : 'not in time'})`, async () => {
      const index = new FakeIndex([], 0);
      index.carry = CARRIED;
      let read = false;
      const { p, waits } = await ask(1_000n, {
        store: { logStart: 300n, end: 400n, byTime: 350n },
        index,
        caughtUp: () => (read = caughtUp),
        indexAnswer: () =>
          read ? { found: { offset: 12, timestamp: 1_005 }, indexedUpTo: 400, unread: false } : { found: null, indexedUpTo: 0, unread: true },
      });
      assert.deepEqual(waits, [40]);
      if (caughtUp) assert.deepEqual([p.errorCode, p.offset], [0, 12n]);
      else assert.deepEqual([p.errorCode, p.offset], [OFFSET_NOT_AVAILABLE, -1n]);
    });
  }

  test("EARLIEST past 0 of an index that read everything and no pass: the store's answer", async () => {
    const { p } = await ask(EARLIEST, { store: { logStart: 300n, end: 400n, byTime: 0n }, index: new FakeIndex([], 0) });
    assert.equal(p.offset, 300n);
    assert.equal(p.errorCode, 0);
  });

  test('an index that does not catch up in time: OFFSET_NOT_AVAILABLE, which clients retry', async () => {
    for (const timestamp of [EARLIEST, 1_000n]) {
      const { p } = await ask(timestamp, { store: { logStart: 300n, end: 400n, byTime: 350n }, index: new FakeIndex([], 0), caughtUp: () => false });
      assert.equal(p.errorCode, OFFSET_NOT_AVAILABLE);
      assert.equal(p.offset, -1n);
    }
  });

  test('the wait is bounded: an index still reading at the bound, with no pass found, gets OFFSET_NOT_AVAILABLE then', async (t) => {
    t.mock.timers.enable({ apis: ['setTimeout', 'Date'] });
    let [asked, givenUp] = [0, 0];
    const answering = ask(EARLIEST, {
      store: { logStart: 300n, end: 400n, byTime: 0n },
      index: new FakeIndex([], 0),
      // An index gives up, not caught up, at the timeout it is given (IndexView.caughtUp).
      caughtUp: (_i, waitMs) => (asked++, new Promise<boolean>((resolve) => setTimeout(() => (givenUp++, resolve(false)), waitMs))),
    });
    let answered = false;
    void answering.then(() => (answered = true));
    await turns(() => asked > 0);
    assert.equal(asked, 1, 'the view waits for the index');
    t.mock.timers.tick(39);
    await turns(() => answered);
    assert.equal(answered, false, 'still waiting 1 ms before the bound');
    t.mock.timers.tick(1);
    await turns(() => answered);
    assert.equal(answered, true, 'answered at the bound');
    const { p, waits } = await answering;
    assert.deepEqual(waits, [40]);
    assert.equal(givenUp, 1);
    assert.deepEqual([p.errorCode, p.offset], [OFFSET_NOT_AVAILABLE, -1n]);
  });

  test('by timestamp past a moved log start: the index answers once it has read the pass', async () => {
    const index = new FakeIndex([], 0);
    const { p } = await ask(1_000n, {
      store: { logStart: 300n, end: 400n, byTime: 350n },
      index,
      caughtUp: (i) => ((i!.carry = CARRIED), true),
      indexAnswer: { found: { offset: 12, timestamp: 1_005 }, indexedUpTo: 400, unread: false },
    });
    assert.equal(p.offset, 12n);
    assert.equal(p.leaderEpoch, -1);
  });

  test('by timestamp on a store that starts at 0: the store answers, without waiting', async () => {
    const { p, waits } = await ask(1_000n, { store: { logStart: 0n, end: 400n, byTime: 350n }, index: new FakeIndex([], 0), caughtUp: () => false });
    assert.equal(p.offset, 350n);
    assert.equal(waits.length, 0);
  });
});
