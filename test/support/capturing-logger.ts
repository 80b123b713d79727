import type { Logger } from '../../src/common/log.js';

/** A logger that keeps info, warnings and errors as lines for assertions (errors by message) and prints nothing. */
export function capturingLogger(lines: string[]): Logger {
  const keep = (level: string) => (msg: string, fields?: Record<string, unknown>) =>
    void lines.push(`${level} ${msg} ${JSON.stringify(fields ?? {}, (_k, v: unknown) => (v instanceof Error ? v.message : v))}`);
  const logger: Logger = {
    debug: () => {},
    info: keep('info'),
    warn: keep('warn'),
    error: keep('error'),
    child: () => logger,
    enabled: (level) => level !== 'debug',
  };
  return logger;
}
