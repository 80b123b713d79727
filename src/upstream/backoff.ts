/**
 * The one rule for how long the proxy waits before asking the upstream again after a failure:
 * exponential in the attempts that failed in a row, capped, with jitter so that the loops of
 * many partitions (or of many proxy replicas) that failed together do not retry together.
 * Half of each wait is fixed and half random: a wait never shrinks to nothing, so a broker that
 * is down is never retried in a tight loop.
 */

export interface BackoffRule {
  /** The wait after the first failure (before jitter). */
  baseMs: number;
  /** The longest wait, however many failures in a row. */
  maxMs: number;
}

/** 2^EXPONENT_CAP times the base is already past any cap in use; it keeps the power finite. */
const EXPONENT_CAP = 20;

/**
 * How long to wait after the `failures`-th failure in a row (1 for the first): base·2^(failures-1),
 * at most maxMs, of which the upper half is drawn at random. 0 failures: no wait.
 */
export function backoffMs(failures: number, rule: BackoffRule, random: () => number = Math.random): number {
  if (failures <= 0) return 0;
  const ceiling = Math.min(rule.maxMs, rule.baseMs * 2 ** Math.min(failures - 1, EXPONENT_CAP));
  return Math.round(ceiling / 2 + (ceiling / 2) * random());
}
