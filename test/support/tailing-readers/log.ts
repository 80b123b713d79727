/**
 * The events of one tail reader and the ways to look at them, shared by the spawned clients and
 * the in-process one.
 */
import type { ClientEvent, ExitEvent, TailEvent, TailEventOf } from './types.js';

const POLL_MS = 50;
/** Events shown in a failure message (records only as a count: a soak reader prints thousands). */
const SHOWN_EVENTS = 15;

export class TailLog {
  readonly events: TailEvent[] = [];

  constructor(
    private readonly label: () => string,
    private readonly stderr: () => string = () => '',
  ) {}

  push(e: ClientEvent | ExitEvent): void {
    this.events.push({ ...e, at: Date.now() });
  }

  get ended(): boolean {
    return this.events.some((e) => e.event === 'exit');
  }

  of<K extends TailEvent['event']>(kind: K): TailEventOf<K>[] {
    return this.events.filter((e): e is TailEventOf<K> => e.event === kind);
  }

  async waitFor(match: (e: TailEvent) => boolean, timeoutMs: number): Promise<TailEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.events.find(match);
      if (found) return found;
      // Ended: nothing more will come (the exit event is pushed after the client's last output).
      if (this.ended) throw new Error(`${this.label()} ended without the awaited event\n${this.describe()}`);
      if (Date.now() >= deadline) throw new Error(`${this.label()}: no awaited event within ${timeoutMs} ms\n${this.describe()}`);
      await new Promise((resolve) => setTimeout(resolve, Math.min(POLL_MS, Math.max(1, deadline - Date.now()))));
    }
  }

  /** The last events but records, how many records, and the stderr tail. */
  describe(): string {
    const records = this.of('record');
    const others = this.events.filter((e) => e.event !== 'record').slice(-SHOWN_EVENTS);
    const last = records.length ? `, the last at offset ${records[records.length - 1]!.offset}` : '';
    const stderr = this.stderr();
    return [
      `events but records (last ${SHOWN_EVENTS}): ${others.map((e) => JSON.stringify(e)).join('\n  ') || 'none'}`,
      `records: ${records.length}${last}`,
      ...(stderr ? [`stderr tail:\n${stderr}`] : []),
    ].join('\n');
  }
}
