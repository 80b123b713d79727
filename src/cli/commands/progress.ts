/**
 * A progress line on stderr for a long operation the CLI waits on: rewritten in place on a
 * terminal, one line every few seconds otherwise (logs, CI), so either way it reads well.
 */
import { count, duration, rate } from './render.js';

export interface ProgressSample {
  /** Offsets done and to do, summed over the partitions. */
  done: number;
  total: number;
  partitionsDone: number;
  partitions: number;
}

export interface ProgressStream {
  write(text: string): unknown;
  isTTY?: boolean;
}

const TTY_INTERVAL_MS = 500;
const LINE_INTERVAL_MS = 5_000;

export class ProgressLine {
  private printed: { at: number; done: number } | undefined;

  constructor(
    private readonly stream: ProgressStream,
    private readonly label: string,
    private readonly clock: () => number = Date.now,
  ) {}

  update(s: ProgressSample): void {
    const now = this.clock();
    const interval = this.stream.isTTY ? TTY_INTERVAL_MS : LINE_INTERVAL_MS;
    if (this.printed && now - this.printed.at < interval) return;
    const perSecond = this.printed ? (s.done - this.printed.done) / Math.max(0.001, (now - this.printed.at) / 1000) : undefined;
    this.emit(this.describe(s, perSecond), false);
    this.printed = { at: now, done: s.done };
  }

  finish(s: ProgressSample): void {
    this.emit(this.describe(s, undefined), true);
  }

  private describe(s: ProgressSample, perSecond: number | undefined): string {
    const percent = s.total > 0 ? ` (${((100 * Math.min(s.done, s.total)) / s.total).toFixed(1)}%)` : '';
    let text = `${this.label}: ${s.partitionsDone}/${s.partitions} partitions caught up, offset ${count(s.done)} of ${count(s.total)}${percent}`;
    if (perSecond !== undefined && perSecond > 0) {
      text += `, ${rate(perSecond)}, about ${duration((1000 * Math.max(0, s.total - s.done)) / perSecond)} left`;
    }
    return text;
  }

  private emit(text: string, last: boolean): void {
    if (this.stream.isTTY) this.stream.write(`\r\x1b[K${text}${last ? '\n' : ''}`);
    else this.stream.write(text + '\n');
  }
}
