import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger, setLogSink } from '../../../src/common/log.js';
import { Reply, startManagementServer, type Route } from '../../../src/ops/management-server.js';

test('routes answer JSON by default, a Reply as given, 404 and 500 with a message', async () => {
  const routes = new Map<string, Route>([
    ['GET /json', async () => ({ n: 1n, ok: true })],
    ['GET /text', async () => Reply.text(200, 'a 1\n', 'text/plain; version=0.0.4; charset=utf-8')],
    ['GET /unready', async () => Reply.json(503, { status: 'not ready' })],
    ['POST /boom', async () => Promise.reject(new Error('engine gone'))],
  ]);
  const lines: string[] = [];
  const previous = setLogSink((line) => lines.push(line));
  const server = await startManagementServer({ host: '127.0.0.1', port: 0 }, routes, createLogger());
  const base = `http://127.0.0.1:${server.address.port}`;
  try {
    const json = await fetch(`${base}/json`);
    assert.equal(json.status, 200);
    assert.equal(json.headers.get('content-type'), 'application/json');
    assert.deepEqual(await json.json(), { n: '1', ok: true });

    const text = await fetch(`${base}/text`);
    assert.equal(text.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
    assert.equal(await text.text(), 'a 1\n');

    const unready = await fetch(`${base}/unready`);
    assert.equal(unready.status, 503);
    assert.deepEqual(await unready.json(), { status: 'not ready' });

    const missing = await fetch(`${base}/nothing`);
    assert.equal(missing.status, 404);
    assert.deepEqual(((await missing.json()) as { routes: string[] }).routes, [...routes.keys()]);

    const boom = await fetch(`${base}/boom`, { method: 'POST' });
    assert.equal(boom.status, 500);
    assert.deepEqual(await boom.json(), { error: 'engine gone' });
    assert.ok(lines.some((l) => JSON.parse(l).msg === 'management request failed'));
  } finally {
    await server.close();
    setLogSink(previous);
  }
});
