// Builds random message bodies from the schema data, independently of the codec, so a
// round trip checks the codec against the definitions rather than against itself.
import type { FieldDef, VersionRange } from '../../../src/protocol/generated/messages.js';
import type { Struct, TaggedField } from '../../../src/protocol/messages.js';

export type Rng = () => number;

/** mulberry32: a small seeded generator, so failures reproduce. */
export function seededRng(seed: number): Rng {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function inRange(version: number, range: VersionRange | undefined): boolean {
  return range !== undefined && version >= range[0] && version <= range[1];
}

function key(def: FieldDef): string {
  return def.name[0]!.toLowerCase() + def.name.slice(1);
}

function int(rnd: Rng, min: number, max: number): number {
  return min + Math.floor(rnd() * (max - min + 1));
}

function randomBytes(rnd: Rng, n: number): Buffer {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = int(rnd, 0, 255);
  return b;
}

const ALPHABET = ['a', 'b', 'z', '0', '-', '.', '_', ' ', 'é', '€', '😀', 'ß'];

function randomString(rnd: Rng): string {
  let s = '';
  const n = int(rnd, 0, 12);
  for (let i = 0; i < n; i++) s += ALPHABET[int(rnd, 0, ALPHABET.length - 1)];
  return s;
}

function randomInt64(rnd: Rng): bigint {
  const hi = BigInt(int(rnd, 0, 0xffffffff));
  const lo = BigInt(int(rnd, 0, 0xffffffff));
  return BigInt.asIntN(64, (hi << 32n) | lo);
}

const FLOATS = [0, 1.5, -2.25, 1e300, Number.MAX_VALUE, Number.MIN_VALUE, Infinity, -Infinity, NaN];

function primitive(type: string, rnd: Rng): unknown {
  switch (type) {
    case 'bool':
      return rnd() < 0.5;
    case 'int8':
      return int(rnd, -128, 127);
    case 'int16':
      return int(rnd, -32768, 32767);
    case 'uint16':
      return int(rnd, 0, 65535);
    case 'int32':
      return int(rnd, -0x80000000, 0x7fffffff);
    case 'uint32':
      return int(rnd, 0, 0xffffffff);
    case 'int64':
      return randomInt64(rnd);
    case 'float64':
      return FLOATS[int(rnd, 0, FLOATS.length - 1)];
    case 'uuid':
      return randomBytes(rnd, 16).toString('base64url');
    case 'string':
      return randomString(rnd);
    // Sometimes past the writer's large-chunk threshold.
    case 'bytes':
    case 'records':
      return randomBytes(rnd, rnd() < 0.05 ? int(rnd, 1024, 3000) : int(rnd, 0, 20));
    default:
      throw new Error(`unknown type ${type}`);
  }
}

/** Kafka's default for a field in `version`, as a decoder reports an absent tagged field. */
export function defaultValue(def: FieldDef, version: number, flexible: boolean): unknown {
  if (def.default !== undefined && (def.default === null || !def.fields)) return def.default;
  if (def.type.startsWith('[]')) return [];
  if (def.fields) return defaultStruct(def.fields, version, flexible);
  switch (def.type) {
    case 'bool':
      return false;
    case 'int64':
      return 0n;
    case 'string':
      return '';
    case 'uuid':
      return 'AAAAAAAAAAAAAAAAAAAAAA';
    case 'bytes':
      return Buffer.alloc(0);
    case 'records':
      return inRange(version, def.nullableVersions) ? null : Buffer.alloc(0);
    default:
      return 0;
  }
}

function defaultStruct(fields: readonly FieldDef[], version: number, flexible: boolean): Struct {
  const out: Struct = {};
  for (const f of fields) if (inRange(version, f.versions)) out[key(f)] = defaultValue(f, version, flexible);
  return out;
}

function value(def: FieldDef, version: number, flexible: boolean, rnd: Rng, depth: number): unknown {
  if (inRange(version, def.nullableVersions) && rnd() < 0.2) return null;
  if (def.type.startsWith('[]')) {
    const n = depth > 4 ? 0 : int(rnd, 0, 3);
    const out: unknown[] = [];
    for (let i = 0; i < n; i++) {
      out.push(def.fields ? sampleStruct(def.fields, version, flexible, rnd, depth + 1) : primitive(def.type.slice(2), rnd));
    }
    return out;
  }
  if (def.fields) return sampleStruct(def.fields, version, flexible, rnd, depth + 1);
  return primitive(def.type, rnd);
}

function unknownTags(fields: readonly FieldDef[], rnd: Rng): TaggedField[] {
  const firstFree = Math.max(-1, ...fields.map((f) => f.tag ?? -1)) + 1;
  const tags = new Set<number>();
  const n = int(rnd, 1, 3);
  for (let i = 0; i < n; i++) tags.add(firstFree + int(rnd, 0, 200));
  return [...tags].sort((a, b) => a - b).map((tag) => ({ tag, data: randomBytes(rnd, int(rnd, 0, 6)) }));
}

/** A random struct holding exactly the fields present in `version`. */
export function sampleStruct(fields: readonly FieldDef[], version: number, flexible: boolean, rnd: Rng, depth = 0): Struct {
  const out: Struct = {};
  for (const def of fields) {
    if (!inRange(version, def.versions)) continue;
    const tagged = flexible && inRange(version, def.taggedVersions);
    out[key(def)] = tagged && rnd() < 0.4 ? defaultValue(def, version, flexible) : value(def, version, flexible, rnd, depth);
  }
  if (flexible && rnd() < 0.15) out._unknownTags = unknownTags(fields, rnd);
  return out;
}
