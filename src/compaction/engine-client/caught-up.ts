import { SYSTEM_CLOCK, type Clock } from '../../common/clock.js';
import type { IndexView } from '../../engine/api/index-view.js';

const HELD_POLL_MS = 10;

/**
 * Waits, at most waitMs, for the partition's index to catch up (true) or for `held()` to become
 * true first ('held'): what a replica learns from a pass it found in the store (pass-locator.ts)
 * can answer a client before its index has read the rest. False when neither came in time.
 */
export function caughtUpOrHeld(
  index: IndexView,
  topic: string,
  partition: number,
  waitMs: number,
  held: () => boolean,
  clock: Clock = SYSTEM_CLOCK,
): Promise<boolean | 'held'> {
  const wait = Math.max(0, waitMs);
  const answered = new AbortController();
  const heldWithin = (async (): Promise<'held'> => {
    const deadline = clock.now() + wait;
    for (;;) {
      if (answered.signal.aborted) break;
      if (held()) return 'held';
      if (clock.now() >= deadline) break;
      await clock.sleep(HELD_POLL_MS, answered.signal);
    }
    // Not held in time: the index's answer decides.
    return new Promise<never>(() => undefined);
  })();
  return Promise.race([index.caughtUp(topic, partition, wait).catch(() => false), heldWithin]).finally(() => answered.abort());
}
