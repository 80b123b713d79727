/**
 * Which requests each management listener serves: the gates of admin-access.ts on a real HTTP
 * server, with the refusal log's clock in the test's hands.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { reloadWatchedFiles } from '../../../src/common/watched-files.js';
import { adminGate, adminRoutesElsewhere } from '../../../src/ops/admin-access.js';
import { BearerToken } from '../../../src/ops/bearer-token.js';
import { createLogger, setLogSink } from '../../../src/common/log.js';
import { startManagementServer, type Gate, type ListenerName, type RefusalReason, type Route } from '../../../src/ops/management-server.js';
import { makeTempDir } from '../../support/processes.js';

const TOKEN = 'Zmlyc3QtYWRtaW4tdG9rZW4tZm9yLXRlc3Rz';
const ADMIN_PATHS = new Set(['/status', '/compact']);

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Record<string, unknown>;
}

/** node:http, so the test sets Host and Origin as it likes (fetch would not). */
function ask(port: number, method: string, route: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path: route, headers: { host: `127.0.0.1:${port}`, ...headers } }, (res) => {
      let text = '';
      res.on('data', (d: Buffer) => (text += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: JSON.parse(text) as Record<string, unknown> }));
    });
    req.on('error', reject);
    req.end();
  });
}

interface Bed {
  port: number;
  /** Route runs, by route: a refused request must not show up here. */
  ran: string[];
  refused: RefusalReason[];
  warns: Record<string, unknown>[];
  advance(ms: number): void;
  close(): Promise<void>;
}

async function serve(listener: ListenerName, gate: Gate, routes: string[]): Promise<Bed> {
  const ran: string[] = [];
  const refused: RefusalReason[] = [];
  const warns: Record<string, unknown>[] = [];
  let now = 1_000_000;
  const previous = setLogSink((line) => {
    const l = JSON.parse(line) as Record<string, unknown>;
    if (l.level === 'warn') warns.push(l);
  });
  const map = new Map<string, Route>(routes.map((key) => [key, async () => (ran.push(key), { ok: true })]));
  const server = await startManagementServer({ host: '127.0.0.1', port: 0 }, map, createLogger(), {
    listener,
    gate,
    onRefused: (r) => refused.push(r),
    now: () => now,
  });
  return {
    port: server.address.port,
    ran,
    refused,
    warns,
    advance: (ms) => (now += ms),
    close: async () => {
      await server.close();
      setLogSink(previous);
    },
  };
}

test('the metrics listener answers its own routes and 404 for every admin path, by any method, running nothing', async () => {
  const bed = await serve('metrics', adminRoutesElsewhere(ADMIN_PATHS), ['GET /metrics', 'GET /livez']);
  try {
    assert.equal((await ask(bed.port, 'GET', '/metrics')).status, 200);
    assert.equal((await ask(bed.port, 'GET', '/livez')).status, 200);
    for (const [method, route] of [
      ['GET', '/status'],
      ['POST', '/compact'],
      ['POST', '/compact?topic=t'],
      ['GET', '/compact'],
    ] as const) {
      const a = await ask(bed.port, method, route);
      assert.equal(a.status, 404, `${method} ${route}`);
      assert.equal(a.body.listener, 'metrics', 'the answer says which listener this is (the CLI names it)');
      assert.match(String(a.body.error), /the admin routes are served on the admin listener \(adminListen\)/);
    }
    assert.deepEqual(bed.ran, ['GET /metrics', 'GET /livez']);
    assert.deepEqual(bed.refused, ['admin-route', 'admin-route', 'admin-route', 'admin-route']);
    // An unknown path is a plain 404, neither counted nor logged.
    assert.equal((await ask(bed.port, 'GET', '/nothing')).status, 404);
    assert.equal(bed.refused.length, 4);
  } finally {
    await bed.close();
  }
});

