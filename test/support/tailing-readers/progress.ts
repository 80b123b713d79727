/**
 * For the readers whose events the harness makes (kcat, kafkajs): what the bed's CLIs print of
 * their progress, by the same rules (TailEvents in test/peers/python/ck.py).
 */
import type { TailLog } from './log.js';

export class Progress {
  private readonly started = Date.now();
  private high = 0;
  private caughtUp = false;
  private count = 0;
  /** done or timeout was reported: the reader is finishing. */
  finished = false;

  constructor(
    private readonly log: TailLog,
    private readonly untilKey: string,
  ) {}

  begin(highWatermark: number): void {
    this.high = highWatermark;
    this.log.push({ event: 'start', highWatermark });
    if (highWatermark === 0) {
      this.caughtUp = true;
      this.log.push({ event: 'caughtUp', offset: -1, records: 0, ms: Date.now() - this.started });
    }
  }

  /** Reports the record (and caughtUp once it reaches the start's high watermark - 1), then done when it has the until key; true then. */
  record(offset: number, key: string | null, value: string | null): boolean {
    if (this.finished) return false;
    this.count++;
    this.log.push({ event: 'record', offset, key, value });
    if (!this.caughtUp && offset >= this.high - 1) {
      this.caughtUp = true;
      this.log.push({ event: 'caughtUp', offset, records: this.count, ms: Date.now() - this.started });
    }
    if (key !== this.untilKey) return false;
    this.finished = true;
    this.log.push({ event: 'done', offset });
    return true;
  }

  /** Reports the deadline (once, and not after done); true when it did. */
  timeout(): boolean {
    if (this.finished) return false;
    this.finished = true;
    this.log.push({ event: 'timeout' });
    return true;
  }
}
