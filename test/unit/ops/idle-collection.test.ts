import { mock, test } from 'node:test';
import assert from 'node:assert/strict';
import { GROWTH_BYTES, IDLE_BUSY_SHARE, IdleCollector, QUIET_LOOKS, threadProbes, type IdleCollectionProbes } from '../../../src/common/idle-collection.js';
import { createLogger } from '../../../src/common/log.js';

const MiB = 1 << 20;
const log = createLogger();

/** A thread whose Buffers and busy share the test sets; gc() drops the Buffers to `live`. */
function fakeThread(withGc = true) {
  const t = { bytes: 0, live: 0, busy: 0, collections: 0 };
  const probes: IdleCollectionProbes = {
    gc: withGc
      ? () => {
          t.collections++;
          t.bytes = t.live;
        }
      : undefined,
    bufferBytes: () => t.bytes,
    busyShare: () => t.busy,
  };
  return { t, probes };
}

/** Looks until the thread has been quiet through QUIET_LOOKS looks; returns the last look's answer. */
function quietLooks(c: IdleCollector): boolean {
  let collected = false;
  for (let i = 0; i < QUIET_LOOKS; i++) collected = c.look();
  return collected;
}

test('a quiet thread is collected once its Buffers grew past the floor, and not again until they grow again', (t0) => {
  // The floor is read a moment after a collection, once V8 has freed the dead Buffers.
  mock.timers.enable({ apis: ['setTimeout'] });
  t0.after(() => mock.timers.reset());
  const { t, probes } = fakeThread();
  const c = new IdleCollector(probes, log);
  t.live = 20 * MiB;
  t.bytes = 20 * MiB;
  assert.equal(quietLooks(c), true, 'quiet through the looks, with more than the growth (the floor starts at nothing)');
  assert.equal(t.collections, 1, 'the looks before the last did not collect');
  mock.timers.tick(1_000);
  assert.equal(c.look(), false, 'what the collection left is the floor');
  t.bytes = 20 * MiB + GROWTH_BYTES - 1;
  assert.equal(c.look(), false, 'just under the growth past the live 20 MiB');
  t.bytes = 20 * MiB + GROWTH_BYTES;
  assert.equal(c.look(), true, 'still quiet: the next look with the growth collects');
  assert.equal(t.bytes, 20 * MiB);
  assert.equal(t.collections, 2);
});

test('a thread busy in any of the last looks is left to V8, whatever its Buffers', () => {
  const { t, probes } = fakeThread();
  const c = new IdleCollector(probes, log);
  t.bytes = 500 * MiB;
  t.busy = IDLE_BUSY_SHARE + 0.001;
  assert.equal(c.look(), false);
  t.busy = IDLE_BUSY_SHARE;
  for (let i = 1; i < QUIET_LOOKS; i++) assert.equal(c.look(), false, `quiet through ${i} look(s) only`);
  assert.equal(c.look(), true, 'at the idle share itself it is quiet');
});

test('the floor follows the Buffers down when V8 collects on its own', () => {
  const { t, probes } = fakeThread();
  const c = new IdleCollector(probes, log);
  t.busy = 0.5;
  t.bytes = 5 * MiB;
  c.look();
  t.bytes = 15 * MiB;
  t.busy = 0;
  assert.equal(quietLooks(c), false, '10 MiB past the fewest seen');
  t.bytes = 5 * MiB + GROWTH_BYTES;
  assert.equal(c.look(), true);
});

test('without gc() (node without --expose-gc) nothing is collected', () => {
  const { t, probes } = fakeThread(false);
  const c = new IdleCollector(probes, log);
  t.bytes = 500 * MiB;
  assert.equal(quietLooks(c), false);
});

test("the calling thread's probes measure it", () => {
  const probes = threadProbes();
  assert.equal(probes.gc, globalThis.gc, 'gc() is what node exposes, if anything');
  const before = probes.bufferBytes();
  const held = Buffer.alloc(8 * MiB);
  assert.ok(probes.bufferBytes() >= before + held.length - MiB, 'a new Buffer counts');
  // Work with no wait since the probes were made: the thread was busy all that time, however long it took.
  let sum = 0;
  for (let i = 0; i < 5_000_000; i++) sum = (sum + i * i) % 1_000_003;
  assert.ok(sum >= 0);
  assert.ok(probes.busyShare() > 0.5, 'a busy loop shows');
});
