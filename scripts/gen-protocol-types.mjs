// The TypeScript half of gen-protocol.mjs: from the resolved definitions it renders
// src/protocol/generated/types.ts (an interface per request, response and nested struct, typed
// as src/protocol/wire/struct-codec.ts reads each field) and src/protocol/generated/fields.ts
// (the same fields as a runtime table, checked against the interfaces by tsc, so a test can
// hold the decoder's output against the types). Deterministic, like the rest of the generator.

const OPEN_END = 0x7fff;

const SCALARS = {
  bool: 'boolean',
  int8: 'number',
  int16: 'number',
  uint16: 'number',
  int32: 'number',
  uint32: 'number',
  float64: 'number',
  int64: 'bigint',
  uuid: 'string',
  string: 'string',
  bytes: 'Buffer',
  records: 'Buffer',
};

/** The runtime kind fields.ts records, as `typeof`-like names (Buffer is "bytes"). */
const KINDS = {
  boolean: 'boolean',
  number: 'number',
  bigint: 'bigint',
  string: 'string',
  Buffer: 'bytes',
};

function camelCase(name) {
  return name.charAt(0).toLowerCase() + name.slice(1);
}

function intersect(a, b) {
  if (!a || !b) return null;
  const lo = Math.max(a[0], b[0]);
  const hi = Math.min(a[1], b[1]);
  return lo <= hi ? [lo, hi] : null;
}

function covers(outer, inner) {
  return outer[0] <= inner[0] && outer[1] >= inner[1];
}

function showRange(r) {
  if (r[1] === OPEN_END) return `${r[0]}+`;
  return r[0] === r[1] ? `${r[0]}` : `${r[0]}-${r[1]}`;
}

function showDefault(value) {
  return typeof value === 'bigint' ? `${value}` : JSON.stringify(value);
}

