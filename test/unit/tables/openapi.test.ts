/**
 * docs/tables.openapi.yaml describes the API the server serves: valid YAML of OpenAPI 3, every
 * route the server takes and no other, each with the query parameters the server accepts, and
 * every $ref resolving.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { parseTableRequest, QUERY_PARAMETERS, SERVED_ROUTES } from '../../../src/tables/table-request.js';

const file = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../docs/tables.openapi.yaml');

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Doc = any;

const spec = (): Doc => parse(fs.readFileSync(file, 'utf8')) as Doc;

function resolve(doc: Doc, node: Doc): Doc {
  if (node && typeof node === 'object' && typeof node.$ref === 'string') {
    const ref = node.$ref as string;
    assert.ok(ref.startsWith('#/'), `local $ref ${ref}`);
    const target = ref
      .slice(2)
      .split('/')
      .reduce((n: Doc, part: string) => n?.[part], doc);
    assert.ok(target !== undefined, `$ref ${ref} resolves`);
    return target;
  }
  return node;
}

test('the OpenAPI description parses and is OpenAPI 3', () => {
  const doc = spec();
  assert.match(String(doc.openapi), /^3\.\d+\.\d+$/);
  assert.equal(typeof doc.info.title, 'string');
  const walk = (node: Doc) => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      resolve(doc, node);
      Object.values(node).forEach(walk);
    }
  };
  walk(doc);
});

test('every route the server serves is described, and nothing else', () => {
  const doc = spec();
  const described = Object.entries(doc.paths as Record<string, Doc>).flatMap(([p, item]) =>
    ['get', 'put', 'post', 'delete', 'patch', 'head'].filter((m) => item[m]).map((m) => `${m.toUpperCase()} ${p}`),
  );
  assert.deepEqual(described.sort(), SERVED_ROUTES.map((r) => `${r.method} ${r.path}`).sort());
  for (const r of SERVED_ROUTES) {
    const url = r.path.replace('{topic}', 't').replace('{key}', 'k');
    assert.equal(parseTableRequest(r.method, url, {}).route, r.route, `${r.method} ${r.path} is served as ${r.route}`);
  }
});

test("each operation's query parameters are the ones the server takes", () => {
  const doc = spec();
  for (const r of SERVED_ROUTES) {
    const item = doc.paths[r.path];
    const op = item[r.method.toLowerCase()];
    const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p: Doc) => resolve(doc, p));
    const query = params.filter((p: Doc) => p.in === 'query').map((p: Doc) => p.name as string);
    assert.deepEqual(query.sort(), [...QUERY_PARAMETERS[r.route]].sort(), `${r.method} ${r.path}`);
    for (const p of params.filter((x: Doc) => x.in === 'path')) assert.ok(r.path.includes(`{${p.name}}`), `${r.path} has {${p.name}}`);
  }
});
