/**
 * The canonical text of a decoded key, so that the same value written under different schemas
 * (field order, doc strings, aliases, int widened to long) has one identity. It is JSON in the
 * style of RFC 8785: no whitespace, object members sorted by UTF-16 code units, numbers in
 * JavaScript's shortest round-trip form. Where JSON would merge values that differ it does not:
 * integers of any width are written exactly (a 64-bit integer too, as digits), negative zero
 * stays -0, and byte strings (Avro bytes and fixed, Protobuf bytes) are bare 0x-hex tokens, so
 * that they can never equal a string. A value it cannot write exactly throws
 * NotCanonicalError, and the caller falls back to the key's exact bytes.
 */
export class NotCanonicalError extends Error {
  override readonly name = 'NotCanonicalError';
}

/** protobufjs decodes 64-bit integers to long.js Long objects; their toString() is the exact decimal. */
function isLong(value: object): boolean {
  return (value as { __isLong__?: unknown }).__isLong__ === true;
}

function number(n: number): string {
  if (!Number.isFinite(n)) throw new NotCanonicalError(`the key holds ${n}, which has no canonical form`);
  return Object.is(n, -0) ? '-0' : String(n);
}

function write(value: unknown, path: string): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return number(value);
    case 'bigint':
      return value.toString();
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object':
      break;
    default:
      throw new NotCanonicalError(`the key holds a ${typeof value} at ${path || 'the top'}`);
  }
  if (value === null) return 'null';
  if (value instanceof Uint8Array) return '0x' + Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('hex');
  if (Array.isArray(value)) return '[' + value.map((v, i) => write(v, `${path}[${i}]`)).join(',') + ']';
  if (isLong(value)) {
    const digits = String(value);
    if (!/^-?\d+$/.test(digits)) throw new NotCanonicalError(`the key holds a 64-bit integer that reads as ${digits} at ${path}`);
    return digits;
  }
  if (value instanceof Map || value instanceof Set || value instanceof Date || value instanceof RegExp) {
    throw new NotCanonicalError(`the key holds a ${value.constructor.name} at ${path || 'the top'}`);
  }
  // Records, maps, messages: their own enumerable members (decoders put fields there; defaults
  // and methods live on prototypes). Members without a value are absent, as in JSON.
  const keys = Object.keys(value).sort();
  const members: string[] = [];
  for (const k of keys) {
    const v = (value as Record<string, unknown>)[k];
    if (v !== undefined) members.push(JSON.stringify(k) + ':' + write(v, `${path}.${k}`));
  }
  return '{' + members.join(',') + '}';
}

export function canonicalJson(value: unknown): string {
  return write(value, '');
}
