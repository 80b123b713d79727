import { ProtocolError } from '../errors.js';
import type { FieldDef, FieldDefault, VersionRange } from '../generated/messages.js';
import type { Reader } from './reader.js';
import type { TaggedField } from './tagged-field.js';
import { ZERO_UUID } from './uuid.js';
import { Writer } from './writer.js';

/** A decoded struct: camelCase field names, plus the tagged fields the schema does not know. */
export type Struct = { [field: string]: unknown; _unknownTags?: TaggedField[] };

export interface StructCodec {
  read(r: Reader): Struct;
  write(w: Writer, value: unknown): void;
  /** A new struct holding every field's default. */
  fresh(): Struct;
  isDefault(value: Struct): boolean;
}

/**
 * A failure inside a message. The field path is collected while the error unwinds through
 * the struct and array codecs, so the success path pays nothing for it.
 */
export class FieldFault {
  /** Innermost segment first. */
  readonly path: string[] = [];

  constructor(
    readonly detail: string,
    readonly cause: unknown,
  ) {}

  /** The path as written in source, e.g. `responses[0].partitions[2].records`. */
  get where(): string {
    let s = '';
    for (let i = this.path.length - 1; i >= 0; i--) {
      const segment = this.path[i]!;
      s += s === '' || segment.startsWith('[') ? segment : `.${segment}`;
    }
    return s;
  }
}

function fault(e: unknown, segment: string): FieldFault {
  const f = e instanceof FieldFault ? e : new FieldFault(e instanceof Error ? e.message : String(e), e);
  f.path.push(segment);
  return f;
}

const TAG_SECTION = '(tagged fields)';
const UNKNOWN_TAGS = '_unknownTags';
const EMPTY_BYTES = Buffer.alloc(0);
const EMPTY_ARRAY: readonly unknown[] = Object.freeze([]);

type Read = (r: Reader) => unknown;
// Values come from callers untyped; the Writer validates each one.
type Write = (w: Writer, v: any) => void; // eslint-disable-line @typescript-eslint/no-explicit-any

interface FieldCodec {
  key: string;
  read: Read;
  write: Write;
  /** Written when the field is missing; never mutated. */
  shared: unknown;
  fresh(): unknown;
  isDefault(v: unknown): boolean;
}

interface TaggedCodec extends FieldCodec {
  tag: number;
}

type ValueCodec = Omit<FieldCodec, 'key'>;

function inRange(version: number, range: VersionRange | undefined): boolean {
  return range !== undefined && version >= range[0] && version <= range[1];
}

function camelCase(name: string): string {
  return name.charAt(0).toLowerCase() + name.slice(1);
}

/** Compiles the fields present in `version` into a reader and writer over closures. */
export function compileStruct(fields: readonly FieldDef[], version: number, flexible: boolean): StructCodec {
  const regular: FieldCodec[] = [];
  const tagged: TaggedCodec[] = [];
  for (const def of fields) {
    if (!inRange(version, def.versions)) continue;
    const key = camelCase(def.name);
    const nullable = inRange(version, def.nullableVersions);
    if (flexible && inRange(version, def.taggedVersions)) {
      tagged.push({ key, tag: def.tag!, ...valueCodec(def, version, flexible, nullable, true) });
    } else {
      regular.push({ key, ...valueCodec(def, version, flexible, nullable, false) });
    }
  }
  tagged.sort((a, b) => a.tag - b.tag);
  return makeStruct(regular, tagged, flexible);
}

function valueCodec(def: FieldDef, version: number, flexible: boolean, nullable: boolean, tagged: boolean): ValueCodec {
  if (def.type.startsWith('[]')) return arrayCodec(def, version, flexible, nullable);
  if (def.fields) return structCodec(compileStruct(def.fields, version, flexible), def.default, nullable, tagged);
  return primitiveCodec(def.type, def.default, flexible, nullable);
}

function fixed(read: Read, write: Write, dflt: unknown): ValueCodec {
  return { read, write, shared: dflt, fresh: () => dflt, isDefault: (v) => v === dflt };
}

