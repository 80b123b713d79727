/**
 * Progress lines for partitions whose index is far behind the upstream: the first index of a
 * large partition, a rebuild, a catch-up after an outage. Such a partition gets one line per
 * interval while it catches up (how far, how fast, how long still) and one when it has; catch-ups
 * shorter than an interval log nothing.
 */
import type { Logger } from '../../common/log.js';
import { partitionKey } from '../api/partition-key.js';

interface Behind {
  startedAt: number;
  startOffset: number;
  lastLogAt: number;
  lastOffset: number;
  logged: boolean;
}

export const PROGRESS_INTERVAL_MS = 5_000;

export class CatchUpProgress {
  private readonly behind = new Map<string, Behind>();

  constructor(
    private readonly log: Logger,
    private readonly intervalMs = PROGRESS_INTERVAL_MS,
    private readonly clock: () => number = Date.now,
  ) {}

  /** A fetch indexed [from, nextOffset) of a partition whose upstream end (last stable offset) is `end`. */
  indexed(topic: string, partition: number, from: number, nextOffset: number, end: number, highWatermark: number): void {
    const key = partitionKey(topic, partition);
    const now = this.clock();
    let b = this.behind.get(key);
    // An index that went back (dropped, rebuilt) is a new catch-up.
    if (b && nextOffset < b.lastOffset) b = undefined;
    if (nextOffset >= end) {
      if (b?.logged) {
        const seconds = Math.max(0.001, (now - b.startedAt) / 1000);
        this.log.info('partition index caught up with the upstream', {
          topic,
          partition,
          nextOffset,
          offsets: nextOffset - b.startOffset,
          durationMs: now - b.startedAt,
          offsetsPerSecond: Math.round((nextOffset - b.startOffset) / seconds),
        });
      }
      this.behind.delete(key);
      return;
    }
    if (!b) {
      this.behind.set(key, { startedAt: now, startOffset: from, lastLogAt: now, lastOffset: nextOffset, logged: false });
      return;
    }
    if (now - b.lastLogAt < this.intervalMs) return;
    const rate = (nextOffset - b.lastOffset) / ((now - b.lastLogAt) / 1000);
    this.log.info('indexing partition', {
      topic,
      partition,
      nextOffset,
      highWatermark,
      percent: Math.floor((1000 * (nextOffset - b.startOffset)) / Math.max(1, end - b.startOffset)) / 10,
      offsetsPerSecond: Math.round(rate),
      ...(rate > 0 ? { remainingSeconds: Math.ceil((end - nextOffset) / rate) } : {}),
    });
    b.lastLogAt = now;
    b.lastOffset = nextOffset;
    b.logged = true;
  }

  /** Stops following a partition (its index was dropped). */
  forget(topic: string, partition: number): void {
    this.behind.delete(partitionKey(topic, partition));
  }
}
