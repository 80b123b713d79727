import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canonicalJson, NotCanonicalError } from '../../../../src/engine/key-identity/canonical-json.js';
import { seededRng } from '../../protocol/sample-body.js';

const SEEDS = Number(process.env.KCOMPACT_PROPERTY_SEEDS ?? 200);

type Random = () => number;
const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

const NAMES = ['id', 'a', 'b', 'B', '_x', 'zone', 'é', '10', '2', '\u{1F600}', '\uffff', 'with "quote"', 'line\nbreak', ''];
const STRINGS = ['', 'x', 'order-42', 'é', '\u{1F600}', '"', '\\', '\u0000', '0x01', 'null', '5', 'a\tb'];

/** A random decoded key: the shapes Avro, JSON Schema and Protobuf decoders produce. */
function value(random: Random, depth: number): unknown {
  const kinds =
    depth >= 3
      ? ['null', 'bool', 'int', 'float', 'bigint', 'string', 'bytes']
      : ['null', 'bool', 'int', 'float', 'bigint', 'string', 'bytes', 'array', 'record', 'record', 'union'];
  switch (pick(random, kinds)) {
    case 'null':
      return null;
    case 'bool':
      return random() < 0.5;
    case 'int':
      return Math.floor((random() - 0.5) * 2 ** 40);
    case 'float':
      return (random() - 0.5) * 10 ** Math.floor(random() * 30 - 15);
    case 'bigint':
      return BigInt(Math.floor(random() * 2 ** 53)) * 4096n - 7n;
    case 'string':
      return pick(random, STRINGS) + pick(random, STRINGS);
    case 'bytes':
      return Buffer.from(Array.from({ length: Math.floor(random() * 5) }, () => Math.floor(random() * 256)));
    case 'array':
      return Array.from({ length: Math.floor(random() * 4) }, () => value(random, depth + 1));
    case 'union':
      // An Avro union the library keeps wrapped: {branch name: value}.
      return { [pick(random, ['string', 'long', 'dev.kcompact.Key'])]: value(random, depth + 1) };
    default: {
      const record: Record<string, unknown> = {};
      for (let n = Math.floor(random() * 5); n > 0; n--) record[pick(random, NAMES)] = value(random, depth + 1);
      return record;
    }
  }
}