function primitiveCodec(type: string, explicit: FieldDefault | undefined, flexible: boolean, nullable: boolean): ValueCodec {
  switch (type) {
    case 'bool':
      return fixed(
        (r) => r.bool(),
        (w, v) => w.bool(v),
        explicit ?? false,
      );
    case 'int8':
      return fixed(
        (r) => r.int8(),
        (w, v) => w.int8(v),
        explicit ?? 0,
      );
    case 'int16':
      return fixed(
        (r) => r.int16(),
        (w, v) => w.int16(v),
        explicit ?? 0,
      );
    case 'uint16':
      return fixed(
        (r) => r.uint16(),
        (w, v) => w.uint16(v),
        explicit ?? 0,
      );
    case 'int32':
      return fixed(
        (r) => r.int32(),
        (w, v) => w.int32(v),
        explicit ?? 0,
      );
    case 'uint32':
      return fixed(
        (r) => r.uint32(),
        (w, v) => w.uint32(v),
        explicit ?? 0,
      );
    case 'float64':
      return fixed(
        (r) => r.float64(),
        (w, v) => w.float64(v),
        explicit ?? 0,
      );
    case 'uuid':
      return fixed(
        (r) => r.uuid(),
        (w, v) => w.uuid(v),
        explicit ?? ZERO_UUID,
      );
    case 'int64': {
      const d = (explicit as bigint | undefined) ?? 0n;
      const codec = fixed(
        (r) => r.int64(),
        (w, v) => w.int64(v),
        d,
      );
      codec.isDefault = (v) => v === d || (typeof v === 'number' && v === Number(d));
      return codec;
    }
    case 'string':
      return fixed(
        flexible ? (nullable ? (r) => r.compactNullableString() : (r) => r.compactString()) : nullable ? (r) => r.nullableString() : (r) => r.string(),
        flexible
          ? nullable
            ? (w, v) => w.compactNullableString(v)
            : (w, v) => w.compactString(v)
          : nullable
            ? (w, v) => w.nullableString(v)
            : (w, v) => w.string(v),
        explicit === undefined ? '' : explicit,
      );
    case 'bytes':
    case 'records': {
      // Kafka defaults records to null; where null cannot be written, empty is the closest.
      const dflt = explicit === null || (explicit === undefined && type === 'records' && nullable) ? null : EMPTY_BYTES;
      return {
        read: flexible ? (nullable ? (r) => r.compactNullableBytes() : (r) => r.compactBytes()) : nullable ? (r) => r.nullableBytes() : (r) => r.bytes(),
        write: flexible
          ? nullable
            ? (w, v) => w.compactNullableBytes(v)
            : (w, v) => w.compactBytes(v)
          : nullable
            ? (w, v) => w.nullableBytes(v)
            : (w, v) => w.bytes(v),
        shared: dflt,
        fresh: () => dflt,
        isDefault: dflt === null ? (v) => v === null : (v) => v instanceof Uint8Array && v.length === 0,
      };
    }
    default:
      throw new Error(`schema uses unknown type ${type}`);
  }
}

function nonNullable(kind: string): ProtocolError {
  return new ProtocolError(`null in a non-nullable ${kind}`);
}

function arrayCodec(def: FieldDef, version: number, flexible: boolean, nullable: boolean): ValueCodec {
  let readElement: Read;
  let writeElement: Write;
  if (def.fields) {
    const element = compileStruct(def.fields, version, flexible);
    readElement = element.read;
    writeElement = element.write;
  } else {
    const element = primitiveCodec(def.type.slice(2), undefined, flexible, false);
    readElement = element.read;
    writeElement = element.write;
  }
  const read = (r: Reader): unknown[] | null => {
    const n = flexible ? r.compactArrayLength() : r.arrayLength();
    if (n < 0) {
      if (nullable) return null;
      throw nonNullable('array');
    }
    const out: unknown[] = [];
    let i = 0;
    try {
      for (; i < n; i++) out.push(readElement(r));
    } catch (e) {
      throw fault(e, `[${i}]`);
    }
    return out;
  };
  const write = (w: Writer, v: unknown): void => {
    if (v === null) {
      if (!nullable) throw nonNullable('array');
      if (flexible) w.compactArrayLength(-1);
      else w.arrayLength(-1);
      return;
    }
    if (!Array.isArray(v)) throw new ProtocolError(`expected an array, got ${typeof v}`);
    if (flexible) w.compactArrayLength(v.length);
    else w.arrayLength(v.length);
    let i = 0;
    try {
      for (; i < v.length; i++) writeElement(w, v[i]);
    } catch (e) {
      throw fault(e, `[${i}]`);
    }
  };
  const nullDefault = def.default === null;
  return {
    read,
    write,
    shared: nullDefault ? null : EMPTY_ARRAY,
    fresh: nullDefault ? () => null : () => [],
    isDefault: nullDefault ? (v) => v === null : (v) => Array.isArray(v) && v.length === 0,
  };
}

