/**
 * The table API over HTTP, on a real listener, with an in-memory store and index behind it
 * (test/support/fake-tables.ts): what each route answers, compare-and-set, read-your-writes, the
 * token, change streams and the figures.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Registry } from 'prom-client';
import { createLogger } from '../../../src/common/log.js';
import type { TableReads } from '../../../src/engine/api/table-reads.js';
import { BearerToken } from '../../../src/ops/bearer-token.js';
import { TableMetrics } from '../../../src/ops/metrics/table-metrics.js';
import { startTableServer, type TableServer } from '../../../src/tables/table-server.js';
import { tablesGate } from '../../../src/tables/table-access.js';
import { defaultPartition } from '../../../src/tables/default-partitioner.js';
import { WriteOutcomeUnknown } from '../../../src/tables/table-writer.js';
import { FakeTables } from '../../support/fake-tables.js';
import { parseExposition } from '../../support/prometheus.js';
import { capturingLogger } from '../../support/capturing-logger.js';
import { makeTempDir } from '../../support/processes.js';

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  json: Record<string, unknown>;
}

interface Bed {
  tables: FakeTables;
  /** What the server logged at info and above. */
  logged: string[];
  server: TableServer;
  registry: Registry;
  call(method: string, route: string, opts?: { headers?: Record<string, string>; body?: string | Buffer }): Promise<Answer>;
  close(): Promise<void>;
}

async function bed(opts: { token?: BearerToken; reads?: () => TableReads | undefined } = {}): Promise<Bed> {
  const tables = new FakeTables().topic('orders', 3).topic('plain', 1, { compacted: false });
  const registry = new Registry();
  const logged: string[] = [];
  const server = await startTableServer({
    listen: { host: '127.0.0.1', port: 0 },
    gate: tablesGate(opts.token),
    deps: {
      reads: opts.reads ?? (() => tables),
      partitions: tables,
      writer: tables,
      metrics: new TableMetrics(registry),
      log: capturingLogger(logged),
      now: () => 1_700_000_000_000,
    },
    changes: { waitMs: 30, heartbeatMs: 60, retryMs: 500 },
    maxBodyBytes: 1024,
  });
  const call: Bed['call'] = (method, route, o = {}) =>
    new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: server.address.port, method, path: route, headers: o.headers, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, json: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) });
        });
      });
      req.on('error', reject);
      req.end(o.body);
    });
  return { tables, logged, server, registry, call, close: () => server.close() };
}

const partitionOf = (key: string) => defaultPartition(Buffer.from(key), 3);

test('PUT writes a key where producers would, GET reads its latest value back, DELETE leaves no value', async () => {
  const b = await bed();
  try {
    const put = await b.call('PUT', '/v1/topics/orders/keys/order-1', { body: '{"qty":1}' });
    assert.equal(put.status, 200);
    assert.deepEqual(put.json, { partition: partitionOf('order-1'), offset: 0 });
    assert.equal(put.headers.etag, '"0"');
    assert.equal((await b.call('PUT', '/v1/topics/orders/keys/order-1', { body: '{"qty":2}' })).json.offset, 1);

    const get = await b.call('GET', '/v1/topics/orders/keys/order-1');
    assert.equal(get.status, 200);
    assert.deepEqual(get.json, { key: 'order-1', value: '{"qty":2}', partition: partitionOf('order-1'), offset: 1, timestamp: 1_700_000_000_000, headers: [] });
    assert.equal(get.headers.etag, '"1"');
    assert.equal(get.headers['content-type'], 'application/json; charset=utf-8');

    const del = await b.call('DELETE', '/v1/topics/orders/keys/order-1');
    assert.deepEqual([del.status, del.json.offset], [200, 2]);
    assert.equal(b.tables.log('orders', partitionOf('order-1'))[2]!.value, null, 'a tombstone');
    const gone = await b.call('GET', '/v1/topics/orders/keys/order-1');
    assert.equal(gone.status, 404);
    assert.match(String(gone.json.error), /no value for this key in orders-\d/);
    assert.equal(typeof gone.json.fix, 'string');
    assert.equal((await b.call('GET', '/v1/topics/orders/keys/never')).status, 404);
  } finally {
    await b.close();
  }
});

