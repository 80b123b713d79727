/**
 * Structured JSON logs, one object per line on stderr, so that container runtimes and log
 * shippers can parse them without a format config. Fields are merged flat into the line.
 */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
  enabled(level: LogLevel): boolean;
}

export type LogSink = (line: string) => void;

let threshold: number = RANK.info;
let sink: LogSink = (line) => process.stderr.write(line + '\n');

export function setLogLevel(level: LogLevel): void {
  threshold = RANK[level];
}

/** Tests capture log lines through this instead of patching stderr. */
export function setLogSink(next: LogSink): LogSink {
  const previous = sink;
  sink = next;
  return previous;
}

export function isLogLevel(value: string): value is LogLevel {
  return value in RANK;
}

function errorFields(err: unknown): unknown {
  if (err instanceof Error) return { name: err.name, message: err.message, ...(threshold <= RANK.debug ? { stack: err.stack } : {}) };
  return err;
}

function write(level: LogLevel, base: Record<string, unknown>, msg: string, fields?: Record<string, unknown>): void {
  if (RANK[level] < threshold) return;
  const line: Record<string, unknown> = { time: new Date().toISOString(), level, msg, ...base };
  if (fields) {
    for (const [k, v] of Object.entries(fields)) line[k] = k === 'err' ? errorFields(v) : typeof v === 'bigint' ? v.toString() : v;
  }
  sink(JSON.stringify(line));
}

export function createLogger(base: Record<string, unknown> = {}): Logger {
  return {
    debug: (msg, fields) => write('debug', base, msg, fields),
    info: (msg, fields) => write('info', base, msg, fields),
    warn: (msg, fields) => write('warn', base, msg, fields),
    error: (msg, fields) => write('error', base, msg, fields),
    child: (fields) => createLogger({ ...base, ...fields }),
    enabled: (level) => RANK[level] >= threshold,
  };
}

export const log = createLogger({ component: 'kcompact' });
