// Holds the decoders' output against the generated types: src/protocol/generated/fields.ts
// describes every interface of types.ts (tsc checks that it does, through `satisfies`), and
// this test checks that every body the decoders return, at every version, fits that table.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type FieldInfo, type FieldKind, REQUEST_TYPES, RESPONSE_TYPES, TYPE_FIELDS } from '../../../src/protocol/generated/fields.js';
import { type ApiDef, APIS, type VersionRange } from '../../../src/protocol/generated/messages.js';
import { decodeRequest, decodeResponse, encodeRequest, encodeResponse } from '../../../src/protocol/messages.js';
import { sampleStruct, seededRng } from './sample-body.js';

const SAMPLES_PER_VERSION = 4;
const TABLE: Readonly<Record<string, Readonly<Record<string, FieldInfo>>>> = TYPE_FIELDS;

function inRange(version: number, range: VersionRange): boolean {
  return version >= range[0] && version <= range[1];
}

function checkKind(kind: FieldKind, value: unknown, version: number, flexible: boolean, struct: string | undefined, at: string): void {
  switch (kind) {
    case 'boolean':
    case 'number':
    case 'bigint':
    case 'string':
      assert.equal(typeof value, kind, `${at}: declared ${kind}, decoded ${typeof value}`);
      return;
    case 'bytes':
      assert.ok(Buffer.isBuffer(value), `${at}: declared Buffer, decoded ${typeof value}`);
      return;
    case 'struct':
      assert.ok(struct !== undefined, `${at}: a struct field without an interface`);
      checkStruct(struct, value, version, flexible, at);
      return;
    case 'array':
      assert.fail(`${at}: an array of arrays`);
  }
}

function checkField(info: FieldInfo, value: unknown, version: number, flexible: boolean, at: string): void {
  if (value === null) {
    assert.ok(info.nullable, `${at}: decoded null, but the type is not nullable`);
    return;
  }
  if (info.kind !== 'array') {
    checkKind(info.kind, value, version, flexible, info.struct, at);
    return;
  }
  assert.ok(Array.isArray(value), `${at}: declared an array, decoded ${typeof value}`);
  assert.ok(info.element !== undefined, `${at}: an array without an element kind`);
  value.forEach((e: unknown, i) => checkKind(info.element!, e, version, flexible, info.struct, `${at}[${i}]`));
}

/** Every key the decoder set is declared for this version, with a value of its declared type. */
function checkStruct(name: string, value: unknown, version: number, flexible: boolean, at: string): void {
  const fields = TABLE[name];
  assert.ok(fields !== undefined, `${at}: no interface ${name}`);
  assert.ok(typeof value === 'object' && value !== null && !Array.isArray(value), `${at}: ${name} decoded as ${typeof value}`);
  const body = value as Record<string, unknown>;
  for (const key of Object.keys(body)) {
    if (key === '_unknownTags') {
      assert.ok(flexible, `${at}: _unknownTags in a version that is not flexible`);
      continue;
    }
    const info = fields[key];
    assert.ok(info !== undefined, `${at}.${key}: decoded, but ${name} does not declare it`);
    assert.ok(inRange(version, info.versions), `${at}.${key}: decoded at v${version}, but ${name} declares versions ${info.versions.join('-')}`);
    checkField(info, body[key], version, flexible, `${at}.${key}`);
  }
  for (const [key, info] of Object.entries(fields)) {
    if (info.required) assert.ok(inRange(version, info.versions), `${at}.${key}: required in ${name}, but v${version} lacks it`);
    if (inRange(version, info.versions)) assert.ok(key in body, `${at}.${key}: a v${version} field the decoder did not set`);
  }
}

for (const maybeApi of APIS) {
  if (!maybeApi?.validVersions) continue;
  const api: ApiDef = maybeApi;
  const [min, max] = maybeApi.validVersions;
  for (const direction of ['request', 'response'] as const) {
    test(`${api.name} ${direction}: the decoded body fits the generated type at every version`, () => {
      const typeName = (direction === 'request' ? REQUEST_TYPES : RESPONSE_TYPES)[api.apiKey];
      assert.equal(typeName, `${api.name}${direction === 'request' ? 'Request' : 'Response'}`);
      for (let version = min; version <= max; version++) {
        const flexible = api.flexibleVersions !== null && version >= api.flexibleVersions[0];
        const bodies = [encodeBody(direction, api.apiKey, version, {})];
        for (let sample = 0; sample < SAMPLES_PER_VERSION; sample++) {
          const rnd = seededRng(api.apiKey * 7_919 + version * 31 + sample * 2 + (direction === 'request' ? 0 : 1));
          bodies.push(encodeBody(direction, api.apiKey, version, sampleStruct(api[direction], version, flexible, rnd)));
        }
        for (const [i, bytes] of bodies.entries()) {
          const decoded = direction === 'request' ? decodeRequest(api.apiKey, version, bytes) : decodeResponse(api.apiKey, version, bytes);
          checkStruct(typeName!, decoded, version, flexible, `${api.name} v${version} ${direction} (${i === 0 ? 'defaults' : `sample ${i}`})`);
        }
      }
    });
  }
}

function encodeBody(direction: 'request' | 'response', apiKey: number, version: number, body: object): Buffer {
  return direction === 'request' ? encodeRequest(apiKey, version, body) : encodeResponse(apiKey, version, body);
}

test('the table describes every interface the top-level types reach', () => {
  const reached = new Set<string>();
  const visit = (name: string): void => {
    if (reached.has(name)) return;
    reached.add(name);
    for (const info of Object.values(TABLE[name]!)) if (info.struct !== undefined) visit(info.struct);
  };
  for (const apiKey of Object.keys(REQUEST_TYPES).map(Number)) {
    visit(REQUEST_TYPES[apiKey]!);
    visit(RESPONSE_TYPES[apiKey]!);
  }
  assert.deepEqual([...reached].sort(), Object.keys(TABLE).sort());
});
