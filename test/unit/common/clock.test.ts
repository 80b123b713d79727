import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SYSTEM_CLOCK, Wakeup } from '../../../src/common/clock.js';
import { ManualClock } from '../../support/manual-clock.js';

/** Whether the promise has settled, after the microtasks queued now have run. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

test('the system clock: a sleep ends when its signal aborts, and at once when already aborted, its timer cleared', async () => {
  const aborted = new AbortController();
  aborted.abort();
  const before = timers();
  await SYSTEM_CLOCK.sleep(3_600_000, aborted.signal);
  assert.equal(timers(), before, 'no timer for a sleep aborted before it began');

  const later = new AbortController();
  const sleeping = SYSTEM_CLOCK.sleep(3_600_000, later.signal);
  assert.equal(timers(), before + 1);
  assert.equal(await settled(sleeping), false);
  later.abort();
  await sleeping;
  assert.equal(timers(), before, 'the timer goes with the wait it ended');
});

test('a manual clock resolves sleeps as it advances, earliest first, and not before they are due', async () => {
  const clock = new ManualClock(1_000);
  const woke: string[] = [];
  const sleeps = [clock.sleep(300).then(() => woke.push(`b@${clock.now()}`)), clock.sleep(100).then(() => woke.push(`a@${clock.now()}`))];
  clock.advance(99);
  await settled(Promise.resolve());
  assert.deepEqual(woke, []);
  assert.equal(clock.nextDue(), 1_100);
  clock.advance(1);
  await settled(sleeps[1]!);
  assert.deepEqual(woke, ['a@1100']);
  clock.advance(10_000);
  await Promise.all(sleeps);
  assert.deepEqual(woke, ['a@1100', 'b@11100']);
  assert.equal(clock.pending, 0);
  assert.deepEqual(clock.slept, [300, 100]);
});

test('a manual clock: an aborted sleep resolves at once and is forgotten; drive() moves time until the work is done', async () => {
  const clock = new ManualClock(0);
  const cut = new AbortController();
  const sleeping = clock.sleep(5_000, cut.signal);
  cut.abort();
  await sleeping;
  assert.equal(clock.pending, 0);
  assert.equal(clock.now(), 0);

  const work = (async () => {
    await clock.sleep(250);
    await clock.sleep(250);
    return clock.now();
  })();
  assert.equal(await clock.drive(work, 50), 500);
  await assert.rejects(clock.drive(new Promise(() => undefined), 100, 1_000), /not settled after 1000 ms/);
});

test('Wakeup: a sleep ends after its time or at a wake-up, and a wake-up while awake ends the next sleep at once', async () => {
  const clock = new ManualClock(0);
  const wake = new Wakeup(clock);

  const first = wake.sleep(1_000);
  clock.advance(999);
  assert.equal(await settled(first), false);
  clock.advance(1);
  assert.equal(await settled(first), true);

  const second = wake.sleep(60_000);
  wake.wakeUp();
  assert.equal(await settled(second), true, 'woken early');
  assert.equal(clock.now(), 1_000, 'without the time passing');

  wake.wakeUp();
  assert.equal(await settled(wake.sleep(60_000)), true, 'the wake-up that came while awake');
  const fourth = wake.sleep(60_000);
  assert.equal(await settled(fourth), false, 'one wake-up ends one sleep');
  wake.wakeUp();
  wake.wakeUp();
  await fourth;
  assert.equal(await settled(wake.sleep(60_000)), true, 'the second of two wake-ups is for the next sleep');
  assert.equal(clock.pending, 0, 'a sleep woken early leaves nothing behind');
});
