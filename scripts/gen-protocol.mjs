#!/usr/bin/env node
// Generates src/protocol/generated/messages.ts (schema data, not code) from Apache Kafka's
// JSON message definitions, and next to it types.ts and fields.ts (gen-protocol-types.mjs).
// The definitions are those of the pinned kafka-clients jar (kafka-definitions.mjs), or of a
// directory of them given with --from.
// Usage: node scripts/gen-protocol.mjs [--from messagesDir] [outFile]
// The output depends only on the definitions, so running it twice gives identical bytes.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { renderFieldTable, renderTypes } from './gen-protocol-types.mjs';
import { kafkaDefinitions } from './kafka-definitions.mjs';
import { AMENDMENTS } from './protocol-amendments.mjs';

const projectRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: flags, positionals } = parseArgs({ options: { from: { type: 'string' } }, allowPositionals: true });
const outFile = positionals[0] ? resolve(positionals[0]) : resolve(projectRoot, 'src/protocol/generated/messages.ts');

const OPEN_END = 0x7fff;
const PRIMITIVES = new Set(['bool', 'int8', 'int16', 'uint16', 'int32', 'uint32', 'int64', 'float64', 'string', 'uuid', 'bytes', 'records']);
// Keys that only matter to Kafka's Java generator or documentation.
const IGNORED_FIELD_KEYS = new Set(['about', 'entityType', 'mapKey', 'ignorable', 'zeroCopy']);
const WIRE_FIELD_KEYS = new Set(['name', 'type', 'versions', 'nullableVersions', 'taggedVersions', 'tag', 'default', 'fields']);

/** Removes `//` comments outside string literals (the definitions are JSON plus comments). */
function stripComments(text) {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      out += c;
      if (c === '\\') out += text[++i] ?? '';
      else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
      out += c;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
      out += '\n';
    } else {
      out += c;
    }
  }
  return out;
}

function parseVersions(spec, where) {
  if (spec === undefined || spec === 'none') return null;
  let m = /^(\d+)\+$/.exec(spec);
  if (m) return [Number(m[1]), OPEN_END];
  m = /^(\d+)-(\d+)$/.exec(spec);
  if (m) return [Number(m[1]), Number(m[2])];
  m = /^(\d+)$/.exec(spec);
  if (m) return [Number(m[1]), Number(m[1])];
  throw new Error(`${where}: bad version spec ${JSON.stringify(spec)}`);
}

function parseInteger(text, where) {
  const m = /^(-?)(0x[0-9a-f]+|0[0-7]+|\d+)$/i.exec(text);
  if (!m) throw new Error(`${where}: bad integer default ${JSON.stringify(text)}`);
  const digits = m[2];
  const sign = m[1] === '-' ? -1n : 1n;
  if (/^0x/i.test(digits)) return sign * BigInt(digits);
  if (digits.length > 1 && digits.startsWith('0')) return sign * BigInt(`0o${digits.slice(1)}`);
  return sign * BigInt(digits);
}

function normalizeDefault(field, where) {
  const raw = field.default;
  const text = typeof raw === 'string' ? raw : String(raw);
  const type = field.type;
  if (type.startsWith('[]') || !PRIMITIVES.has(type) || type === 'bytes' || type === 'records') {
    if (text !== 'null') throw new Error(`${where}: unsupported default ${text} for ${type}`);
    return null;
  }
  switch (type) {
    case 'bool':
      if (text !== 'true' && text !== 'false') throw new Error(`${where}: bad bool default ${text}`);
      return text === 'true';
    case 'int64':
      return parseInteger(text, where);
    case 'float64':
      return Number(text);
    case 'string':
      return text === 'null' ? null : text;
    case 'uuid':
      return text;
    default:
      return Number(parseInteger(text, where));
  }
}

/** File name to text: the directory's definitions. */
function definitionsIn(dir) {
  return new Map(readdirSync(dir).map((f) => [f, readFileSync(join(dir, f), 'utf8')]));
}

