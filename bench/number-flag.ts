/**
 * The numeric flags of the benchmarks: one parser, so every benchmark refuses a bad value the
 * same way, naming the flag.
 */
export interface NumberFlag {
  /** The value when the flag is absent (parseArgs gives undefined then). */
  fallback?: number;
  /** Whether fractions are refused (the default). */
  integer?: boolean;
  /** The smallest value accepted (1 by default). */
  min?: number;
}

/** A reader of `args`' numeric flags: `number('rounds')`, `number('soak-minutes', { integer: false, min: 0 })`. */
export function numberFlags<K extends string>(args: Partial<Record<K, string | boolean>>): (name: K, opts?: NumberFlag) => number {
  return (name, { fallback, integer = true, min = 1 } = {}) => {
    const raw = args[name] ?? fallback;
    const n = Number(raw);
    if (!Number.isFinite(n) || n < min || (integer && !Number.isInteger(n))) {
      throw new Error(`--${name} must be ${integer ? 'an integer' : 'a number'} of at least ${min}, got ${String(raw)}`);
    }
    return n;
  };
}
