import type { IndexView } from '../../engine/api/index-view.js';

const HELD_POLL_MS = 10;

/**
 * Waits, at most waitMs, for the partition's index to catch up (true) or for `held()` to become
 * true first ('held'): what a replica learns from a pass it found in the store (pass-locator.ts)
 * can answer a client before its index has read the rest. False when neither came in time.
 */
export function caughtUpOrHeld(index: IndexView, topic: string, partition: number, waitMs: number, held: () => boolean): Promise<boolean | 'held'> {
  const wait = Math.max(0, waitMs);
  let timer: NodeJS.Timeout | undefined;
  const heldWithin = new Promise<'held'>((resolve) => {
    const deadline = Date.now() + wait;
    const poll = () => {
      if (held()) resolve('held');
      else if (Date.now() < deadline) timer = setTimeout(poll, HELD_POLL_MS).unref();
    };
    poll();
  });
  return Promise.race([index.caughtUp(topic, partition, wait).catch(() => false), heldWithin]).finally(() => clearTimeout(timer));
}