function loadDefinitions(files) {
  const apis = new Map();
  for (const file of [...files.keys()].filter((f) => /(Request|Response)\.json$/.test(f)).sort()) {
    const def = JSON.parse(stripComments(files.get(file)));
    if (def.type !== 'request' && def.type !== 'response') continue;
    const name = def.name.replace(/(Request|Response)$/, '');
    const entry = apis.get(def.apiKey) ?? { apiKey: def.apiKey, name };
    if (entry.name !== name) throw new Error(`${file}: api key ${def.apiKey} is also ${entry.name}`);
    if (entry[def.type]) throw new Error(`${file}: duplicate ${def.type} for api key ${def.apiKey}`);
    entry[def.type] = { file, def };
    apis.set(def.apiKey, entry);
  }
  for (const amendment of AMENDMENTS)
    amend(
      [...apis.values()].find((e) => e.name === amendment.api),
      amendment,
    );
  return [...apis.values()].sort((a, b) => a.apiKey - b.apiKey);
}

/** Extends an API's definitions by a version they do not have yet (see protocol-amendments.mjs). */
function amend(entry, amendment) {
  if (!entry?.request || !entry.response) throw new Error(`amendment for unknown API ${amendment.api}`);
  for (const dir of ['request', 'response']) {
    const { file, def } = entry[dir];
    const valid = parseVersions(def.validVersions, file);
    if (valid[1] >= amendment.version) continue;
    if (valid[1] !== amendment.version - 1) throw new Error(`${file}: amendment to v${amendment.version} skips versions after v${valid[1]}`);
    def.validVersions = `${valid[0]}-${amendment.version}`;
    def.fields = [...(def.fields ?? []), ...amendment[dir]];
  }
}

function resolveFields(fields, commonStructs, where, seen) {
  return (fields ?? []).map((field) => {
    const at = `${where}.${field.name}`;
    for (const key of Object.keys(field)) {
      if (!WIRE_FIELD_KEYS.has(key) && !IGNORED_FIELD_KEYS.has(key)) {
        throw new Error(`${at}: unsupported field attribute ${key}`);
      }
    }
    const out = { name: field.name, type: field.type, versions: parseVersions(field.versions, at) };
    if (out.versions === null) throw new Error(`${at}: field without versions`);
    const nullable = parseVersions(field.nullableVersions, at);
    if (nullable) out.nullableVersions = nullable;
    const tagged = parseVersions(field.taggedVersions, at);
    if (tagged) {
      if (typeof field.tag !== 'number') throw new Error(`${at}: taggedVersions without tag`);
      if (field.type === 'records') throw new Error(`${at}: records cannot be tagged`);
      out.taggedVersions = tagged;
      out.tag = field.tag;
    } else if (field.tag !== undefined) {
      throw new Error(`${at}: tag without taggedVersions`);
    }
    if (field.default !== undefined) out.default = normalizeDefault(field, at);
    // Only for the doc comments in types.ts; emitFields leaves it out of the schema data.
    if (typeof field.about === 'string') out.about = field.about;
    const element = field.type.startsWith('[]') ? field.type.slice(2) : field.type;
    if (element.startsWith('[]')) throw new Error(`${at}: nested arrays are not supported`);
    if (!PRIMITIVES.has(element)) {
      if (element === 'records' && field.type.startsWith('[]')) throw new Error(`${at}: array of records`);
      let structFields = field.fields;
      if (!structFields) {
        const common = commonStructs.get(element);
        if (!common) throw new Error(`${at}: unknown struct type ${element}`);
        if (seen.has(element)) throw new Error(`${at}: recursive struct ${element}`);
        structFields = common.fields;
        out.fields = resolveFields(structFields, commonStructs, at, new Set([...seen, element]));
      } else {
        out.fields = resolveFields(structFields, commonStructs, at, seen);
      }
    } else if (field.fields) {
      throw new Error(`${at}: primitive type ${field.type} with nested fields`);
    }
    return out;
  });
}

function sameRange(a, b) {
  return (a === null && b === null) || (a !== null && b !== null && a[0] === b[0] && a[1] === b[1]);
}

