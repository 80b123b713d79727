/**
 * What a setting of `kcompact proxy` is: one declaration gives its type (what `parse` returns),
 * its default (written once: a value, a rule over other settings, or none) and its --help text.
 * Its flag, KCOMPACT_* environment twin and config-file key all derive from the key it is
 * declared under, so the three can never drift apart.
 */
import fs from 'node:fs';
import { parseHostPort, parseHostPortList, type HostPort } from '../common/host-port.js';

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export const flagOf = (key: string): string => key.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase());
export const envOf = (key: string): string => 'KCOMPACT_' + flagOf(key).replace(/-/g, '_').toUpperCase();

export function describeKey(key: string): string {
  return `--${flagOf(key)} / ${envOf(key)} / config key "${key}"`;
}

export const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/** The resolved value of another setting, for a default derived from it. */
export interface Resolved<C> {
  <K extends keyof C>(key: K): C[K];
}

export type DefaultKind = 'value' | 'derived' | 'unset' | 'required';

/** A declared setting; `D` names the other settings its default is derived from, if any. */
export interface Setting<T, D = object> {
  readonly arg: string;
  readonly description: string;
  /** The default as --help shows it; undefined for a required setting. */
  readonly defaultText: string | undefined;
  readonly defaultKind: DefaultKind;
  /** The value of a raw flag, environment or config-file value; throws saying what is allowed. */
  readonly parse: (raw: unknown) => T;
  /** A raw value as an error quotes it back. */
  readonly quote: (raw: unknown) => string;
  /** The value when none is given. */
  readonly fallback: (key: string, value: Resolved<D>) => T;
}

/** The type a setting resolves to: undefined is part of it for a setting without a default. */
export type ValueOf<S> = S extends Setting<infer T, infer _D> ? T : never;

interface Spec<T> {
  arg: string;
  description: string;
  parse(raw: unknown): T;
  /** How --help writes a default value; JSON, or the string itself, unless given. */
  show?(value: T): string;
  /** Words after the default in --help, in parentheses: what it amounts to. */
  note?: string;
  /** How a bad value is quoted back, when it may hold a secret. */
  quote?(raw: unknown): string;
}

/** NoInfer: `parse` alone gives the type, so that a default of `{}` or `[]` does not widen or narrow it. */
type Plain<T> = { default: NoInfer<T>; defaultText?: never; derive?: never; required?: never };
/** A default computed from other settings: --help can only say the rule, in `defaultText`. */
type Derived<T, D> = { derive: (value: Resolved<D>) => NoInfer<T>; defaultText: string; default?: never; required?: never };
/** No default: resolving fails without a value, saying why one is needed. */
type Mandatory = { required: string; default?: never; defaultText?: never; derive?: never };
/** Unset unless given; --help says "none" or `defaultText`, the words for what that means. */
type Unset = { default?: undefined; defaultText?: string; derive?: never; required?: never };

export function setting<T>(spec: Spec<T> & Plain<T>): Setting<T>;
export function setting<T, D>(spec: Spec<T> & Derived<T, D>): Setting<T, D>;
export function setting<T>(spec: Spec<T> & Mandatory): Setting<T>;
export function setting<T>(spec: Spec<T> & Unset): Setting<T | undefined>;
export function setting<T, D>(
  spec: Spec<T> & { default?: T; defaultText?: string; derive?: (value: Resolved<D>) => T; required?: string },
): Setting<T | undefined, D> {
  const { default: value, derive, required } = spec;
  const kind: DefaultKind = derive ? 'derived' : required !== undefined ? 'required' : value !== undefined ? 'value' : 'unset';
  const shown = value !== undefined ? (spec.show ?? showJson)(value) : (spec.defaultText ?? (kind === 'unset' ? 'none' : undefined));
  return {
    arg: spec.arg,
    description: spec.description,
    defaultText: shown !== undefined && spec.note ? `${shown} (${spec.note})` : shown,
    defaultKind: kind,
    parse: (raw) => spec.parse(raw),
    quote: (raw) => (spec.quote ? spec.quote(raw) : JSON.stringify(raw)),
    fallback: (key, resolved) => {
      if (derive) return derive(resolved);
      if (required !== undefined) throw new ConfigError(`missing ${describeKey(key)}: ${required}`);
      // A copy: a caller changing its config must not change the next one's default.
      return value === undefined ? undefined : structuredClone(value);
    },
  };
}