function shuffled<T>(random: Random, items: T[]): T[] {
  const out = [...items];
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/** The same value with every record's members inserted in another order. */
function reordered(random: Random, v: unknown): unknown {
  if (Array.isArray(v)) return v.map((x) => reordered(random, x));
  if (v === null || typeof v !== 'object' || Buffer.isBuffer(v)) return v;
  const out: Record<string, unknown> = {};
  for (const k of shuffled(random, Object.keys(v))) out[k] = reordered(random, (v as Record<string, unknown>)[k]);
  return out;
}

/** The paths of the leaves of a value (an empty array or record is one), to change one of them. */
function leaves(v: unknown, path: (string | number)[] = []): (string | number)[][] {
  if (Array.isArray(v) && v.length > 0) return v.flatMap((x, i) => leaves(x, [...path, i]));
  if (v !== null && typeof v === 'object' && !Buffer.isBuffer(v) && Object.keys(v).length > 0)
    return Object.entries(v).flatMap(([k, x]) => leaves(x, [...path, k]));
  return [path];
}

function withLeaf(v: unknown, path: (string | number)[], leaf: unknown): unknown {
  if (path.length === 0) return leaf;
  const [head, ...rest] = path;
  if (Array.isArray(v)) return v.map((x, i) => (i === head ? withLeaf(x, rest, leaf) : x));
  return { ...(v as Record<string, unknown>), [head!]: withLeaf((v as Record<string, unknown>)[head!], rest, leaf) };
}

/** An integer of any width as a bigint, the one form the canonical text gives them all. */
function asInteger(x: unknown): bigint | undefined {
  if (typeof x === 'bigint') return x;
  return typeof x === 'number' && Number.isInteger(x) && !Object.is(x, -0) ? BigInt(x) : undefined;
}

/** Another leaf value, never one the canonical form means to merge with the original (5 and 5n are one integer). */
function otherLeaf(random: Random, leaf: unknown): unknown {
  for (;;) {
    const candidate = value(random, 3);
    const [a, b] = [asInteger(leaf), asInteger(candidate)];
    if (a !== undefined && a === b) continue;
    if (Buffer.isBuffer(leaf) && Buffer.isBuffer(candidate) ? leaf.equals(candidate) : Object.is(leaf, candidate)) continue;
    return candidate;
  }
}

describe('canonicalJson', () => {
  it('does not depend on the order of members, at any depth', () => {
    for (let seed = 1; seed <= SEEDS; seed++) {
      const random = seededRng(seed);
      const v = value(random, 0);
      assert.equal(canonicalJson(reordered(random, v)), canonicalJson(v), `seed ${seed}`);
    }
  });

  it('tells values apart that differ in one leaf (property over nested records, arrays, unions, bytes)', () => {
    for (let seed = 1; seed <= SEEDS; seed++) {
      const random = seededRng(seed);
      const v = value(random, 0);
      const paths = leaves(v);
      const path = pick(random, paths);
      const leaf = path.reduce<unknown>((x, k) => (x as Record<string | number, unknown>)[k], v);
      const changed = withLeaf(v, path, otherLeaf(random, leaf));
      assert.notEqual(canonicalJson(changed), canonicalJson(v), `seed ${seed}, leaf ${JSON.stringify(path)}`);
    }
  });

  it('is plain JSON, read back to the same value, when there are no bytes, 64-bit integers or -0', () => {
    const plain = (v: unknown): boolean =>
      Array.isArray(v)
        ? v.every(plain)
        : v !== null && typeof v === 'object'
          ? !Buffer.isBuffer(v) && Object.values(v).every(plain)
          : typeof v !== 'bigint' && !Object.is(v, -0);
    let checked = 0;
    for (let seed = 1; seed <= SEEDS; seed++) {
      const v = value(seededRng(seed), 0);
      if (!plain(v)) continue;
      const text = canonicalJson(v);
      assert.deepEqual(JSON.parse(text), v, `seed ${seed}`);
      assert.equal(canonicalJson(JSON.parse(text)), text, `seed ${seed}: idempotent`);
      checked++;
    }
    assert.ok(checked > SEEDS / 10, `${checked} plain values checked`);
  });

  it('sorts members by UTF-16 code units and writes no whitespace', () => {
    const v = { b: 1, a: [true, null, 'x'], '\uffff': 0, '\u{1F600}': 0, é: 0, B: 0, '10': 0, '2': 0 };
    assert.equal(canonicalJson(v), '{"10":0,"2":0,"B":0,"a":[true,null,"x"],"b":1,"é":0,"\u{1F600}":0,"\uffff":0}');
  });

  it('writes nested records the same whether they are plain objects or decoder class instances', () => {
    class OrderKey {
      constructor(
        readonly region: string,
        readonly orderId: string,
        readonly line: { n: number },
      ) {}
      describe(): string {
        return this.orderId;
      }
    }
    const decoded = new OrderKey('eu', 'o-1', { n: 3 });
    assert.equal(canonicalJson(decoded), '{"line":{"n":3},"orderId":"o-1","region":"eu"}');
    assert.equal(canonicalJson(decoded), canonicalJson({ orderId: 'o-1', line: { n: 3 }, region: 'eu' }));
    assert.equal(canonicalJson({ a: undefined, b: 1 }), '{"b":1}', 'a member without a value is absent, as in JSON');
  });

  it('writes integers exactly whatever their width: int, long, bigint and Protobuf Long agree', () => {
    const long = (digits: string) => ({ __isLong__: true, low: 0, high: 0, unsigned: false, toString: () => digits });
    assert.equal(canonicalJson(5), '5');
    assert.equal(canonicalJson(5n), '5');
    assert.equal(canonicalJson(long('5')), '5');
    assert.equal(canonicalJson({ n: 2n ** 63n - 1n }), '{"n":9223372036854775807}');
    assert.equal(canonicalJson(long('-9223372036854775808')), '-9223372036854775808');
    assert.equal(canonicalJson(1.5), '1.5');
    assert.equal(canonicalJson(1e21), '1e+21');
    assert.equal(canonicalJson(0.1), '0.1');
  });

  it('keeps apart what plain JSON would merge: bytes and strings, -0 and 0, a wrapped union and its value', () => {
    const forms = [Buffer.from('abc'), 'abc', '0x616263', Buffer.from([0x61, 0x62, 0x63]).toString('hex')];
    assert.equal(canonicalJson(forms[0]), '0x616263');
    assert.equal(new Set(forms.map(canonicalJson)).size, forms.length);
    assert.equal(canonicalJson(Buffer.alloc(0)), '0x');
    assert.equal(canonicalJson(new Uint8Array([1, 255])), '0x01ff');
    assert.equal(canonicalJson(Buffer.from([9, 1, 255, 7]).subarray(1, 3)), '0x01ff', 'a view of a larger buffer');
    assert.notEqual(canonicalJson(-0), canonicalJson(0));
    assert.notEqual(canonicalJson({ string: 'x' }), canonicalJson('x'));
    assert.notEqual(canonicalJson('5'), canonicalJson(5));
    assert.notEqual(canonicalJson(null), canonicalJson('null'));
  });

  it('refuses what it cannot write exactly, naming where it is', () => {
    const refused: [unknown, RegExp][] = [
      [NaN, /NaN/],
      [{ a: [1, Infinity] }, /Infinity/],
      [new Map(), /Map at the top/],
      [{ when: new Date(0) }, /Date at \.when/],
      [{ s: new Set([1]) }, /Set/],
      [{ f: () => 1 }, /function at \.f/],
      [[Symbol('s')], /symbol at \[0\]/],
      [undefined, /undefined/],
      [[undefined], /undefined at \[0\]/],
      [{ __isLong__: true, toString: () => 'lots' }, /64-bit integer/],
    ];
    for (const [v, message] of refused) {
      assert.throws(
        () => canonicalJson(v),
        (err: unknown) => err instanceof NotCanonicalError && message.test(err.message),
        String(message),
      );
    }
  });
});