test('base64 carries keys, values and answers that are not text; an explicit partition is used as given', async () => {
  const b = await bed();
  try {
    const key = Buffer.from([0x00, 0xff, 0x10]);
    const value = Buffer.from([0xde, 0xad, 0xbe, 0xef]);
    const k = encodeURIComponent(key.toString('base64'));
    const put = await b.call('PUT', `/v1/topics/orders/keys/${k}?encoding=base64&partition=2`, { body: value.toString('base64') });
    assert.deepEqual(put.json, { partition: 2, offset: 0 });
    assert.deepEqual(b.tables.log('orders', 2)[0]!.value, value, 'the body was decoded');
    const get = await b.call('GET', `/v1/topics/orders/keys/${k}?encoding=base64&partition=2`);
    assert.deepEqual([get.json.key, get.json.value], [key.toString('base64'), value.toString('base64')]);
    const text = await b.call('GET', `/v1/topics/orders/keys/${k}?encoding=base64&partition=2`.replace('encoding=base64&', '').replace(k, k));
    assert.equal(text.status, 404, 'the base64 text read as UTF-8 is another key');
    // A raw body is the value as is, bytes included.
    await b.call('PUT', '/v1/topics/orders/keys/raw?partition=1', { body: value });
    const raw = await b.call('GET', '/v1/topics/orders/keys/raw?partition=1');
    assert.deepEqual([raw.json.encoding, raw.json.value], ['base64', value.toString('base64')], 'not UTF-8: the record comes in base64 and says so');
    assert.equal((await b.call('PUT', '/v1/topics/orders/keys/x?encoding=base64', { body: 'not base64!' })).status, 400);
  } finally {
    await b.close();
  }
});

test('a record read again is answered alike in each encoding, whole with its length (no chunked framing)', async () => {
  const b = await bed();
  try {
    await b.call('PUT', '/v1/topics/orders/keys/k?partition=0', { body: 'v1' });
    const route = '/v1/topics/orders/keys/k?partition=0';
    const base64Route = `/v1/topics/orders/keys/${encodeURIComponent(Buffer.from('k').toString('base64'))}?partition=0&encoding=base64`;
    const first = await b.call('GET', route);
    const base64 = await b.call('GET', base64Route);
    const again = await b.call('GET', route);
    assert.deepEqual(again.json, first.json);
    assert.equal(again.headers.etag, '"0"');
    assert.deepEqual([base64.json.key, base64.json.value], [Buffer.from('k').toString('base64'), Buffer.from('v1').toString('base64')]);
    assert.equal(Number(again.headers['content-length']), Buffer.byteLength(JSON.stringify(again.json) + '\n'));
    assert.equal(again.headers['transfer-encoding'], undefined);
    await b.call('PUT', route, { body: 'v2' });
    assert.deepEqual([(await b.call('GET', route)).json.value, (await b.call('GET', base64Route)).json.value], ['v2', Buffer.from('v2').toString('base64')]);
  } finally {
    await b.close();
  }
});

test('compare-and-set: If-None-Match * creates once, If-Match writes only over the offset it names, a loser is 412 with the current offset', async () => {
  const b = await bed();
  try {
    const created = await b.call('PUT', '/v1/topics/orders/keys/k', { body: 'v1', headers: { 'if-none-match': '*' } });
    assert.deepEqual([created.status, created.json.offset], [200, 0]);
    const again = await b.call('PUT', '/v1/topics/orders/keys/k', { body: 'v1b', headers: { 'if-none-match': '*' } });
    assert.equal(again.status, 412);
    assert.deepEqual(again.json, {
      error: 'precondition failed',
      partition: partitionOf('k'),
      offset: 1,
      current: 0,
      fix: 'read the key again and retry with its current offset',
    });
    const record = b.tables.log('orders', partitionOf('k'))[1]!;
    assert.deepEqual(
      record.headers.map((h) => [h.key, h.value?.toString()]),
      [['kcompact.if-none-match', '*']],
      'the condition travels with the record',
    );

    const won = await b.call('PUT', '/v1/topics/orders/keys/k', { body: 'v2', headers: { 'if-match': '"0"' } });
    assert.deepEqual([won.status, won.json.offset], [200, 2]);
    const stale = await b.call('PUT', '/v1/topics/orders/keys/k', { body: 'v3', headers: { 'if-match': '0' } });
    assert.deepEqual([stale.status, stale.json.current], [412, 2]);
    assert.equal((await b.call('GET', '/v1/topics/orders/keys/k')).json.value, 'v2', 'the losers are void');

    const deleted = await b.call('DELETE', '/v1/topics/orders/keys/k', { headers: { 'if-match': '2' } });
    assert.equal(deleted.status, 200);
    const overTombstone = await b.call('PUT', '/v1/topics/orders/keys/k', { body: 'v4', headers: { 'if-match': String(deleted.json.offset) } });
    assert.deepEqual([overTombstone.status, overTombstone.json.current], [412, null], "a tombstone's offset is no value to match");
    assert.equal((await b.call('PUT', '/v1/topics/orders/keys/k', { body: 'v5', headers: { 'if-none-match': '*' } })).status, 200);
    assert.equal((await b.call('PUT', '/v1/topics/orders/keys/k', { body: 'x', headers: { 'if-match': 'five' } })).status, 400);

    const exposition = parseExposition(await b.registry.metrics());
    assert.equal(b.tables.expecting, 0, 'every conditional write lets go of its expectation once answered');
    assert.equal(exposition.value('kcompact_table_cas_conflicts_total'), 3);
    assert.equal(exposition.value('kcompact_table_requests_total', { route: 'put_key', status: '412' }), 3);
  } finally {
    await b.close();
  }
});

