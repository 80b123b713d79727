/**
 * Asking the upstream again after a failure that may go away by itself (error-class.ts), with
 * the one backoff rule between attempts. Errors that will not go away are thrown at once.
 */
import { SYSTEM_CLOCK, type Clock } from '../common/clock.js';
import { backoffMs, type BackoffRule } from './backoff.js';
import { isRetriable } from './error-class.js';

export interface RetryOptions {
  /** Attempts in all, the first included. */
  attempts: number;
  rule: BackoffRule;
  /** Ends the waits early and stops retrying (close). */
  signal?: AbortSignal;
  /** Whether to try again after this error; isRetriable (error-class.ts) when omitted. */
  retriable?: (err: unknown) => boolean;
  /** Called before each wait, e.g. to forget a leader the failure proved stale. */
  onRetry?: (err: unknown, failures: number, waitMs: number) => void;
  /** What the waits sleep on (the system clock by default). */
  clock?: Clock;
}

export async function withRetries<T>(attempt: () => Promise<T>, opts: RetryOptions): Promise<T> {
  for (let failures = 1; ; failures++) {
    try {
      return await attempt();
    } catch (err) {
      if (failures >= opts.attempts || !(opts.retriable ?? isRetriable)(err) || opts.signal?.aborted) throw err;
      const wait = backoffMs(failures, opts.rule);
      opts.onRetry?.(err, failures, wait);
      await (opts.clock ?? SYSTEM_CLOCK).sleep(wait, opts.signal);
    }
  }
}
