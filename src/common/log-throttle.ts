/**
 * Warnings that many connections can raise at once (an upstream outage makes every client's
 * reconnect fail the same way) are logged once per kind and interval: the first at warn, the
 * rest at debug, and the next warn after the interval says how many were held back.
 */
import type { Logger } from './log.js';

/** Kinds remembered at most; past it, those whose interval has ended are forgotten. */
const MAX_KINDS = 1024;

export class LogThrottle {
  private readonly kinds = new Map<string, { until: number; suppressed: number }>();

  constructor(
    private readonly intervalMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** `kind` names what makes two warnings the same (for example the reason and the error's message). */
  warn(log: Logger, kind: string, msg: string, fields: Record<string, unknown>): void {
    const t = this.now();
    const seen = this.kinds.get(kind);
    if (seen && t < seen.until) {
      seen.suppressed++;
      log.debug(msg, fields);
      return;
    }
    log.warn(msg, seen?.suppressed ? { ...fields, alikeHeldBack: seen.suppressed, heldBackOverMs: this.intervalMs } : fields);
    if (!seen && this.kinds.size >= MAX_KINDS) {
      for (const [k, v] of this.kinds) if (v.until <= t) this.kinds.delete(k);
      if (this.kinds.size >= MAX_KINDS) this.kinds.clear();
    }
    this.kinds.set(kind, { until: t + this.intervalMs, suppressed: 0 });
  }
}