test('read-your-writes: min_offset waits for the index, and a 503 with Retry-After when it is still behind', async () => {
  const b = await bed();
  try {
    const p = partitionOf('k');
    const { offset } = (await b.call('PUT', '/v1/topics/orders/keys/k', { body: 'v' })).json as { offset: number };
    b.tables.holdIndexAt('orders', p, 0);
    const behind = await b.call('GET', `/v1/topics/orders/keys/k?min_offset=${offset}&timeout_ms=20`);
    assert.equal(behind.status, 503);
    assert.equal(behind.headers['retry-after'], '1');
    assert.match(String(behind.json.error), /has read up to offset 0, not yet past min_offset 0/);
    assert.equal(behind.json.indexedTo, 0);
    assert.equal((await b.call('GET', '/v1/topics/orders/keys/k')).status, 404, 'without min_offset: the index as it is');

    const waiting = b.call('GET', `/v1/topics/orders/keys/k?min_offset=${offset}&timeout_ms=5000`);
    setTimeout(() => b.tables.holdIndexAt('orders', p, undefined), 20);
    const caught = await waiting;
    assert.deepEqual([caught.status, caught.json.value], [200, 'v']);

    // A conditional write the index has not judged in time: written, verdict unknown.
    b.tables.holdIndexAt('orders', p, 1);
    const unjudged = await b.call('PUT', '/v1/topics/orders/keys/k?timeout_ms=20', { body: 'w', headers: { 'if-match': '0' } });
    assert.equal(unjudged.status, 503);
    assert.deepEqual([unjudged.json.partition, unjudged.json.offset], [p, 1]);
    assert.match(String(unjudged.json.fix), /min_offset=1/);
  } finally {
    await b.close();
  }
});

test('errors: unknown topic 404, not compacted 409 (nothing written), no such partition, no route, wrong method, too large, starting, unknown outcome', async () => {
  let started = false;
  const b = await bed({ reads: () => (started ? b.tables : undefined) });
  try {
    const starting = await b.call('GET', '/v1/topics/orders/keys/k');
    assert.deepEqual([starting.status, starting.headers['retry-after']], [503, '1']);
    assert.match(String(starting.json.error), /still starting/);
    started = true;
    const cases: [string, string, number, RegExp][] = [
      ['GET', '/v1/topics/nope/keys/k', 404, /topic nope does not exist/],
      ['GET', '/v1/topics/plain/keys/k', 409, /not compacted/],
      ['PUT', '/v1/topics/plain/keys/k', 409, /not compacted/],
      ['GET', '/v1/topics/orders/keys/k?partition=3', 404, /orders has no partition 3: it has 3 \(0 to 2\)/],
      ['GET', '/v1/topics/orders/keys/%7B%7D?key_format=json', 400, /no bytes to place it by/],
      ['GET', '/nothing', 404, /no route \/nothing/],
      ['POST', '/v1/topics/orders/keys/k', 405, /method POST is not allowed/],
      ['GET', '/v1/topics/orders/changes?partition=9', 404, /no partition 9/],
      ['GET', '/v1/topics/plain/changes', 409, /not compacted/],
    ];
    for (const [method, route, status, pattern] of cases) {
      const a = await b.call(method, route, { body: method === 'PUT' ? 'v' : undefined });
      assert.equal(a.status, status, `${method} ${route}`);
      assert.match(String(a.json.error), pattern, `${method} ${route}`);
      assert.equal(typeof a.json.fix, 'string', `${method} ${route} says what to do`);
    }
    assert.equal(b.tables.log('plain', 0).length, 0, 'nothing was written to the topic that is not compacted');
    const big = await b.call('PUT', '/v1/topics/orders/keys/k', { body: Buffer.alloc(2048) });
    assert.equal(big.status, 413);
    b.tables.failNextAppend = new WriteOutcomeUnknown('the write to orders-0 went to the store and got no answer');
    const unknown = await b.call('PUT', '/v1/topics/orders/keys/k', { body: 'v' });
    assert.deepEqual([unknown.status, unknown.headers['retry-after']], [503, '1']);
    assert.match(String(unknown.json.fix), /read the key/);
    b.tables.failNextAppend = new WriteOutcomeUnknown('the write to orders-0 went to the store and got no answer');
    assert.equal((await b.call('PUT', '/v1/topics/orders/keys/k', { body: 'v', headers: { 'if-none-match': '*' } })).status, 503);
    assert.equal(b.tables.expecting, 0, 'a conditional write that failed lets go of its expectation');
    const info = await b.call('GET', '/v1/topics/orders');
    assert.deepEqual(info.json, { topic: 'orders', partitions: 3, compacted: true });
    assert.deepEqual((await b.call('GET', '/v1/topics/plain')).json, { topic: 'plain', partitions: 1, compacted: false });
  } finally {
    await b.close();
  }
});

