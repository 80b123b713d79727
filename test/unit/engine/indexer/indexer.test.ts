/**
 * The Indexer against a scripted upstream (scripted-upstream.ts), with a real StoreRegistry and
 * its SQLite files in a temp dir: what reaches the index (up to the last stable offset, aborted
 * data flagged, markers as rows), resuming from the checkpoint, a log start that moves up, an
 * index ahead of the upstream, leader changes and failures, partitions and topics that appear
 * or go. The indexer runs on the scripted upstream's manual clock with its default intervals,
 * backoffs and long polls: every wait for an outcome moves that clock on, a step at a time, until
 * the outcome is there (or a deadline of the clock's time passes), so nothing waits in real time
 * and nothing depends on how fast the machine is.
 */
import assert from 'node:assert/strict';
import { capturingLogger } from '../../../support/capturing-logger.js';
import fs from 'node:fs';
import { describe, it, type TestContext } from 'node:test';
import { DEFAULT_POLICY } from '../../../support/default-policy.js';
import { ManualClock } from '../../../support/manual-clock.js';
import { makeTempDir } from '../../../support/processes.js';
import { type IndexerOptions } from '../../../../src/engine/api/engine-options.js';
import { Indexer } from '../../../../src/engine/indexer/indexer.js';
import { keyDigest } from '../../../../src/engine/store/key-digest.js';
import { RecordFlag } from '../../../../src/engine/store/record-flags.js';
import { StoreRegistry } from '../../../../src/engine/store/store-registry.js';
import type { PartitionStore } from '../../../../src/engine/store/partition-store.js';
import { ErrorCode } from '../../../../src/protocol/errors.js';
import { ApiKey } from '../../../../src/protocol/messages.js';
import { dataBatch } from './batch-builder.js';
import { ScriptedUpstream } from './scripted-upstream.js';
import { Log } from '../carry/store-log.js';
import type { SurvivorSnapshot } from '../../../../src/engine/api/survivor-set.js';

const { Tombstone, Control, Commit, Transactional, Aborted } = RecordFlag;

/** Of the manual clock's time: a few metadata intervals (10 s by default). */
const DEADLINE_MS = 60_000;
/** How far the manual clock moves between two looks at an outcome. */
const STEP_MS = 10;

interface Row {
  offset: number;
  key: string | null;
  flags: number;
  pid: number | null;
  txnFirst: number | null;
}

interface Bed {
  up: ScriptedUpstream;
  registry: StoreRegistry;
  indexer: Indexer;
  /** Info, warn and error lines logged, as "level message {fields}". */
  lines: string[];
  dataDir: string;
  /** Closes the indexer and its files (the upstream stays); start() is then a restart over the same data dir. */
  stop(): Promise<void>;
  /** Opens the data dir (its existing indexes first) and starts an indexer over it. */
  start(): void;
}

function policies(...topics: string[]) {
  return new Map(topics.map((t) => [t, DEFAULT_POLICY]));
}

/** An indexer over a fresh data dir and `up`, started, tailing `topics`; closed when the test ends. */
function bed(t: TestContext, up: ScriptedUpstream, topics: string[], options: IndexerOptions = {}): Bed {
  const data = makeTempDir('kcompact-indexer-unit-');
  const lines: string[] = [];
  const log = capturingLogger(lines);
  let running = false;
  const b: Bed = {
    up,
    lines,
    dataDir: data.path,
    registry: undefined as unknown as StoreRegistry,
    indexer: undefined as unknown as Indexer,
    start() {
      b.registry = new StoreRegistry(data.path, log, () => {});
      b.registry.openExisting();
      b.indexer = new Indexer(up, b.registry, log, options, undefined, up.clock);
      b.indexer.start();
      b.indexer.setPolicies(policies(...topics));
      running = true;
    },
    async stop() {
      if (!running) return;
      running = false;
      await up.clock.drive(b.indexer.close());
      b.registry.closeAll();
    },
  };
  b.start();
  t.after(async () => {
    await b.stop();
    data.remove();
  });
  return b;
}

/**
 * Moves the clock on, STEP_MS at a time with a turn of the event loop between steps, until `check`
 * gives something other than undefined or false, or deadlineMs of the clock's time have passed.
 */
async function until<T>(clock: ManualClock, what: string, check: () => T | undefined | false, deadlineMs = DEADLINE_MS, detail?: () => string): Promise<T> {
  const end = clock.now() + deadlineMs;
  for (;;) {
    const value = check();
    if (value !== undefined && value !== false) return value;
    if (clock.now() > end) throw new Error(`${what}: not so after ${deadlineMs} ms of the clock${detail ? `\n${detail()}` : ''}`);
    await clock.tick(STEP_MS);
  }
}

function store(b: Bed, topic: string, partition: number): PartitionStore | undefined {
  return b.registry.get(topic, partition);
}