function buildApi(entry) {
  if (!entry.request || !entry.response) throw new Error(`${entry.name}: request or response missing`);
  const ranges = ['request', 'response'].map((dir) => {
    const { file, def } = entry[dir];
    return {
      valid: parseVersions(def.validVersions, file),
      flexible: parseVersions(def.flexibleVersions, file),
    };
  });
  if (!sameRange(ranges[0].valid, ranges[1].valid) || !sameRange(ranges[0].flexible, ranges[1].flexible)) {
    throw new Error(`${entry.name}: request and response disagree on valid or flexible versions`);
  }
  const fieldsOf = (dir) => {
    const { file, def } = entry[dir];
    const common = new Map((def.commonStructs ?? []).map((s) => [s.name, s]));
    return resolveFields(def.fields, common, file.replace(/\.json$/, ''), new Set());
  };
  return {
    apiKey: entry.apiKey,
    name: entry.name,
    validVersions: ranges[0].valid,
    flexibleVersions: ranges[0].flexible,
    request: fieldsOf('request'),
    response: fieldsOf('response'),
  };
}

function literal(value) {
  if (typeof value === 'bigint') return `${value}n`;
  if (Array.isArray(value)) return `[${value.map(literal).join(', ')}]`;
  return JSON.stringify(value);
}

function emitFields(fields, indent) {
  if (fields.length === 0) return '[]';
  const pad = ' '.repeat(indent);
  const lines = fields.map((f) => {
    const parts = Object.entries(f)
      .filter(([key]) => key !== 'fields' && key !== 'about')
      .map(([key, value]) => `${key}: ${literal(value)}`);
    if (f.fields) parts.push(`fields: ${emitFields(f.fields, indent + 2)}`);
    return `${pad}{ ${parts.join(', ')} },`;
  });
  return `[\n${lines.join('\n')}\n${' '.repeat(indent - 2)}]`;
}

function emitApi(api) {
  return [
    '  {',
    `    apiKey: ${api.apiKey},`,
    `    name: ${JSON.stringify(api.name)},`,
    `    validVersions: ${literal(api.validVersions)},`,
    `    flexibleVersions: ${literal(api.flexibleVersions)},`,
    `    request: ${emitFields(api.request, 6)},`,
    `    response: ${emitFields(api.response, 6)},`,
    '  },',
  ].join('\n');
}

function render(apis) {
  const slots = [];
  for (const api of apis) {
    while (slots.length < api.apiKey) slots.push('  undefined,');
    slots.push(emitApi(api));
  }
  return `// GENERATED FILE - DO NOT EDIT BY HAND. Regenerate with \`npm run gen:protocol\`.
// Generated by scripts/gen-protocol.mjs from Apache Kafka's message definitions
// (clients/src/main/resources/common/message/*.json), Copyright The Apache Software
// Foundation, licensed under the Apache License, Version 2.0, extended by the versions in
// scripts/protocol-amendments.mjs.

/** Inclusive version range; a maximum of ${OPEN_END} stands for an open-ended "N+". */
export type VersionRange = readonly [min: number, max: number];

export type FieldDefault = number | bigint | boolean | string | null;

export interface FieldDef {
  /** Kafka's field name (PascalCase). */
  readonly name: string;
  /** A primitive, "[]" + element, or a struct type name (then \`fields\` is set). */
  readonly type: string;
  readonly versions: VersionRange;
  readonly nullableVersions?: VersionRange;
  readonly taggedVersions?: VersionRange;
  readonly tag?: number;
  readonly default?: FieldDefault;
  /** Struct members, common structs already resolved. */
  readonly fields?: readonly FieldDef[];
}

export interface ApiDef {
  readonly apiKey: number;
  /** The message name without the Request/Response suffix. */
  readonly name: string;
  /** null when every version was removed. */
  readonly validVersions: VersionRange | null;
  readonly flexibleVersions: VersionRange | null;
  readonly request: readonly FieldDef[];
  readonly response: readonly FieldDef[];
}

export const API_KEY = {
${apis.map((a) => `  ${a.name}: ${a.apiKey},`).join('\n')}
} as const;

/** Indexed by api key. */
export const APIS: readonly (ApiDef | undefined)[] = [
${slots.join('\n')}
];
`;
}

const apis = loadDefinitions(flags.from ? definitionsIn(resolve(flags.from)) : await kafkaDefinitions()).map(buildApi);
writeFileSync(outFile, render(apis));
writeFileSync(join(dirname(outFile), 'types.ts'), renderTypes(apis));
writeFileSync(join(dirname(outFile), 'fields.ts'), renderFieldTable(apis));