/** Text safe inside a JSDoc block. */
function docText(text) {
  return text.replace(/\*\//g, '*\\/').replace(/\s+/g, ' ').trim();
}

function elementType(field) {
  return field.type.startsWith('[]') ? field.type.slice(2) : field.type;
}

/** Drops the API name and Request/Response from a struct name: FetchTopic in Fetch is Topic. */
function shortName(api, structName) {
  let s = structName;
  for (const prefix of [api, 'Request', 'Response']) {
    if (s.startsWith(prefix) && /^[A-Z]/.test(s.slice(prefix.length))) s = s.slice(prefix.length);
  }
  return s;
}

/**
 * Walks one message (request or response) and collects its interfaces. `context` is the range
 * of versions in which a struct occurs (the API's valid versions narrowed by every enclosing
 * field); a field is required when it is present throughout its struct's context.
 */
function collectMessage(api, direction, fields, names) {
  const dir = direction === 'request' ? 'Request' : 'Response';
  const top = `${api.name}${dir}`;
  const out = [];
  const bySignature = new Map();
  const taken = new Map();
  const flexible = api.flexibleVersions;

  function nameFor(structName) {
    const short = shortName(api.name, structName);
    let name = `${top}${short}`;
    if (taken.has(name) && taken.get(name) !== structName) name = `${top}${structName}`;
    if (taken.has(name) && taken.get(name) !== structName) throw new Error(`${top}: cannot name struct ${structName}`);
    taken.set(name, structName);
    return name;
  }

  function visit(structFields, context, name, doc) {
    const members = structFields.map((f) => member(f, context));
    const signature = JSON.stringify(members.map((m) => [m.key, m.type, m.optional, m.info]));
    const known = bySignature.get(`${name}\0${signature}`);
    if (known) return known;
    let unique = name;
    for (let i = 2; out.some((s) => s.name === unique); i++) unique = `${name}${i}`;
    if (names.has(unique)) throw new Error(`${unique}: generated twice`);
    names.add(unique);
    bySignature.set(`${name}\0${signature}`, unique);
    out.push({ name: unique, doc, members, context, flexible: intersect(flexible, context) !== null });
    return unique;
  }

  function member(f, context) {
    const present = intersect(f.versions, context);
    const nullableIn = intersect(f.nullableVersions, present);
    const taggedIn = intersect(intersect(f.taggedVersions, flexible), present);
    const array = f.type.startsWith('[]');
    const element = elementType(f);
    let base;
    let struct;
    if (f.fields) {
      const inner = present ?? f.versions;
      struct = visit(f.fields, inner, nameFor(element), `${element}: ${array ? 'an element of ' : ''}${top}'s ${f.name} (versions ${showRange(inner)}).`);
      base = struct;
    } else {
      base = SCALARS[element];
      if (!base) throw new Error(`${top}.${f.name}: no TypeScript type for ${element}`);
    }
    // A tagged field the wire leaves out decodes as its default, which may be null.
    const nullable = nullableIn !== null || (taggedIn !== null && f.default === null);
    const type = `${array ? `${base}[]` : base}${nullable ? ' | null' : ''}`;
    const optional = present === null || !covers(present, context);
    const notes = [`Versions ${showRange(f.versions)}.`];
    if (f.nullableVersions) notes.push(`Nullable in versions ${showRange(f.nullableVersions)}.`);
    if (f.taggedVersions) notes.push(`Tagged (tag ${f.tag}) in versions ${showRange(f.taggedVersions)}.`);
    if (f.default !== undefined) notes.push(`Default ${showDefault(f.default)}.`);
    if (present === null) notes.push('Never present in a valid version.');
    const info = {
      versions: f.versions,
      required: !optional,
      nullable,
      kind: array ? 'array' : struct ? 'struct' : KINDS[base],
    };
    if (array) info.element = struct ? 'struct' : KINDS[base];
    if (struct) info.struct = struct;
    return { key: camelCase(f.name), type, optional, about: f.about, notes, info };
  }

  const valid = api.validVersions;
  const versionsDoc = valid ? `versions ${showRange(valid)}${flexible ? `, flexible ${showRange(flexible)}` : ''}` : 'no valid versions';
  visit(fields, valid ?? [0, -1], top, `${api.name} ${direction} (api key ${api.apiKey}), ${versionsDoc}.`);
  // Top-level first, then nested structs in the order they were met.
  return [out[out.length - 1], ...out.slice(0, -1)];
}

function collect(apis) {
  const names = new Set();
  return apis.map((api) => ({
    api,
    request: collectMessage(api, 'request', api.request, names),
    response: collectMessage(api, 'response', api.response, names),
  }));
}

function renderInterface(s) {
  const lines = [`/** ${docText(s.doc)} */`, `export interface ${s.name} {`];
  for (const m of s.members) {
    const doc = [];
    if (m.about) doc.push(docText(m.about));
    doc.push(m.notes.join(' '));
    lines.push('  /**', ...doc.map((d) => `   * ${d}`), '   */');
    lines.push(`  ${m.key}${m.optional ? '?' : ''}: ${m.type};`);
  }
  if (s.flexible) {
    lines.push('  /** Tagged fields the definitions do not know, as read (flexible versions only). */');
    lines.push('  _unknownTags?: TaggedField[];');
  }
  lines.push('}');
  return lines.join('\n');
}

const HEADER = `// GENERATED FILE - DO NOT EDIT BY HAND. Regenerate with \`npm run gen:protocol\`.
// Generated by scripts/gen-protocol.mjs (scripts/gen-protocol-types.mjs) from Apache Kafka's
// message definitions (clients/src/main/resources/common/message/*.json), Copyright The Apache
// Software Foundation, licensed under the Apache License, Version 2.0, extended by the versions
// in scripts/protocol-amendments.mjs.`;

export function renderTypes(apis) {
  const collected = collect(apis);
  const parts = [
    `${HEADER}
//
// One interface per request, response and nested struct, with every field of every version
// (as franz-go's kmsg does), typed as src/protocol/wire/struct-codec.ts decodes it:
//   bool -> boolean; int8, int16, uint16, int32, uint32, float64 -> number; int64 -> bigint;
//   uuid -> string (base64url, as Reader.uuid returns it); string -> string; bytes, records ->
//   Buffer (a view into the decoded frame); [] -> an array; a struct -> its interface.
//   "| null" where some version of the field is nullable, or where a tagged field whose
//   default is null decodes as that default when the wire leaves it out.
// Required and optional fields: the decoder sets exactly the fields present in the version it
// decodes (a tagged field it does not find takes its default) and leaves every other key out;
// it fills in no defaults for fields of other versions. So a field present in every version in
// which its struct occurs is required, and a field only some versions carry is optional.
// Narrow on the version before relying on an optional one. Encoders take the same shapes with
// every field optional (src/protocol/messages.ts, BodyInit): a missing field is written as
// its default, and fields the version lacks are ignored.

import type { API_KEY } from './messages.js';
import type { TaggedField } from '../wire/tagged-field.js';`,
  ];
  for (const { request, response } of collected) {
    for (const s of [...request, ...response]) parts.push(renderInterface(s));
  }
  const map = (dir) => collected.map(({ api }) => `  ${api.apiKey}: ${api.name}${dir};`).join('\n');
  parts.push(`/** Request bodies by api key. */
export interface RequestBodies {
${map('Request')}
}`);
  parts.push(`/** Response bodies by api key. */
export interface ResponseBodies {
${map('Response')}
}`);
  parts.push(`/** An api key of an API in the definitions, as a number literal type. */
export type ApiKeyNumber = keyof RequestBodies & keyof ResponseBodies;

/** The api key of an API by name: ApiKeyOf<'Fetch'> is 1. */
export type ApiKeyOf<N extends keyof typeof API_KEY> = (typeof API_KEY)[N];

/** A request body by API name: RequestOf<'Fetch'> is FetchRequest. */
export type RequestOf<N extends keyof typeof API_KEY> = RequestBodies[ApiKeyOf<N>];

/** A response body by API name: ResponseOf<'Fetch'> is FetchResponse. */
export type ResponseOf<N extends keyof typeof API_KEY> = ResponseBodies[ApiKeyOf<N>];`);
  return `${parts.join('\n\n')}\n`;
}

function literal(value) {
  if (Array.isArray(value)) return `[${value.map(literal).join(', ')}]`;
  return JSON.stringify(value);
}

export function renderFieldTable(apis) {
  const collected = collect(apis);
  const entries = [];
  for (const { request, response } of collected) {
    for (const s of [...request, ...response]) {
      const fields = s.members.map((m) => {
        const parts = Object.entries(m.info).map(([k, v]) => `${k}: ${literal(v)}`);
        return `    ${m.key}: { ${parts.join(', ')} },`;
      });
      const body = fields.length === 0 ? '{}' : `{\n${fields.join('\n')}\n  }`;
      entries.push(`  ${s.name}: ${body} satisfies FieldsOf<T.${s.name}>,`);
    }
  }
  const top = (dir) => collected.map(({ api }) => `  ${api.apiKey}: ${JSON.stringify(`${api.name}${dir}`)},`).join('\n');
  return `${HEADER}
//
// The fields of every interface in types.ts as data: a test decodes bodies of every version and
// checks each key and value against this table. \`satisfies FieldsOf<...>\` makes tsc check the
// table against the interfaces: the same keys, required and nullable where they are, and the
// same kind of value.

import type { VersionRange } from './messages.js';
import type * as T from './types.js';

export type FieldKind = 'boolean' | 'number' | 'bigint' | 'string' | 'bytes' | 'array' | 'struct';

export interface FieldInfo {
  /** The versions that carry the field, as in the definitions. */
  readonly versions: VersionRange;
  /** Declared without \`?\`: every decoded struct has it. */
  readonly required: boolean;
  /** Its type admits null. */
  readonly nullable: boolean;
  readonly kind: FieldKind;
  /** The kind of an array's elements. */
  readonly element?: FieldKind;
  /** The interface of a struct, or of an array's elements, in TYPE_FIELDS. */
  readonly struct?: string;
}

type KindOf<V> = [V] extends [boolean]
  ? 'boolean'
  : [V] extends [number]
    ? 'number'
    : [V] extends [bigint]
      ? 'bigint'
      : [V] extends [string]
        ? 'string'
        : [V] extends [Buffer]
          ? 'bytes'
          : [V] extends [readonly unknown[]]
            ? 'array'
            : 'struct';

type ElementKindOf<V> = [V] extends [readonly (infer E)[]] ? KindOf<E> : never;

/** What the table must say about each field of T. */
export type FieldsOf<T> = {
  readonly [K in Exclude<keyof T, '_unknownTags'>]-?: FieldInfo & {
    readonly required: {} extends Pick<T, K> ? false : true;
    readonly nullable: null extends T[K] ? true : false;
    readonly kind: KindOf<NonNullable<T[K]>>;
    readonly element?: ElementKindOf<NonNullable<T[K]>>;
  };
};

/** Fields by interface name. */
export const TYPE_FIELDS = {
${entries.join('\n')}
};

/** The interface of each API's request, by api key. */
export const REQUEST_TYPES: { readonly [apiKey: number]: keyof typeof TYPE_FIELDS } = {
${top('Request')}
};

/** The interface of each API's response, by api key. */
export const RESPONSE_TYPES: { readonly [apiKey: number]: keyof typeof TYPE_FIELDS } = {
${top('Response')}
};
`;
}
