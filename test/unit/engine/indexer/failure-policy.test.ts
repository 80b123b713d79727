/**
 * The indexer's failure policy on a manual clock: how long each kind of failure keeps a
 * partition (or a loop) waiting, what it says, and that only closing cuts a backoff short.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate } from 'node:timers/promises';
import { FailurePolicy } from '../../../../src/engine/indexer/failure-policy.js';
import { newTail } from '../../../../src/engine/indexer/tails.js';
import { SchemaUnavailableError } from '../../../../src/engine/key-identity/schema-unavailable.js';
import type { StoreRegistry } from '../../../../src/engine/store/store-registry.js';
import { ErrorCode } from '../../../../src/protocol/errors.js';
import { capturingLogger } from '../../../support/capturing-logger.js';
import { ManualClock } from '../../../support/manual-clock.js';

const ROLL = { segmentBytes: 1 << 20, maxSegmentMs: 60_000 };

function policy(maxBackoffMs = 10_000) {
  const clock = new ManualClock(0);
  const lines: string[] = [];
  const reopened: string[] = [];
  const registry = {
    fileOf: (topic: string) => `/data/${topic}.sqlite`,
    reopen: () => reopened.push('reopen'),
    rebuildFile: () => reopened.push('rebuild'),
  } as unknown as StoreRegistry;
  const failures = new FailurePolicy({ registry, log: capturingLogger(lines), clock, maxBackoffMs });
  return { clock, lines, reopened, failures, tail: newTail('t', 0, ROLL) };
}

function storageError(code: string): Error {
  return Object.assign(new Error(`disk says ${code}`), { code });
}

describe('FailurePolicy', () => {
  it('backs a loop off by the backoff rule: from its base, doubling, capped by maxBackoffMs', () => {
    const { failures } = policy(1_000);
    for (let i = 0; i < 50; i++) {
      const fetch = failures.fetchBackoff(1);
      const metadata = failures.metadataBackoff(1);
      assert.ok(fetch >= 100 && fetch <= 200, `fetch ${fetch}`);
      assert.ok(metadata >= 200 && metadata <= 400, `metadata ${metadata}`);
      assert.ok(failures.fetchBackoff(20) <= 1_000);
    }
  });

  it('pauses for the whole backoff, however often the loop is woken; only close() cuts it short', async () => {
    const { clock, failures } = policy();
    failures.open();
    let done = false;
    void failures.pause(800).then(() => (done = true));
    await clock.tick(799);
    assert.equal(done, false);
    await clock.tick(1);
    assert.equal(done, true);

    done = false;
    void failures.pause(60_000).then(() => (done = true));
    await setImmediate();
    failures.close();
    await setImmediate();
    assert.equal(done, true, 'closing ends it');
    assert.equal(clock.now(), 800);
    assert.equal(clock.pending, 0);
    await failures.pause(60_000);
    assert.equal(clock.now(), 800, 'a pause asked for after closing does not wait');
    failures.open();
    done = false;
    void failures.pause(10).then(() => (done = true));
    await setImmediate();
    assert.equal(done, false, 'opened again, pauses wait');
    await clock.tick(10);
    assert.equal(done, true);
  });

  it('pauses a partition briefly after an error answer, shorter when its leader moved', () => {
    const { clock, failures, tail } = policy();
    clock.advance(5_000);
    assert.equal(failures.partitionError(tail, ErrorCode.NOT_LEADER_OR_FOLLOWER), true, 'stale: the caller looks for the new leader');
    assert.deepEqual([tail.retryAt, tail.lastError], [5_200, 'fetch error NOT_LEADER_OR_FOLLOWER (6)']);
    assert.equal(failures.partitionError(tail, ErrorCode.UNKNOWN_SERVER_ERROR), false);
    assert.deepEqual([tail.retryAt, tail.lastError], [6_000, 'fetch error UNKNOWN_SERVER_ERROR (-1)']);
    failures.retryLater(tail);
    assert.equal(tail.retryAt, 6_000);
  });

  it('waits for key schemas with a growing backoff, says so once, and says when they are back', () => {
    const { clock, lines, failures, tail } = policy();
    const err = new SchemaUnavailableError(7, 'http://registry', 'connection refused');
    const waits: number[] = [];
    for (let i = 0; i < 4; i++) {
      failures.schemaUnavailable(tail, err);
      waits.push(tail.retryAt - clock.now());
    }
    assert.ok(waits[0]! >= 200 && waits[0]! <= 400 && waits[3]! >= 1_600 && waits[3]! <= 3_200, JSON.stringify(waits));
    assert.equal(lines.filter((l) => l.startsWith('warn key schema not available')).length, 1);
    assert.equal(tail.lastError, err.message);
    failures.indexed(tail);
    assert.equal(tail.lastError, undefined);
    assert.equal(tail.schemaFailures, 0);
    assert.ok(lines.some((l) => l.startsWith('info key schemas available again') && l.includes('"after":4')));
  });

  it('keeps the file through a failed storage, waiting longer each time; rebuilds a damaged one; reopens on anything else', () => {
    const { clock, lines, reopened, failures, tail } = policy();
    failures.storeFailed(tail, storageError('SQLITE_FULL'));
    const first = tail.retryAt - clock.now();
    failures.storeFailed(tail, storageError('SQLITE_FULL'));
    failures.storeFailed(tail, storageError('SQLITE_FULL'));
    const third = tail.retryAt - clock.now();
    assert.ok(first >= 250 && first <= 500 && third >= 1_000 && third <= 2_000, `${first}, ${third}`);
    const said = lines.filter((l) => l.startsWith('error the storage of a partition index failed'));
    assert.equal(said.length, 1, 'said once');
    assert.match(said[0]!, /free space on the filesystem holding \/data\/t\.sqlite/);
    assert.deepEqual(reopened, [], 'the file is kept as committed');
    failures.indexed(tail);
    assert.ok(lines.some((l) => l.startsWith('info the index file is writable again') && l.includes('"after":3')));

    const store = {} as never;
    failures.storeFailed(tail, storageError('SQLITE_CORRUPT'), store);
    assert.deepEqual(reopened, ['rebuild']);
    failures.storeFailed(tail, new Error('constraint failed'), store);
    failures.storeFailed(tail, new Error('constraint failed'), store);
    assert.deepEqual(reopened, ['rebuild', 'reopen', 'reopen']);
    assert.equal(tail.retryAt, clock.now() + 1_000);
    assert.equal(lines.filter((l) => l.startsWith('error indexing a partition failed')).length, 1, 'the same failure again is not said again');
  });
});