test('the token: required when configured, refused without or with a wrong one, before anything runs', async () => {
  const temp = makeTempDir('kcompact-tables-token-');
  const file = path.join(temp.path, 'token');
  const secret = 'dGFibGVzLXRva2VuLWZvci10aGUtdGVzdHM=';
  fs.writeFileSync(file, secret);
  const token = new BearerToken(file, createLogger(), 'tables token file');
  const b = await bed({ token });
  try {
    const missing = await b.call('PUT', '/v1/topics/orders/keys/k', { body: 'v' });
    assert.equal(missing.status, 401);
    assert.equal(missing.headers['www-authenticate'], 'Bearer realm="kcompact-tables"');
    assert.match(String(missing.json.error), /the table API listener requires a bearer token/);
    assert.match(String(missing.json.fix), /tablesTokenFile/);
    const wrong = await b.call('GET', '/v1/topics/orders/keys/k', { headers: { authorization: 'Bearer d3JvbmctdG9rZW4tZm9yLXRhYmxlcw==' } });
    assert.equal(wrong.status, 401);
    assert.equal(
      (await b.call('GET', '/v1/topics/orders/keys/k', { headers: { authorization: `Bearer ${secret}`, origin: 'https://site.example' } })).status,
      403,
    );
    assert.equal(b.tables.log('orders', partitionOf('k')).length, 0, 'nothing a refused request asked for ran');
    const ok = await b.call('PUT', '/v1/topics/orders/keys/k', { body: 'v', headers: { authorization: `Bearer ${secret}` } });
    assert.equal(ok.status, 200);
  } finally {
    await b.close();
    token.close();
    temp.remove();
  }
});

/** Opens a change stream and gathers its text until `until` says it has enough; then hangs up. */
function watch(
  b: Bed,
  route: string,
  until: (text: string) => boolean,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: b.server.address.port, path: route, headers, agent: false }, (res) => {
      let text = '';
      const finish = () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, text });
        req.destroy();
      };
      res.on('data', (c: Buffer) => {
        text += c.toString('utf8');
        if (until(text)) finish();
      });
      res.on('end', finish);
    });
    req.on('error', reject);
    req.end();
  });
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(check(), what);
}

