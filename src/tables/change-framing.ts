/**
 * How a change stream is written (docs/tables.md, "Changes"): Server-Sent Events or NDJSON, and
 * the cursor that resumes it. An SSE event's id is the stream's cursor after it, every
 * partition's last offset sent (`0:41,1:17`), not only the event's own partition: a stream over
 * several partitions resumed from one partition's offset would start the others over or skip
 * them. A browser's EventSource sends the id back as Last-Event-ID when it reconnects.
 */
import { ApiError } from './api-error.js';

/** Each partition's last offset sent (-1 before the first record of the partition's log). */
export type Cursor = ReadonlyMap<number, number>;

const CURSOR_ENTRY = /^(\d+):(-1|\d+)$/;

/** The cursor a Last-Event-ID names; a 400 when it is not one this API wrote. */
export function parseCursor(text: string): Cursor {
  const cursor = new Map<number, number>();
  for (const entry of text.split(',')) {
    const m = CURSOR_ENTRY.exec(entry.trim());
    const partition = m ? Number(m[1]) : NaN;
    const offset = m ? Number(m[2]) : NaN;
    if (!m || !Number.isSafeInteger(partition) || !Number.isSafeInteger(offset) || cursor.has(partition)) {
      throw new ApiError(
        400,
        `Last-Event-ID ${JSON.stringify(text.slice(0, 200))} is not a change stream's cursor`,
        'send back the id of the last event received (partition:offset pairs joined by commas), or drop the header and give from=',
      );
    }
    cursor.set(partition, offset);
  }
  return cursor;
}

export function formatCursor(cursor: Cursor): string {
  return [...cursor].map(([p, o]) => `${p}:${o}`).join(',');
}

/** One SSE event; `data` is JSON, which never holds a line break, so it is one data line. */
export function sseEvent(data: unknown, opts: { id?: string; event?: string } = {}): string {
  return `${opts.event ? `event: ${opts.event}\n` : ''}${opts.id !== undefined ? `id: ${opts.id}\n` : ''}data: ${JSON.stringify(data)}\n\n`;
}

/**
 * An event of an id alone: it dispatches nothing, but sets an EventSource's last id (the SSE
 * spec sets it before it drops an event without data). A comment, when given, shows proxies
 * between that the stream is alive.
 */
export function sseCursor(id: string, comment?: string): string {
  return `${comment !== undefined ? `: ${comment}\n` : ''}id: ${id}\n\n`;
}

/** How long an EventSource waits before it reconnects after the stream ends. */
export function sseRetry(ms: number): string {
  return `retry: ${ms}\n\n`;
}

export function ndjsonLine(data: unknown): string {
  return `${JSON.stringify(data)}\n`;
}
