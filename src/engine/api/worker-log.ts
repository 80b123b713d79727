/**
 * The worker's Logger: lines go to the main thread, which writes them through the proxy's own
 * logger, so the worker's logs share its format, sink and level. Errors are sent as plain
 * objects and turned back into Errors there.
 */
import type { MessagePort } from 'node:worker_threads';
import type { Logger, LogLevel } from '../../common/log.js';
import type { FromWorker, SerializedError } from './engine-protocol.js';
import { TableError } from './table-reads.js';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export function serializeError(err: unknown): SerializedError {
  if (err instanceof TableError) return { name: err.name, message: err.message, status: err.status };
  if (err instanceof Error) return { name: err.name, message: err.message, ...(err.stack ? { stack: err.stack } : {}) };
  return { name: 'Error', message: String(err) };
}

export function deserializeError(e: SerializedError): Error {
  if (e.name === 'TableError' && e.status !== undefined) return new TableError(e.status as TableError['status'], e.message);
  const err = new Error(e.message);
  err.name = e.name;
  if (e.stack) err.stack = e.stack;
  return err;
}

function plain(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) {
    out[k] = v instanceof Error ? { __error: serializeError(v) } : typeof v === 'bigint' ? v.toString() : v;
  }
  return out;
}

/** Undoes plain() on the main thread. */
export function restoreFields(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) {
    const wrapped = v !== null && typeof v === 'object' && '__error' in v ? (v as { __error: SerializedError }).__error : undefined;
    out[k] = wrapped ? deserializeError(wrapped) : v;
  }
  return out;
}

export function workerLogger(port: MessagePort, level: LogLevel, base: Record<string, unknown> = {}): Logger {
  const threshold = RANK[level];
  const send = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (RANK[lvl] < threshold) return;
    const message: FromWorker = { type: 'log', level: lvl, msg, fields: plain({ ...base, ...fields }) };
    port.postMessage(message);
  };
  return {
    debug: (msg, fields) => send('debug', msg, fields),
    info: (msg, fields) => send('info', msg, fields),
    warn: (msg, fields) => send('warn', msg, fields),
    error: (msg, fields) => send('error', msg, fields),
    child: (fields) => workerLogger(port, level, { ...base, ...fields }),
    enabled: (lvl) => RANK[lvl] >= threshold,
  };
}