test('refusals are logged once per source and minute, the next line saying how many were held back', async () => {
  const bed = await serve('metrics', adminRoutesElsewhere(ADMIN_PATHS), ['GET /metrics']);
  try {
    for (let i = 0; i < 5; i++) await ask(bed.port, 'POST', '/compact');
    assert.equal(bed.warns.length, 1);
    assert.deepEqual(
      [bed.warns[0]!.msg, bed.warns[0]!.listener, bed.warns[0]!.source, bed.warns[0]!.route, bed.warns[0]!.status, bed.warns[0]!.reason],
      ['refused a management request', 'metrics', '127.0.0.1', 'POST /compact', 404, 'admin-route'],
    );
    bed.advance(59_000);
    await ask(bed.port, 'GET', '/status');
    assert.equal(bed.warns.length, 1, 'still within the minute');
    bed.advance(1_000);
    await ask(bed.port, 'GET', '/status');
    assert.equal(bed.warns.length, 2);
    assert.equal(bed.warns[1]!.alikeHeldBack, 5);
    assert.equal(bed.refused.length, 7, 'every refusal is counted');
  } finally {
    await bed.close();
  }
});

test('without a token the admin listener serves loopback tools, not web pages', async () => {
  const bed = await serve('admin', adminGate(undefined), ['GET /status']);
  try {
    assert.equal((await ask(bed.port, 'GET', '/status')).status, 200);
    assert.equal((await ask(bed.port, 'GET', '/status', { host: 'localhost:9645' })).status, 200);
    assert.equal((await ask(bed.port, 'GET', '/status', { host: '[::1]:9645' })).status, 200);
    const refused: Record<string, string>[] = [
      { origin: 'https://evil.example' },
      { origin: 'null' },
      { 'sec-fetch-site': 'cross-site' },
      // DNS rebinding: a page from a name that resolves to 127.0.0.1 names that host.
      { host: 'evil.example:9645' },
      { host: 'evil.example' },
    ];
    for (const headers of refused) {
      const a = await ask(bed.port, 'GET', '/status', headers);
      assert.equal(a.status, 403, JSON.stringify(headers));
    }
    assert.deepEqual(bed.ran, ['GET /status', 'GET /status', 'GET /status']);
    assert.deepEqual(new Set(bed.refused), new Set(['browser']));
  } finally {
    await bed.close();
  }
});

test('with a token: missing and wrong get 401 with a Bearer challenge, the right one is served, a rotated file is in force at once', async () => {
  const temp = makeTempDir('kcompact-admin-access-');
  const file = path.join(temp.path, 'token');
  fs.writeFileSync(file, `${TOKEN}\n`);
  const token = new BearerToken(file, createLogger());
  const bed = await serve('admin', adminGate(token), ['GET /status', 'POST /compact']);
  try {
    const missing = await ask(bed.port, 'POST', '/compact');
    assert.equal(missing.status, 401);
    assert.equal(missing.headers['www-authenticate'], 'Bearer realm="kcompact-admin"');
    assert.match(String(missing.body.error), /requires a bearer token/);
    const wrong = await ask(bed.port, 'POST', '/compact', { authorization: 'Bearer bm90LXRoZS1yaWdodC10b2tlbg==' });
    assert.equal(wrong.status, 401);
    assert.equal(wrong.headers['www-authenticate'], 'Bearer realm="kcompact-admin", error="invalid_token"');
    assert.equal((await ask(bed.port, 'GET', '/status', { authorization: `Basic ${TOKEN}` })).status, 401);
    // Unknown routes are not told apart from known ones without the token.
    assert.equal((await ask(bed.port, 'GET', '/nothing')).status, 401);
    assert.deepEqual(bed.ran, [], 'nothing a refused request asked for ran');
    // Any Host is fine with a token (the listener may be reached by a Service name); web pages are still refused.
    assert.equal((await ask(bed.port, 'POST', '/compact', { authorization: `Bearer ${TOKEN}`, host: 'kcompact-admin.apps.svc:9645' })).status, 200);
    assert.equal((await ask(bed.port, 'POST', '/compact', { authorization: `Bearer ${TOKEN}`, origin: 'https://evil.example' })).status, 403);
    assert.deepEqual(bed.ran, ['POST /compact']);

    const rotated = 'c2Vjb25kLWFkbWluLXRva2VuLWFmdGVyLXJvdGF0aW9u';
    fs.writeFileSync(file, rotated);
    reloadWatchedFiles();
    assert.equal((await ask(bed.port, 'GET', '/status', { authorization: `Bearer ${TOKEN}` })).status, 401, 'the old token is refused after rotation');
    assert.equal((await ask(bed.port, 'GET', '/status', { authorization: `Bearer ${rotated}` })).status, 200);
    assert.deepEqual(bed.refused, ['no-token', 'wrong-token', 'no-token', 'no-token', 'browser', 'wrong-token']);
  } finally {
    await bed.close();
    token.close();
    temp.remove();
  }
});
