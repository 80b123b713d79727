/**
 * Answers from the carried copies begun before they are needed (carried-records.ts). A client
 * reading a carried range from its start asks for it a partition limit at a time, each fetch at
 * the offset after the last record of its previous answer. Put together only once the request
 * is there, each answer would wait for a read of the copies and the walk through them on top of
 * the forwarded request; begun with the request, they overlap the forwarded request, and begun
 * once the previous answer went out, they overlap the client's own work on it as well.
 *
 * A begun answer is used only where it is exactly the answer wanted: the same index view (the
 * very snapshot: the index has not moved since), the same offset and the same byte budget; any
 * other is given back. Answers begun after a client's answer wait a short while for its next
 * fetch, and only so many bytes of them are held at once.
 */
import type { PartitionIndexView } from '../../engine/api/index-view.js';
import { carriedRecords, type CopiesTarget } from './carried-records.js';
import type { UpstreamReads } from './upstream-reads.js';
import { releaseHeld, type Budget, type VisibleRecords } from './visible-records.js';

/** A copies answer under way or done: what it is for, and the answer. */
export interface CopiesBegun {
  view: PartitionIndexView;
  from: number;
  budget: Budget;
  records: Promise<VisibleRecords>;
}

/** Begins the answer from the copies for `from` within `budget`. */
export function beginCopies(upstream: UpstreamReads, target: CopiesTarget, from: number, budget: Budget): CopiesBegun {
  const records = carriedRecords(upstream, target, from, { ...budget });
  // Not awaited when the answer goes another way: its failure is the answer's, or nobody's.
  records.catch(() => undefined);
  return { view: target.view, from, budget: { ...budget }, records };
}

/** Whether a begun answer is the one wanted. */
export function begunFits(begun: CopiesBegun, view: PartitionIndexView, from: number, budget: Budget): boolean {
  return begun.view === view && begun.from === from && begun.budget.maxBytes === budget.maxBytes && begun.budget.oneAnyway === budget.oneAnyway;
}

/** Gives a begun answer's reads back when it is not used. */
export function dropBegun(begun: CopiesBegun | undefined): void {
  begun?.records.then(
    (r) => releaseHeld(r.held),
    () => undefined,
  );
}

export interface CopiesAheadOptions {
  /** The most bytes of answers held for clients' next fetches (their budgets). */
  maxBytes: number;
  /** How long an answer waits for the client's next fetch. */
  waitMs: number;
}

/** Held answers whose budgets add up to this are enough for a few dozen clients reading carried ranges at once. */
export const DEFAULT_COPIES_AHEAD: CopiesAheadOptions = { maxBytes: 32 << 20, waitMs: 2_000 };

interface Held {
  begun: CopiesBegun;
  timer: NodeJS.Timeout;
}

/** Answers begun for clients' next fetches, by partition and offset. */
export class CopiesAhead {
  private readonly held = new Map<string, Held>();
  private heldBytes = 0;
  /** Answers begun, and those a next fetch used. */
  begun = 0;
  used = 0;

  constructor(private readonly opts: CopiesAheadOptions = DEFAULT_COPIES_AHEAD) {}

  /** Begins the answer for a client's next fetch, unless as much is held already. */
  begin(upstream: UpstreamReads, target: CopiesTarget, from: number, budget: Budget): void {
    const key = keyOf(target.topic, target.partition, from);
    this.drop(key);
    if (this.heldBytes + budget.maxBytes > this.opts.maxBytes) return;
    const begun = beginCopies(upstream, target, from, budget);
    const timer = setTimeout(() => this.drop(key), this.opts.waitMs);
    timer.unref();
    this.held.set(key, { begun, timer });
    this.heldBytes += budget.maxBytes;
    this.begun++;
  }

  /** The answer begun for a fetch of the partition at `from` under this view and budget, taken out; undefined when none fits. */
  take(topic: string, partition: number, from: number, view: PartitionIndexView, budget: Budget): CopiesBegun | undefined {
    const key = keyOf(topic, partition, from);
    const h = this.held.get(key);
    if (!h) return undefined;
    this.forget(key, h);
    if (!begunFits(h.begun, view, from, budget)) {
      dropBegun(h.begun);
      return undefined;
    }
    this.used++;
    return h.begun;
  }

  /** Gives every held answer back. */
  clear(): void {
    for (const key of [...this.held.keys()]) this.drop(key);
  }

  private drop(key: string): void {
    const h = this.held.get(key);
    if (!h) return;
    this.forget(key, h);
    dropBegun(h.begun);
  }

  private forget(key: string, h: Held): void {
    clearTimeout(h.timer);
    this.held.delete(key);
    this.heldBytes -= h.begun.budget.maxBytes;
  }
}

const keyOf = (topic: string, partition: number, from: number) => `${topic}\u0000${partition}\u0000${from}`;
