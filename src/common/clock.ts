/**
 * Where kcompact's loops read the time and how they wait: one clock, injected where a loop is
 * built (the system clock by default), so that a unit test gives a loop a clock of its own
 * (test/support/manual-clock.ts) and goes through its backoffs and intervals without waiting for
 * them, and the waits of every loop follow one rule: a wait ends early (resolving, never
 * rejecting) when its signal aborts, and a timer cut short is cleared at once.
 */

export interface Clock {
  /** Milliseconds: since the epoch for the system clock (Date.now()). */
  now(): number;
  /** Resolves after `ms`, or at once when `signal` aborts (also one aborted already). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

function sleepFor(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    // A wait of 0 still yields to the event loop: a loop that waits nothing between rounds must
    // not starve the I/O its rounds wait for.
    const timer = setTimeout(done, Math.max(0, ms));
    signal?.addEventListener('abort', done, { once: true });
  });
}

export const SYSTEM_CLOCK: Clock = { now: () => Date.now(), sleep: sleepFor };

/**
 * The system clock's waits, with a time that never goes back (performance.now()): for rates and
 * deadlines that must not jump with the wall clock, never for timestamps.
 */
export const MONOTONIC_CLOCK: Clock = { now: () => performance.now(), sleep: sleepFor };

/**
 * A sleep that can be cut short: background loops wait on it between rounds, and whoever has
 * news for them (new policies, an on-demand clean, shutdown) wakes them early.
 */
export class Wakeup {
  private cut: AbortController | undefined;
  private pending = false;

  constructor(private readonly clock: Clock = SYSTEM_CLOCK) {}

  /** Resolves after ms, or at the next wakeUp() (also one that came while not sleeping). */
  sleep(ms: number): Promise<void> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve();
    }
    const cut = new AbortController();
    this.cut = cut;
    return this.clock.sleep(ms, cut.signal).finally(() => {
      if (this.cut === cut) this.cut = undefined;
    });
  }

  wakeUp(): void {
    const cut = this.cut;
    // Let go before aborting: a second wakeUp() before the sleeper runs is one for its next sleep.
    this.cut = undefined;
    if (cut) cut.abort();
    else this.pending = true;
  }
}