const showJson = (value: unknown): string => (typeof value === 'string' ? value : JSON.stringify(value));

export const showHostPort = (a: HostPort): string => (a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`);

// The parse rules settings share. A value comes as text from a flag or the environment, and as
// any JSON value from the config file: each rule takes both.

export const hostPort = (raw: unknown): HostPort => parseHostPort(String(raw));

export const hostPortList = (raw: unknown): HostPort[] => parseHostPortList(Array.isArray(raw) ? raw.join(',') : String(raw));

export const integer =
  (min: number, max: number) =>
  (raw: unknown): number => {
    // Number() would also take "0x10", "1e3" and "": only plain decimal digits are an integer here.
    const digits = String(raw).trim();
    const n = typeof raw === 'number' ? raw : /^-?\d+$/.test(digits) ? Number(digits) : NaN;
    if (!Number.isInteger(n) || n < min || n > max) throw new Error(`expected an integer from ${min} to ${max}`);
    return n;
  };

export const ratio =
  (min: number, max: number) =>
  (raw: unknown): number => {
    const digits = String(raw).trim();
    const n = typeof raw === 'number' ? raw : /^\d*\.?\d+$/.test(digits) ? Number(digits) : NaN;
    if (!Number.isFinite(n) || n < min || n > max) throw new Error(`expected a number from ${min} to ${max}`);
    return n;
  };

export const boolean = (raw: unknown): boolean => {
  if (typeof raw === 'boolean') return raw;
  const v = String(raw).trim().toLowerCase();
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new Error('expected true or false');
};

export const text = (raw: unknown): string => {
  if (typeof raw !== 'string' || raw.trim() === '') throw new Error('expected a non-empty string');
  return raw.trim();
};

/** A path the proxy can read now (its contents are checked with the settings it goes with). */
export const readableFile = (raw: unknown): string => {
  const file = text(raw);
  try {
    fs.accessSync(file, fs.constants.R_OK);
  } catch (err) {
    const code = err instanceof Error && 'code' in err && typeof err.code === 'string' ? err.code : messageOf(err);
    throw new Error(`expected the path of a readable file (${code})`, { cause: err });
  }
  return file;
};

/** Topic names or globs (`*` matches any run of characters), as a comma list or a JSON array. */
export const topicPatterns = (raw: unknown): string[] => {
  const shape = 'a comma list or a JSON array of topic names or globs';
  const list = typeof raw !== 'string' ? raw : raw.trim().startsWith('[') ? json(raw, shape) : raw.split(',');
  if (!Array.isArray(list)) throw new Error(`expected ${shape}`);
  return list.map((entry: unknown, i) => {
    if (typeof entry !== 'string' || entry.trim() === '') throw new Error(`entry ${i} must be a non-empty topic name or glob, got ${JSON.stringify(entry)}`);
    return entry.trim();
  });
};

/** A JSON value, given as text (flag, environment) or already parsed (config file). */
export function json(raw: unknown, expected: string): unknown {
  if (typeof raw !== 'string') return raw;
  try {
    const parsed: unknown = JSON.parse(raw);
    return parsed;
  } catch (err) {
    throw new Error(`expected ${expected}, but the value is not valid JSON (${messageOf(err)})`, { cause: err });
  }
}

/** An object's string values, copied; `notString` words the error for a key whose value is not. */
export function stringValues(obj: object, notString: (key: string, value: unknown) => string): Record<string, string> {
  return Object.fromEntries(
    Object.entries(obj).map(([k, v]: [string, unknown]): [string, string] => {
      if (typeof v !== 'string') throw new Error(notString(k, v));
      return [k, v];
    }),
  );
}

/** Never quoted back: a value that failed to parse may still be the real secret. */
export const hidden = (): string => '(value hidden)';
