import { SYSTEM_CLOCK, type Clock } from '../../common/clock.js';
import type { IndexView } from '../../engine/api/index-view.js';

/** How often `held()` is asked again where the index cannot say when it changed (IndexView.changed). */
const HELD_POLL_MS = 10;

/**
 * Waits, at most waitMs, for the partition's index to catch up (true) or for `held()` to become
 * true first ('held'): what a replica learns from a pass it found in the store (pass-locator.ts)
 * can answer a client before its index has read the rest. False when neither came in time.
 * `held()` is asked again as soon as the index shows something new, a new replica's first
 * answers being what waits here.
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
    let changed: Promise<void> | undefined;
    for (;;) {
      if (answered.signal.aborted) break;
      if (held()) return 'held';
      if (clock.now() >= deadline) break;
      // One waiter on the index at a time: a poll that ends first keeps it for the next turn.
      changed ??= index.changed?.(topic, partition, answered.signal).then(() => (changed = undefined));
      await (changed ? Promise.race([changed, clock.sleep(HELD_POLL_MS, answered.signal)]) : clock.sleep(HELD_POLL_MS, answered.signal));
    }
    // Not held in time: the index's answer decides.
    return new Promise<never>(() => undefined);
  })();
  return Promise.race([index.caughtUp(topic, partition, wait).catch(() => false), heldWithin]).finally(() => answered.abort());
}