test('NDJSON changes: every partition from an offset, tombstones marked deleted, void records left out, a key prefix matched on bytes', async () => {
  const b = await bed();
  try {
    for (const [k, v] of [
      ['user:1', 'a'],
      ['order:1', 'b'],
      ['user:2', 'c'],
    ])
      await b.call('PUT', `/v1/topics/orders/keys/${k}?partition=0`, { body: v });
    await b.call('PUT', '/v1/topics/orders/keys/user:1?partition=0', { body: 'lost', headers: { 'if-none-match': '*' } });
    await b.call('DELETE', '/v1/topics/orders/keys/user:2?partition=0');
    await b.call('PUT', '/v1/topics/orders/keys/user:9?partition=2', { body: 'z' });
    const lines = (text: string) => text.split('\n').filter(Boolean);
    const all = await watch(b, '/v1/topics/orders/changes?from=0', (t) => lines(t).length >= 5);
    assert.equal(all.status, 200);
    assert.equal(all.headers['content-type'], 'application/x-ndjson; charset=utf-8');
    const got = lines(all.text).map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(
      got.filter((r) => r.partition === 0).map((r) => [r.key, r.value, r.offset, r.deleted]),
      [
        ['user:1', 'a', 0, undefined],
        ['order:1', 'b', 1, undefined],
        ['user:2', 'c', 2, undefined],
        ['user:2', null, 4, true],
      ],
      'in offset order; the void record at offset 3 is not there',
    );
    assert.deepEqual(
      got.filter((r) => r.partition === 2).map((r) => r.key),
      ['user:9'],
    );

    const users = await watch(b, '/v1/topics/orders/changes?from=0&partition=0&prefix=user%3A', (t) => lines(t).length >= 3);
    assert.deepEqual(
      lines(users.text).map((l) => (JSON.parse(l) as { offset: number }).offset),
      [0, 2, 4],
    );
    const one = await watch(b, '/v1/topics/orders/changes?from=0&partition=0&key=order%3A1', (t) => lines(t).length >= 1);
    assert.deepEqual(
      lines(one.text).map((l) => (JSON.parse(l) as { key: string }).key),
      ['order:1'],
    );
    await until(() => b.server.watchers === 0, 'the streams end when their clients hang up');
  } finally {
    await b.close();
  }
});

test('SSE changes: from now, ids are the cursor of every partition, Last-Event-ID resumes there, watchers counted', async () => {
  const b = await bed();
  try {
    await b.call('PUT', '/v1/topics/orders/keys/old?partition=1', { body: 'before' });
    let open: { text: string } | undefined;
    const stream = watch(b, '/v1/topics/orders/changes', (t) => ((open = { text: t }), t.includes('"new"')), { accept: 'text/event-stream' });
    await until(() => b.server.watchers === 1, 'one watcher');
    const gauge = parseExposition(await b.registry.metrics()).value('kcompact_table_watchers');
    assert.equal(gauge, 1);
    await until(() => open?.text.includes('id: 0:-1,1:0,2:-1') === true, 'the opening id is where the stream starts: now');
    await b.call('PUT', '/v1/topics/orders/keys/new?partition=2', { body: 'after' });
    const sse = await stream;
    assert.equal(sse.headers['content-type'], 'text/event-stream; charset=utf-8');
    assert.match(sse.text, /^retry: 500\n\nid: 0:-1,1:0,2:-1\n\n/);
    assert.ok(!sse.text.includes('"before"'), 'from now: nothing older');
    const event = /id: (\S+)\ndata: (.*)\n\n/.exec(sse.text)!;
    assert.equal(event[1], '0:-1,1:0,2:0');
    assert.deepEqual((JSON.parse(event[2]!) as { value: string }).value, 'after');
    await until(() => b.server.watchers === 0, 'the watcher is gone');

    await b.call('PUT', '/v1/topics/orders/keys/later?partition=0', { body: 'while away' });
    await b.call('PUT', '/v1/topics/orders/keys/later2?partition=2', { body: 'also away' });
    const resumed = await watch(b, '/v1/topics/orders/changes?format=sse', (t) => t.includes('"also away"') && t.includes('"while away"'), {
      'last-event-id': event[1]!,
    });
    const values = [...resumed.text.matchAll(/data: (.*)/g)].map((m) => (JSON.parse(m[1]!) as { value: string }).value).sort();
    assert.deepEqual(values, ['also away', 'while away'], 'exactly what was missed, in every partition');
    const exposition = parseExposition(await b.registry.metrics());
    assert.equal(exposition.value('kcompact_table_requests_total', { route: 'changes', status: '200' }), 2);
  } finally {
    await b.close();
  }
});

test('an idle SSE stream gets comments carrying its id; the proxy stopping ends every stream', async () => {
  const b = await bed();
  const idle = await watch(b, '/v1/topics/orders/changes?partition=1&format=sse', (t) => t.includes(': idle'));
  assert.match(idle.text, /: idle\nid: 1:-1\n\n/);
  await until(() => b.server.watchers === 0, 'the idle stream is gone');
  const ending = watch(b, '/v1/topics/orders/changes?format=ndjson', () => false);
  await until(() => b.server.watchers >= 1, 'a watcher');
  await b.close();
  const ended = await ending;
  assert.equal(ended.status, 200);
  assert.equal(b.server.watchers, 0);
});