function rows(b: Bed, topic: string, partition: number): Row[] {
  const s = store(b, topic, partition);
  if (!s) return [];
  return s.rowsIn(0, Infinity).map((r) => ({
    offset: r.offset,
    key: r.key === null ? null : r.key.toString('hex'),
    flags: r.flags,
    pid: r.producerId,
    txnFirst: r.txnFirst,
  }));
}

function digest(key: string): string {
  return keyDigest(Buffer.from(key)).toString('hex');
}

/** Waits until the partition's index has reached `nextOffset`; returns its store. */
function indexedTo(b: Bed, topic: string, partition: number, nextOffset: number): Promise<PartitionStore> {
  return until(
    b.up.clock,
    `${topic}-${partition} indexed up to ${nextOffset}`,
    () => {
      const s = store(b, topic, partition);
      return s && s.checkpoint.nextOffset === nextOffset ? s : undefined;
    },
    DEADLINE_MS,
    () => `checkpoint ${JSON.stringify(store(b, topic, partition)?.checkpoint)}; status ${JSON.stringify(b.indexer.status())}\n${b.lines.join('\n')}`,
  );
}

/** Produces `n` single-record batches of keys k<start>.. to the partition. */
async function produceMany(up: ScriptedUpstream, topic: string, partition: number, n: number, start = 0): Promise<void> {
  for (let i = 0; i < n; i++) await up.produce(topic, partition, [{ key: `k${start + i}`, value: `v${start + i}` }]);
}

function offsets(rs: Row[]): number[] {
  return rs.map((r) => r.offset);
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from }, (_, i) => from + i);
}

