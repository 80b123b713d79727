/**
 * A clock for unit tests (src/common/clock.ts): its time stands still until the test moves it,
 * and moving it resolves the sleeps that fell due, in the order they fall due. A test then goes
 * through a loop's backoffs and intervals as fast as the code runs, and what it asserts follows
 * from the order of events, never from how long the machine took.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';
import type { Clock } from '../../src/common/clock.js';

interface Sleeper {
  at: number;
  seq: number;
  wake: () => void;
}

export class ManualClock implements Clock {
  private time: number;
  private seq = 0;
  /** By due time, then by when they began. */
  private sleepers: Sleeper[] = [];
  /** Every sleep asked for, in order, as its length (an aborted one too). */
  readonly slept: number[] = [];

  constructor(start = 1_700_000_000_000) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.slept.push(ms);
    if (signal?.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const sleeper: Sleeper = {
        at: this.time + Math.max(0, ms),
        seq: this.seq++,
        wake: () => {
          signal?.removeEventListener('abort', abort);
          resolve();
        },
      };
      const abort = (): void => {
        this.sleepers = this.sleepers.filter((s) => s !== sleeper);
        sleeper.wake();
      };
      signal?.addEventListener('abort', abort, { once: true });
      const i = this.sleepers.findIndex((s) => s.at > sleeper.at);
      this.sleepers.splice(i < 0 ? this.sleepers.length : i, 0, sleeper);
    });
  }

  /** Sleeps not yet due. */
  get pending(): number {
    return this.sleepers.length;
  }

  /** When the next sleep falls due; undefined when nothing sleeps. */
  nextDue(): number | undefined {
    return this.sleepers[0]?.at;
  }

  /**
   * Moves the time on by `ms` and resolves every sleep due by then, earliest first. The code they
   * wake runs after this returns (a sleep is a promise), at the new time.
   */
  advance(ms: number): void {
    if (ms < 0) throw new RangeError(`a clock does not go back (${ms} ms)`);
    const end = this.time + ms;
    while (this.sleepers.length > 0 && this.sleepers[0]!.at <= end) {
      const s = this.sleepers.shift()!;
      this.time = Math.max(this.time, s.at);
      s.wake();
    }
    this.time = end;
  }

  /**
   * advance(ms), then one turn of the event loop, so that the code the sleeps woke (and the I/O
   * it started) runs before the test looks.
   */
  async tick(ms: number): Promise<void> {
    this.advance(ms);
    await nextTurn();
  }

  /**
   * Moves the time on `stepMs` at a time, a turn of the event loop between steps, until `work`
   * settles: for awaiting code that waits on this clock (a catch-up, a close). Gives up with an
   * error after `maxMs` of this clock's time.
   */
  async drive<T>(work: Promise<T>, stepMs = 10, maxMs = 600_000): Promise<T> {
    let settled = false;
    const watched = work.finally(() => {
      settled = true;
    });
    // Observed here, rethrown by the await below: not an unhandled rejection meanwhile.
    watched.catch(() => undefined);
    const end = this.time + maxMs;
    for (;;) {
      await nextTurn();
      if (settled) return watched;
      if (this.time >= end) throw new Error(`not settled after ${maxMs} ms of the manual clock`);
      this.advance(stepMs);
    }
  }
}