function structCodec(inner: StructCodec, explicit: FieldDefault | undefined, nullable: boolean, tagged: boolean): ValueCodec {
  let read: Read = inner.read;
  let write: Write = inner.write;
  if (nullable) {
    // Kafka marks a nullable struct with an int8 (-1 null, 1 present), or a uvarint when tagged.
    read = tagged ? (r) => (r.uvarint() === 0 ? null : inner.read(r)) : (r) => (r.int8() < 0 ? null : inner.read(r));
    write = (w, v) => {
      if (v === null) {
        if (tagged) w.uvarint(0);
        else w.int8(-1);
        return;
      }
      if (tagged) w.uvarint(1);
      else w.int8(1);
      inner.write(w, v);
    };
  }
  const nullDefault = explicit === null;
  return {
    read,
    write,
    // An empty object encodes as the struct of defaults.
    shared: nullDefault ? null : Object.freeze({}),
    fresh: nullDefault ? () => null : () => inner.fresh(),
    isDefault: nullDefault ? (v) => v === null : (v) => typeof v === 'object' && v !== null && inner.isDefault(v as Struct),
  };
}

function makeStruct(regular: FieldCodec[], tagged: TaggedCodec[], flexible: boolean): StructCodec {
  const n = regular.length;
  const keys = regular.map((f) => f.key);
  const reads = regular.map((f) => f.read);
  const writes = regular.map((f) => f.write);
  const shared = regular.map((f) => f.shared);
  const byTag = new Map<number, TaggedCodec>();
  for (const t of tagged) {
    if (byTag.has(t.tag)) throw new Error(`schema reuses tag ${t.tag} for ${t.key}`);
    byTag.set(t.tag, t);
  }
  const all: FieldCodec[] = [...regular, ...tagged];
  // Decoded structs are cloned from an object that already has every key, so V8 gives them
  // their final shape at once instead of growing them one property at a time.
  const template: Struct = {};
  for (const f of all) template[f.key] = undefined;

  function readTags(r: Reader, o: Struct): void {
    for (const t of tagged) o[t.key] = t.fresh();
    let count: number;
    try {
      count = r.uvarint();
      if (count > r.remaining) throw new ProtocolError(`count ${count} exceeds remaining ${r.remaining} bytes`);
    } catch (e) {
      throw fault(e, TAG_SECTION);
    }
    let unknown: TaggedField[] | undefined;
    for (let k = 0; k < count; k++) {
      let tag: number;
      let size: number;
      try {
        tag = r.uvarint();
        size = r.uvarint();
        if (size > r.remaining) throw new ProtocolError(`tag ${tag} size ${size} exceeds remaining ${r.remaining} bytes`);
      } catch (e) {
        throw fault(e, TAG_SECTION);
      }
      const known = byTag.get(tag);
      if (known === undefined) {
        (unknown ??= []).push({ tag, data: r.slice(size) });
        continue;
      }
      const end = r.end;
      r.end = r.pos + size;
      try {
        o[known.key] = known.read(r);
        if (r.pos !== r.end) throw new ProtocolError(`${r.end - r.pos} of its ${size} bytes left unread`);
      } catch (e) {
        throw fault(e, known.key);
      }
      r.end = end;
    }
    if (unknown !== undefined) o._unknownTags = unknown;
  }

  function writeTagged(w: Writer, t: TaggedCodec, v: unknown): void {
    const content = new Writer(64);
    try {
      t.write(content, v);
    } catch (e) {
      throw fault(e, t.key);
    }
    const data = content.finish();
    w.uvarint(t.tag);
    w.uvarint(data.length);
    w.raw(data);
  }

  /** Validates caller-supplied unknown tags and returns them in tag order. */
  function orderedUnknown(unknown: unknown): TaggedField[] {
    if (!Array.isArray(unknown)) throw new ProtocolError('expected an array of { tag, data }');
    let sorted = true;
    for (let i = 0; i < unknown.length; i++) {
      const f: unknown = unknown[i];
      if (typeof f !== 'object' || f === null) throw fault(new ProtocolError('expected { tag, data }'), `[${i}]`);
      const { tag, data } = f as TaggedField;
      if (!(Number.isInteger(tag) && tag >= 0 && tag <= 0xffffffff)) {
        throw fault(new ProtocolError(`invalid tag ${String(tag)}`), `[${i}]`);
      }
      if (!(data instanceof Uint8Array)) throw fault(new ProtocolError('data is not a Buffer'), `[${i}]`);
      if (byTag.has(tag)) throw fault(new ProtocolError(`tag ${tag} belongs to field ${byTag.get(tag)!.key}`), `[${i}]`);
      if (i > 0 && tag < (unknown[i - 1] as TaggedField).tag) sorted = false;
    }
    const fields = unknown as TaggedField[];
    return sorted ? fields : [...fields].sort((a, b) => a.tag - b.tag);
  }

  function writeTags(w: Writer, o: Struct): void {
    let present: TaggedCodec[] | undefined;
    for (const t of tagged) {
      const v = o[t.key];
      if (v !== undefined && !t.isDefault(v)) (present ??= []).push(t);
    }
    const unknownInput = o._unknownTags;
    if (unknownInput === undefined || (Array.isArray(unknownInput) && unknownInput.length === 0)) {
      if (present === undefined) {
        w.uvarint(0);
        return;
      }
      w.uvarint(present.length);
      for (const t of present) writeTagged(w, t, o[t.key]);
      return;
    }
    let unknown: TaggedField[];
    try {
      unknown = orderedUnknown(unknownInput);
    } catch (e) {
      throw fault(e, UNKNOWN_TAGS);
    }
    const known = present ?? [];
    w.uvarint(known.length + unknown.length);
    let k = 0;
    let u = 0;
    while (k < known.length || u < unknown.length) {
      if (u === unknown.length || (k < known.length && known[k]!.tag < unknown[u]!.tag)) {
        const t = known[k++]!;
        writeTagged(w, t, o[t.key]);
      } else {
        const f = unknown[u++]!;
        w.uvarint(f.tag);
        w.uvarint(f.data.length);
        w.raw(f.data);
      }
    }
  }

  return {
    read(r: Reader): Struct {
      const o: Struct = { ...template };
      let i = 0;
      try {
        for (; i < n; i++) o[keys[i]!] = reads[i]!(r);
      } catch (e) {
        throw fault(e, keys[i]!);
      }
      if (flexible) readTags(r, o);
      return o;
    },

    write(w: Writer, value: unknown): void {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        throw new ProtocolError(`expected an object, got ${value === null ? 'null' : typeof value}`);
      }
      const o = value as Struct;
      let i = 0;
      try {
        for (; i < n; i++) {
          const v = o[keys[i]!];
          writes[i]!(w, v === undefined ? shared[i] : v);
        }
      } catch (e) {
        throw fault(e, keys[i]!);
      }
      if (flexible) writeTags(w, o);
      else if (Array.isArray(o._unknownTags) && o._unknownTags.length > 0) {
        throw fault(new ProtocolError('tagged fields need a flexible version'), UNKNOWN_TAGS);
      }
    },

    fresh(): Struct {
      const o: Struct = { ...template };
      for (const f of all) o[f.key] = f.fresh();
      return o;
    },

    isDefault(o: Struct): boolean {
      const unknown = o._unknownTags;
      if (Array.isArray(unknown) && unknown.length > 0) return false;
      for (const f of all) {
        const v = o[f.key];
        if (v !== undefined && !f.isDefault(v)) return false;
      }
      return true;
    },
  };
}

/** Turns anything thrown while coding into a ProtocolError naming the context and field path. */
export function protocolError(context: string, e: unknown): ProtocolError {
  if (e instanceof FieldFault) {
    return new ProtocolError(`${context}: ${e.where}: ${e.detail}`, causeOf(e.cause));
  }
  if (e instanceof Error) return new ProtocolError(`${context}: ${e.message}`, causeOf(e));
  return new ProtocolError(`${context}: ${String(e)}`);
}

function causeOf(e: unknown): { cause: unknown } | undefined {
  return e instanceof ProtocolError ? undefined : { cause: e };
}