describe('Indexer', () => {
  describe('what reaches the index', () => {
    it('indexes up to the last stable offset only: aborted data flagged, markers as rows with their transaction', async (t) => {
      const up = new ScriptedUpstream();
      up.createTopic('t', 1);
      await up.produce('t', 0, [
        { key: 'a', value: '1' },
        { key: 'b', value: '2' },
        { key: 'a', value: null },
      ]); // 0-2
      await up.produce(
        't',
        0,
        [
          { key: 'x', value: 'aborted' },
          { key: 'y', value: 'aborted' },
        ],
        { producerId: 7 },
      ); // 3-4
      await up.endTransaction('t', 0, 7, false); // 5: ABORT
      await up.produce('t', 0, [{ key: 'x', value: 'committed' }], { producerId: 8 }); // 6
      await up.endTransaction('t', 0, 8, true); // 7: COMMIT
      await up.produce('t', 0, [{ key: 'c', value: '3' }]); // 8
      await up.produce('t', 0, [{ key: 'd', value: 'open' }], { producerId: 9 }); // 9: open, the last stable offset
      await up.produce('t', 0, [{ key: 'e', value: 'after' }]); // 10
      assert.equal(up.log('t', 0).lastStable, 9);
      const b = bed(t, up, ['t']);

      const s = await indexedTo(b, 't', 0, 9);
      assert.deepEqual(
        rows(b, 't', 0).map((r) => [r.offset, r.flags, r.pid, r.txnFirst]),
        [
          [0, 0, null, null],
          [1, 0, null, null],
          [2, Tombstone, null, null],
          [3, Transactional | Aborted, 7, null],
          [4, Transactional | Aborted, 7, null],
          [5, Control | Transactional, 7, 3],
          [6, Transactional, 8, null],
          [7, Control | Transactional | Commit, 8, 6],
          [8, 0, null, null],
        ],
      );
      assert.deepEqual(
        rows(b, 't', 0)
          .slice(0, 3)
          .map((r) => r.key),
        [digest('a'), digest('b'), digest('a')],
      );
      assert.equal(s.checkpoint.lastStableOffset, 9);
      assert.equal(s.checkpoint.highWatermark, 11);
      assert.ok(
        up.fetches({ topic: 't' }).some((f) => f.fetchOffset === 9),
        'the answers held the batches past the last stable offset, and the indexer stopped before them',
      );

      // The transaction is decided: the last stable offset moves past it, and so does the index.
      await up.endTransaction('t', 0, 9, true); // 11
      await indexedTo(b, 't', 0, 12);
      assert.deepEqual(
        rows(b, 't', 0)
          .slice(9)
          .map((r) => [r.offset, r.flags, r.pid, r.txnFirst]),
        [
          [9, Transactional, 9, null],
          [10, 0, null, null],
          [11, Control | Transactional | Commit, 9, 9],
        ],
      );
    });

    it('asks by topic name (Fetch v12) when the upstream gives no topic ids', async (t) => {
      const up = new ScriptedUpstream();
      up.topicIds = false;
      up.createTopic('t', 1);
      await produceMany(up, 't', 0, 3);
      const b = bed(t, up, ['t']);
      const s = await indexedTo(b, 't', 0, 3);
      assert.equal(s.checkpoint.topicId, '');
      assert.ok(up.fetches().length > 0);
      assert.ok(
        up.fetches().every((f) => f.version === 12 && f.topic === 't'),
        JSON.stringify(up.fetches()),
      );
    });

    it('fetches all of a broker’s partitions in one request, one loop per leader', async (t) => {
      const up = new ScriptedUpstream();
      up.createTopic('t', 4, [1, 2]);
      for (let p = 0; p < 4; p++) await produceMany(up, 't', p, 2 + p);
      const b = bed(t, up, ['t']);
      for (let p = 0; p < 4; p++) await indexedTo(b, 't', p, 2 + p);
      const fetches = up.fetches();
      assert.ok(
        fetches.every((f) => f.node === (f.partition % 2 === 0 ? 1 : 2) && f.version === 16),
        JSON.stringify(fetches),
      );
      const perRequest = new Map<number, number>();
      for (const f of fetches) perRequest.set(f.seq, (perRequest.get(f.seq) ?? 0) + 1);
      assert.ok(
        [...perRequest.values()].some((n) => n === 2),
        'a request to a broker carries both of its partitions',
      );
      assert.deepEqual(
        b.indexer
          .status()
          .map((s) => [s.partition, s.leader])
          .sort(),
        [
          [0, 1],
          [1, 2],
          [2, 1],
          [3, 2],
        ],
      );
    });

    it('keeps a damaged batch and everything after it out of the index, and goes on once it reads well', async (t) => {
      const up = new ScriptedUpstream();
      up.createTopic('t', 1);
      await produceMany(up, 't', 0, 5);
      const b = bed(t, up, ['t']);
      await indexedTo(b, 't', 0, 5);
      // What follows arrives in one answer: two good batches, then the damaged one.
      up.log('t', 0).withholdFrom = 5;
      await produceMany(up, 't', 0, 2, 5); // 5, 6
      const good = await dataBatch({ baseOffset: 7 }, [
        { key: 'k7', value: 'v7' },
        { key: 'k8', value: 'v8' },
      ]);
      const damaged = Buffer.from(good);
      damaged[damaged.length - 1]! ^= 0xff;
      up.appendRaw('t', 0, damaged); // 7-8, failing its CRC
      up.log('t', 0).withholdFrom = undefined;
      up.changed();
      await until(
        up.clock,
        'the failure logged',
        () => b.lines.some((l) => l.startsWith('error indexing a partition failed')),
        DEADLINE_MS,
        () => b.lines.join('\n'),
      );
      const s = store(b, 't', 0)!;
      assert.ok(s.checkpoint.nextOffset <= 7, `indexed up to ${s.checkpoint.nextOffset}`);
      assert.ok(rows(b, 't', 0).every((r) => r.offset < 7));
      assert.match(b.indexer.status()[0]!.lastError ?? '', /CRC/);
      // The documented rule is only that nothing from the damaged batch on is indexed; where the
      // index stops before it (the good batches of the same answer) is reported, not asserted.
      t.diagnostic(`with the damaged batch at 7 in the answer from 5, the index stays at ${s.checkpoint.nextOffset}`);

      up.log('t', 0).batches.at(-1)!.bytes = good;
      up.changed();
      await indexedTo(b, 't', 0, 9);
      assert.deepEqual(offsets(rows(b, 't', 0)), range(0, 9));
      assert.equal(b.lines.filter((l) => l.startsWith('error indexing a partition failed')).length, 1, 'said once');
      assert.equal(b.indexer.status()[0]!.lastError, undefined);
    });
  });

  describe('lazy indexing', () => {
    it('indexes only the partitions it is told it wants, lets one go once it is not, and starts it over when wanted again', async (t) => {
      const up = new ScriptedUpstream();
      up.createTopic('t', 2);
      await produceMany(up, 't', 0, 5);
      await produceMany(up, 't', 1, 7);
      const b = bed(t, up, ['t']);
      const wanted = new Set(['t-0']);
      b.indexer.setWanted((topic, partition) => wanted.has(`${topic}-${partition}`));

      await indexedTo(b, 't', 0, 5);
      await until(up.clock, 'a few fetches more', () => up.fetches({ topic: 't', partition: 0 }).length >= 3);
      assert.equal(store(b, 't', 1), undefined, 't-1 has no index');
      assert.deepEqual(up.fetches({ topic: 't', partition: 1 }), [], 't-1 was never read');
      assert.deepEqual(
        b.indexer.partitions().map((p) => `${p.topic}-${p.partition}`),
        ['t-0', 't-1'],
        'both are known from metadata',
      );

      wanted.add('t-1');
      b.indexer.want('t', 1);
      await indexedTo(b, 't', 1, 7);

      wanted.delete('t-0');
      await until(up.clock, 't-0 let go', () => store(b, 't', 0) === undefined);
      assert.ok(
        b.lines.some((l) => l.includes('letting a partition index go')),
        'said so',
      );
      assert.equal(store(b, 't', 1)?.checkpoint.nextOffset, 7, "the other partition's index stays");
      const fetchesOfZero = up.fetches({ topic: 't', partition: 0 }).length;
      await produceMany(up, 't', 1, 2, 7);
      await indexedTo(b, 't', 1, 9);
      assert.equal(up.fetches({ topic: 't', partition: 0 }).length, fetchesOfZero, 't-0 is no longer read');

      wanted.add('t-0');
      b.indexer.want('t', 0);
      const again = await indexedTo(b, 't', 0, 5);
      assert.deepEqual(offsets(rows(b, 't', 0)), range(0, 5), 'indexed again from the log start');
      assert.equal(again.rowCount, 5);

      wanted.clear();
      await until(up.clock, 'both let go', () => store(b, 't', 0) === undefined && store(b, 't', 1) === undefined);
      assert.ok(!fs.existsSync(b.registry.fileOf('t')), "the topic's file goes with its last partition");
    });
  });

  describe('a new index of a carried store', () => {
    it('serves the last whole pass the store holds, as stored, until the index has read the store', async (t) => {
      const log = new Log();
      await log.writeRecords(100, 10);
      const pass = await log.carry(new Set(range(90, 100)), 100);
      await log.writeRecords(30, 10);
      const up = new ScriptedUpstream();
      up.createTopic('t', 1);
      for (const batch of log.batches) up.log('t', 0).append(batch);
      up.log('t', 0).deleteBefore(100);

      const data = makeTempDir('kcompact-indexer-unit-');
      const lines: string[] = [];
      const published: (SurvivorSnapshot | null)[] = [];
      const registry = new StoreRegistry(data.path, capturingLogger(lines), (_id, snapshot) => published.push(snapshot));
      const indexer = new Indexer(up, registry, capturingLogger(lines), {}, undefined, up.clock);
      t.after(async () => {
        await up.clock.drive(indexer.close());
        registry.closeAll();
        data.remove();
      });
      indexer.start();
      indexer.setPolicies(policies('t'));
      const s = await until(up.clock, 'indexed to the end', () => registry.get('t', 0)?.checkpoint.nextOffset === log.end && registry.get('t', 0));
      const asStored = published.findIndex((p) => p?.carried?.asStored === true);
      assert.ok(asStored >= 0, `the pass found in the store was published: ${lines.join('\n')}`);
      assert.deepEqual(
        { ...published[asStored]!.carried!, marks: [...published[asStored]!.carried!.marks] },
        { copiesBelow: 100, topicStart: 0, copiesFrom: pass, copiesTo: pass + 2, passOnly: true, marks: [90, pass + 1], asStored: true },
      );
      assert.equal(published[asStored]!.cleanedUpTo, 0, 'nothing hidden: the store as it holds it');
      const after = published.slice(asStored + 1);
      assert.ok(
        after.length > 0 && after.every((p) => p?.carried?.copiesFrom === pass && p.carried.asStored === undefined),
        "then only the index's own, once it has read the pass",
      );
      assert.equal(s.carry.pass, pass);
    });
  });

  describe('restarts', () => {
    it('resumes from its checkpoint, open transactions included, without reading from 0 again', async (t) => {
      const up = new ScriptedUpstream();
      up.createTopic('t', 1);
      await produceMany(up, 't', 0, 4); // 0-3
      await up.produce('t', 0, [{ key: 'tx', value: 'in a transaction' }], { producerId: 5 }); // 4
      await up.endTransaction('t', 0, 5, true); // 5: COMMIT
      // The marker is held back: the index stops between the transaction's data and its marker.
      up.log('t', 0).withholdFrom = 5;
      const b = bed(t, up, ['t']);
      const before = await indexedTo(b, 't', 0, 5);
      assert.deepEqual([...before.openTransactions], [[5, 4]]);
      await b.stop();

      up.log('t', 0).withholdFrom = undefined;
      await produceMany(up, 't', 0, 3, 6); // 6-8
      const seq = up.requests.length;
      b.start();
      assert.equal(store(b, 't', 0)!.checkpoint.nextOffset, 5, 'the checkpoint, before any fetch');
      await indexedTo(b, 't', 0, 9);
      const after = up.fetches().filter((f) => f.seq >= seq);
      assert.equal(after[0]!.fetchOffset, 5, 'the first fetch after the restart starts at the checkpoint');
      assert.ok(
        after.every((f) => f.fetchOffset >= 5),
        JSON.stringify(after),
      );
      const all = rows(b, 't', 0);
      assert.deepEqual(offsets(all), range(0, 9));
      assert.deepEqual([all[5]!.flags, all[5]!.txnFirst], [Control | Transactional | Commit, 4], 'the marker knows where its transaction began');
      assert.ok(!b.lines.some((l) => /resetting|rebuilding|dropping/.test(l)), b.lines.join('\n'));
    });
  });

  describe('the upstream log start', () => {
    it('drops what went below a log start moved by DeleteRecords, which it asks of the leader', async (t) => {
      const up = new ScriptedUpstream();
      up.createTopic('t', 2, [2, 1]);
      await produceMany(up, 't', 0, 10);
      const b = bed(t, up, ['t']);
      await indexedTo(b, 't', 0, 10);

      assert.equal(await b.indexer.deleteRecords('t', 0, 6), true);
      const asked = up.requests.filter((r) => r.apiKey === ApiKey.DeleteRecords);
      assert.deepEqual(
        asked.map((r) => [r.node, JSON.stringify(r.body)]),
        [[2, JSON.stringify({ topics: [{ name: 't', partitions: [{ partitionIndex: 0, offset: 6 }] }], timeoutMs: 30_000 })]],
      );
      const s = await until(up.clock, 'the index follows the log start', () => {
        const s = store(b, 't', 0);
        return s && s.checkpoint.logStartOffset === 6 ? s : undefined;
      });
      assert.deepEqual(offsets(rows(b, 't', 0)), range(6, 10));
      assert.equal(s.checkpoint.nextOffset, 10);
    });

    it('says once that the upstream would not delete records, and answers false', async (t) => {
      const up = new ScriptedUpstream();
      up.createTopic('t', 1);
      await produceMany(up, 't', 0, 3);
      up.deleteRecordsError = ErrorCode.POLICY_VIOLATION;
      const b = bed(t, up, ['t']);
      await indexedTo(b, 't', 0, 3);
      assert.equal(await b.indexer.deleteRecords('t', 0, 2), false);
      assert.equal(await b.indexer.deleteRecords('t', 0, 2), false);
      assert.equal(await b.indexer.deleteRecords('t', 7, 2), false, 'a partition it does not tail');
      const warned = b.lines.filter((l) => l.startsWith('warn upstream did not delete records'));
      assert.equal(warned.length, 2, warned.join('\n'));
      assert.equal(up.log('t', 0).logStart, 0);
      assert.deepEqual(offsets(rows(b, 't', 0)), range(0, 3));
    });

    it('starts from the new log start when it passed the checkpoint while the indexer was down', async (t) => {
      const up = new ScriptedUpstream();
      up.createTopic('t', 1);
      await produceMany(up, 't', 0, 10);
      const b = bed(t, up, ['t']);
      await indexedTo(b, 't', 0, 10);
      await b.stop();

      await produceMany(up, 't', 0, 10, 10); // 10-19
      up.log('t', 0).deleteBefore(15);
      b.start();
      const s = await indexedTo(b, 't', 0, 20);
      assert.equal(s.checkpoint.logStartOffset, 15);
      assert.deepEqual(offsets(rows(b, 't', 0)), range(15, 20));
      assert.ok(
        up.requests.some((r) => r.apiKey === ApiKey.ListOffsets),
        'the fetch out of range asked where the log starts',
      );
      assert.ok(!b.lines.some((l) => /resetting/.test(l)), b.lines.join('\n'));
    });
  });

  describe('an index ahead of the upstream', () => {
    it('starts over when the topic was deleted and created again (a new topic id)', async (t) => {
      const up = new ScriptedUpstream();
      const old = up.createTopic('t', 2);
      await produceMany(up, 't', 0, 10);
      await produceMany(up, 't', 1, 4);
      const b = bed(t, up, ['t']);
      await indexedTo(b, 't', 0, 10);
      await indexedTo(b, 't', 1, 4);
      assert.equal(store(b, 't', 0)!.checkpoint.topicId, old.id);

      up.deleteTopic('t');
      const fresh = up.createTopic('t', 1);
      await up.produce('t', 0, [{ key: 'new', value: 'n' }]);
      await up.produce('t', 0, [{ key: 'newer', value: 'n' }]);
      const s = await until(up.clock, 'the index follows the new topic', () => {
        const s = store(b, 't', 0);
        return s && s.checkpoint.topicId === fresh.id && s.checkpoint.nextOffset === 2 ? s : undefined;
      });
      assert.deepEqual(
        rows(b, 't', 0).map((r) => [r.offset, r.key]),
        [
          [0, digest('new')],
          [1, digest('newer')],
        ],
      );
      assert.equal(s.checkpoint.highWatermark, 2);
      assert.equal(store(b, 't', 1), undefined, 'the old topic’s second partition is gone');
      assert.deepEqual(
        b.indexer.status().map((x) => x.partition),
        [0],
      );
      assert.ok(
        b.lines.some((l) => l.includes('dropping topic index') && l.includes('re-created')),
        b.lines.join('\n'),
      );
      const after = up.fetches().filter((f) => f.topicId === fresh.id);
      assert.equal(after[0]!.fetchOffset, 0);
    });

    it('starts over when the upstream log was cut back below the checkpoint', async (t) => {
      const up = new ScriptedUpstream();
      up.createTopic('t', 1);
      await produceMany(up, 't', 0, 10);
      const b = bed(t, up, ['t']);
      await indexedTo(b, 't', 0, 10);

      up.log('t', 0).truncate(6);
      up.changed();
      await until(
        up.clock,
        'the index reset',
        () => b.lines.some((l) => l.includes('resetting partition index') && l.includes('upstream log ends at 6')),
        DEADLINE_MS,
        () => b.lines.join('\n'),
      );
      await indexedTo(b, 't', 0, 6);
      await produceMany(up, 't', 0, 2, 100); // 6-7, new keys
      await indexedTo(b, 't', 0, 8);
      assert.deepEqual(
        rows(b, 't', 0).map((r) => r.key),
        [...range(0, 6).map((i) => digest(`k${i}`)), digest('k100'), digest('k101')],
      );
    });
  });

  describe('leaders and failures', () => {
    it('asks Metadata again after NOT_LEADER_OR_FOLLOWER and fetches from the new leader', async (t) => {
      const up = new ScriptedUpstream();
      up.createTopic('t', 1, [1]);
      await produceMany(up, 't', 0, 4);
      // No periodic metadata: only the error answer can tell the indexer of the new leader.
      const b = bed(t, up, ['t'], { metadataIntervalMs: 60_000 });
      await indexedTo(b, 't', 0, 4);
      const answersBefore = up.metadataAnswers;
      up.log('t', 0).leader = 2;
      await produceMany(up, 't', 0, 2, 4);
      await indexedTo(b, 't', 0, 6);

      const refused = up.fetches({ node: 1 }).find((f) => f.errorCode === ErrorCode.NOT_LEADER_OR_FOLLOWER);
      assert.ok(refused, JSON.stringify(up.fetches()));
      const firstAt2 = up.fetches({ node: 2 })[0]!;
      assert.ok(firstAt2.seq >= refused.answeredAt!, 'broker 2 was fetched from after broker 1 refused');
      const metadataBetween = up.requests.slice(refused.answeredAt, firstAt2.seq).some((r) => r.apiKey === ApiKey.Metadata);
      assert.ok(metadataBetween, 'Metadata was asked between the refusal and the fetch from broker 2');
      assert.ok(up.metadataAnswers > answersBefore);
      assert.equal(firstAt2.fetchOffset, 4);
      assert.deepEqual(offsets(rows(b, 't', 0)), range(0, 6));
      assert.deepEqual(
        b.indexer.status().map((s) => [s.leader, s.lastError]),
        [[2, undefined]],
      );
    });

    it('keeps asking while Metadata still names the old leader, and indexes once it names the new one', async (t) => {
      const up = new ScriptedUpstream();
      up.createTopic('t', 1, [1]);
      await produceMany(up, 't', 0, 4);
      const b = bed(t, up, ['t'], { metadataIntervalMs: 60_000 });
      await indexedTo(b, 't', 0, 4);
      const log = up.log('t', 0);
      log.leader = 2;
      log.metadataLeader = 1;
      await produceMany(up, 't', 0, 2, 4);
      const refusals = () => up.fetches({ node: 1 }).filter((f) => f.errorCode === ErrorCode.NOT_LEADER_OR_FOLLOWER);
      await until(up.clock, 'broker 1 refused three times', () => refusals().length >= 3);
      assert.match(b.indexer.status()[0]!.lastError ?? '', /^fetch error NOT_LEADER_OR_FOLLOWER/);
      assert.equal(store(b, 't', 0)!.checkpoint.nextOffset, 4);
      const [first, second] = refusals();
      assert.ok(
        up.requests.slice(first!.answeredAt, second!.seq).some((r) => r.apiKey === ApiKey.Metadata),
        'Metadata was asked again between the refusals',
      );
      assert.equal(up.fetches({ node: 2 }).length, 0);

      log.metadataLeader = undefined;
      await indexedTo(b, 't', 0, 6);
      assert.deepEqual(offsets(rows(b, 't', 0)), range(0, 6));
      assert.equal(b.indexer.status()[0]!.leader, 2);
    });

    it('backs off and retries after connection failures, dropping the broker’s connection each time', async (t) => {
      const up = new ScriptedUpstream();
      up.createTopic('t', 1, [1]);
      await produceMany(up, 't', 0, 4);
      const b = bed(t, up, ['t']);
      await indexedTo(b, 't', 0, 4);

      up.failConnects(1, 2);
      up.failNext(ApiKey.Fetch, 2, 1);
      await produceMany(up, 't', 0, 3, 4);
      await indexedTo(b, 't', 0, 7);
      const failed = b.lines.filter((l) => l.startsWith('warn index fetch failed'));
      assert.equal(failed.length, 4, b.lines.join('\n'));
      assert.ok(failed.some((l) => l.includes('ECONNREFUSED')) && failed.some((l) => l.includes('closed the connection')));
      assert.deepEqual(up.dropped, [1, 1, 1, 1]);
      assert.ok(
        b.lines.some((l) => l.startsWith('info upstream broker reachable again') && l.includes('"after":4')),
        b.lines.join('\n'),
      );
      assert.deepEqual(offsets(rows(b, 't', 0)), range(0, 7));
      assert.equal(b.indexer.status()[0]!.lastError, undefined);
    });

    it('retries Metadata after it failed, then tails what it names', async (t) => {
      const up = new ScriptedUpstream();
      up.createTopic('t', 1);
      await produceMany(up, 't', 0, 3);
      up.failNext(ApiKey.Metadata, 3);
      const b = bed(t, up, ['t']);
      await indexedTo(b, 't', 0, 3);
      assert.equal(b.lines.filter((l) => l.startsWith('warn upstream metadata failed')).length, 3, b.lines.join('\n'));
      assert.ok(
        b.lines.some((l) => l.startsWith('info upstream metadata reachable again')),
        b.lines.join('\n'),
      );
    });

    it('pauses a partition the leader answers with an error, says why, and goes on after', async (t) => {
      const up = new ScriptedUpstream();
      up.createTopic('t', 2, [1]);
      await produceMany(up, 't', 0, 2);
      await produceMany(up, 't', 1, 2);
      up.log('t', 0).fetchError = ErrorCode.UNKNOWN_SERVER_ERROR;
      const b = bed(t, up, ['t']);
      await indexedTo(b, 't', 1, 2);
      await until(
        up.clock,
        'the error shown',
        () =>
          b.indexer
            .status()
            .find((s) => s.partition === 0)
            ?.lastError?.startsWith('fetch error UNKNOWN_SERVER_ERROR'),
        DEADLINE_MS,
        () => JSON.stringify(b.indexer.status()) + b.lines.join('\n'),
      );
      assert.equal(store(b, 't', 0)!.checkpoint.nextOffset, 0);
      up.log('t', 0).fetchError = undefined;
      await indexedTo(b, 't', 0, 2);
      assert.equal(b.indexer.status().find((s) => s.partition === 0)?.lastError, undefined);
    });
  });

  describe('what the metadata loop finds', () => {
    it('picks up partitions added with CreatePartitions', async (t) => {
      const up = new ScriptedUpstream();
      up.createTopic('t', 1);
      await produceMany(up, 't', 0, 3);
      const b = bed(t, up, ['t']);
      await indexedTo(b, 't', 0, 3);
      up.addPartitions('t', 3, 2);
      await produceMany(up, 't', 1, 2);
      await produceMany(up, 't', 2, 4);
      await indexedTo(b, 't', 1, 2);
      await indexedTo(b, 't', 2, 4);
      assert.deepEqual(offsets(rows(b, 't', 2)), range(0, 4));
      assert.equal(store(b, 't', 2)!.checkpoint.topicId, up.topic('t').id);
    });

    it('tails a topic newly compacted, and one that is created upstream after its policy came', async (t) => {
      const up = new ScriptedUpstream();
      up.createTopic('t', 1);
      up.createTopic('u', 1);
      await produceMany(up, 't', 0, 1);
      await produceMany(up, 'u', 0, 3);
      const b = bed(t, up, ['t']);
      await indexedTo(b, 't', 0, 1);
      assert.equal(store(b, 'u', 0), undefined, 'not compacted, not indexed');

      b.indexer.setPolicies(policies('t', 'u', 'later'));
      await indexedTo(b, 'u', 0, 3);
      const answers = up.metadataAnswers;
      await until(up.clock, 'metadata asked twice more', () => up.metadataAnswers >= answers + 2);
      assert.equal(store(b, 'later', 0), undefined, 'a topic the upstream does not have yet');

      up.createTopic('later', 2);
      await produceMany(up, 'later', 1, 2);
      await indexedTo(b, 'later', 1, 2);
      await indexedTo(b, 'later', 0, 0);
    });

    it('keeps the index when one Metadata answer misses the topic, drops it after two', async (t) => {
      const up = new ScriptedUpstream();
      up.createTopic('t', 1);
      await produceMany(up, 't', 0, 5);
      const b = bed(t, up, ['t']);
      await indexedTo(b, 't', 0, 5);

      up.hideTopic('t', 1);
      const answers = up.metadataAnswers;
      await until(up.clock, 'two more answers', () => up.metadataAnswers >= answers + 2);
      assert.deepEqual(offsets(rows(b, 't', 0)), range(0, 5));
      assert.ok(!b.lines.some((l) => l.includes('dropping topic index')), b.lines.join('\n'));

      const seq = up.requests.length;
      up.hideTopic('t', 2);
      await until(
        up.clock,
        'the index dropped',
        () => b.lines.some((l) => l.includes('dropping topic index') && l.includes('does not exist upstream')),
        DEADLINE_MS,
        () => b.lines.join('\n'),
      );
      // The topic is there again at the next answer: indexed again from the log start.
      await indexedTo(b, 't', 0, 5);
      assert.ok(
        up.fetches().some((f) => f.seq >= seq && f.fetchOffset === 0),
        'read again from 0',
      );
    });

    it('drops the index of a topic no longer compacted', async (t) => {
      const up = new ScriptedUpstream();
      up.createTopic('t', 1);
      up.createTopic('u', 1);
      await produceMany(up, 't', 0, 2);
      await produceMany(up, 'u', 0, 2);
      const b = bed(t, up, ['t', 'u']);
      await indexedTo(b, 't', 0, 2);
      await indexedTo(b, 'u', 0, 2);
      const file = b.registry.fileOf('t');
      assert.ok(fs.existsSync(file));

      b.indexer.setPolicies(policies('u'));
      assert.equal(store(b, 't', 0), undefined);
      assert.ok(!fs.existsSync(file), 'its file removed');
      assert.deepEqual(
        b.indexer.status().map((s) => s.topic),
        ['u'],
      );
      const seq = up.requests.length;
      await produceMany(up, 't', 0, 1, 2);
      await produceMany(up, 'u', 0, 1, 2);
      await indexedTo(b, 'u', 0, 3);
      assert.equal(up.fetches({ topic: 't' }).filter((f) => f.seq >= seq).length, 0, 'no longer fetched');
    });

    it('reads a topic again from its log start when asked to rebuild', async (t) => {
      const up = new ScriptedUpstream();
      up.createTopic('t', 1);
      await produceMany(up, 't', 0, 6);
      up.log('t', 0).deleteBefore(2);
      const b = bed(t, up, ['t']);
      await indexedTo(b, 't', 0, 6);
      const seq = up.requests.length;
      b.indexer.rebuild('t');
      await indexedTo(b, 't', 0, 6);
      const again = up.fetches().filter((f) => f.seq >= seq);
      // A new index of a store that no longer starts at 0 first reads it for a carry pass (pass-locator.ts), from its log start.
      assert.equal(again[0]?.fetchOffset, 2, 'the store read for its last carry pass, from its log start');
      assert.ok(
        again.some((f) => f.fetchOffset === 0 && f.errorCode === ErrorCode.OFFSET_OUT_OF_RANGE),
        'the new index starts from 0; the answer out of range moves it to the log start',
      );
      assert.ok(
        again.some((f) => f.fetchOffset === 2),
        JSON.stringify(again),
      );
      assert.equal(store(b, 't', 0)!.checkpoint.logStartOffset, 2);
      assert.deepEqual(offsets(rows(b, 't', 0)), range(2, 6));
    });
  });

  describe('catchUp', () => {
    it('waits until the index reaches the last stable offset as of the call', async (t) => {
      const up = new ScriptedUpstream();
      up.createTopic('t', 1);
      await produceMany(up, 't', 0, 5);
      await up.produce('t', 0, [{ key: 'open', value: 'o' }], { producerId: 3 }); // 5: open
      await produceMany(up, 't', 0, 2, 6); // 6-7
      // Each answer holds one batch: catching up takes a fetch per record.
      const b = bed(t, up, ['t'], { partitionMaxBytes: 1 });
      await up.clock.drive(b.indexer.catchUp('t', DEADLINE_MS));
      const s = store(b, 't', 0)!;
      assert.equal(s.checkpoint.nextOffset, 5, 'the last stable offset, not the high watermark');
      const asked = up.requests.filter((r) => r.apiKey === ApiKey.ListOffsets);
      assert.ok(asked.some((r) => (r.body as { isolationLevel?: number }).isolationLevel === 1));
    });

    it("gives up at its deadline, of the indexer's clock, when the index cannot get there", async (t) => {
      const up = new ScriptedUpstream();
      up.createTopic('t', 1);
      await produceMany(up, 't', 0, 3);
      up.log('t', 0).fetchError = ErrorCode.UNKNOWN_SERVER_ERROR;
      const b = bed(t, up, ['t']);
      await until(up.clock, 'known from metadata', () => b.indexer.partitions().length === 1);
      const asked = up.clock.now();
      assert.equal(await up.clock.drive(b.indexer.caughtUp('t', 0, 5_000)), false);
      assert.ok(up.clock.now() - asked >= 5_000, 'not before its deadline');
      up.log('t', 0).fetchError = undefined;
      assert.equal(await up.clock.drive(b.indexer.caughtUp('t', 0, 5_000)), true);
      assert.equal(store(b, 't', 0)!.checkpoint.nextOffset, 3);
    });
  });
});
