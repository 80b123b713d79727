import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseTableRequest, routeOf, DEFAULT_TIMEOUT_MS, type RequestHeaders, type TableRequest, type WriteKey } from '../../../src/tables/table-request.js';
import { ApiError } from '../../../src/tables/api-error.js';

const parse = (method: string, url: string, headers: RequestHeaders = {}): TableRequest => parseTableRequest(method, url, headers);

function refused(method: string, url: string, status: number, pattern: RegExp, headers: RequestHeaders = {}): ApiError {
  let caught: unknown;
  try {
    parse(method, url, headers);
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof ApiError, `${method} ${url} is refused`);
  assert.equal(caught.status, status, `${method} ${url}: ${caught.message}`);
  assert.match(caught.message, pattern);
  assert.ok(caught.fix.length > 0, 'says what to do');
  return caught;
}

test('routes by method and path, for the metrics too', () => {
  assert.equal(routeOf('GET', '/v1/topics/t/keys/k?x=1'), 'get_key');
  assert.equal(routeOf('PUT', '/v1/topics/t/keys/k'), 'put_key');
  assert.equal(routeOf('DELETE', '/v1/topics/t/keys/k'), 'delete_key');
  assert.equal(routeOf('GET', '/v1/topics/t/changes'), 'changes');
  assert.equal(routeOf('GET', '/v1/topics/t'), 'topic');
  for (const url of ['/', '/v1', '/v1/topics', '/v2/topics/t', '/v1/topics/t/keys', '/v1/topics/t/keys/a/b', '/v1/topics/t/other/k', '/metrics']) {
    assert.equal(routeOf('GET', url), 'unmatched', url);
  }
});

test('a key is its percent-decoded UTF-8 path segment, dots and slashes included', () => {
  const get = (url: string) => parse('GET', url) as Extract<TableRequest, { route: 'get_key' }>;
  assert.deepEqual(get('/v1/topics/orders/keys/order-1').key, { bytes: Buffer.from('order-1') });
  assert.deepEqual(get('/v1/topics/orders/keys/a%2Fb%20c').key, { bytes: Buffer.from('a/b c') });
  assert.deepEqual(get('/v1/topics/orders/keys/%C3%A9t%C3%A9').key, { bytes: Buffer.from('été') });
  assert.deepEqual(get('/v1/topics/orders/keys/..').key, { bytes: Buffer.from('..') }, 'not resolved away as a URL would');
  assert.deepEqual(get('/v1/topics/orders/keys/').key, { bytes: Buffer.alloc(0) }, 'an empty key');
  const r = get('/v1/topics/orders/keys/k');
  assert.deepEqual([r.topic, r.encoding, r.partition, r.minOffset, r.timeoutMs], ['orders', 'utf8', undefined, undefined, DEFAULT_TIMEOUT_MS]);
  refused('GET', '/v1/topics/orders/keys/%FF', 400, /the key in the path is not percent-encoded UTF-8/);
  refused('GET', '/v1/topics/orders/keys/%E0%A4%A', 400, /not percent-encoded UTF-8/);
});

test('with encoding=base64 the key in the path is base64 (either alphabet)', () => {
  const r = parse('GET', '/v1/topics/t/keys/AP-A?encoding=base64') as Extract<TableRequest, { route: 'get_key' }>;
  assert.deepEqual(r.key, { bytes: Buffer.from([0x00, 0xff, 0x80]) });
  const std = parse('PUT', '/v1/topics/t/keys/AP%2BA?encoding=base64') as WriteKey;
  assert.deepEqual(std.key, Buffer.from([0x00, 0xff, 0x80]));
  refused('GET', '/v1/topics/t/keys/not*base64?encoding=base64', 400, /the key is not base64/);
  refused('GET', '/v1/topics/t/keys/k?encoding=hex', 400, /encoding=hex is not known/);
});

test('key_format=json takes the key as JSON for a schema-registry topic', () => {
  const r = parse('GET', '/v1/topics/t/keys/%7B%22id%22%3A7%7D?key_format=json&partition=3') as Extract<TableRequest, { route: 'get_key' }>;
  assert.deepEqual(r.key, { json: { id: 7 } });
  assert.equal(r.partition, 3);
  refused('GET', '/v1/topics/t/keys/%7Bnope?key_format=json', 400, /must be JSON text/);
  refused('GET', '/v1/topics/t/keys/k?key_format=avro', 400, /key_format=avro is not known/);
  refused('PUT', '/v1/topics/t/keys/k?key_format=json', 400, /unknown query parameter "key_format"/);
});

test('topic names are checked as Kafka checks them', () => {
  assert.equal(parse('GET', '/v1/topics/a.b_c-D9').route, 'topic');
  refused('GET', '/v1/topics/a%20b', 400, /"a b" is not a Kafka topic name/);
  refused('GET', `/v1/topics/${'x'.repeat(250)}/keys/k`, 400, /not a Kafka topic name/);
});

test('query parameters: only the ones a route takes, each once, integers as digits', () => {
  const r = parse('GET', '/v1/topics/t/keys/k?partition=2&min_offset=41&timeout_ms=250') as Extract<TableRequest, { route: 'get_key' }>;
  assert.deepEqual([r.partition, r.minOffset, r.timeoutMs], [2, 41, 250]);
  refused('GET', '/v1/topics/t/keys/k?min-offset=4', 400, /unknown query parameter "min-offset"/);
  refused('GET', '/v1/topics/t/keys/k?partition=1&partition=2', 400, /given more than once/);
  refused('GET', '/v1/topics/t/keys/k?partition=-1', 400, /partition=-1 is not an integer/);
  refused('GET', '/v1/topics/t/keys/k?min_offset=1e3', 400, /min_offset=1e3 is not an integer/);
  refused('GET', '/v1/topics/t/keys/k?timeout_ms=600000', 400, /timeout_ms=600000 is not an integer from 0 to 60000/);
  refused('GET', '/v1/topics/t?x=1', 400, /unknown query parameter "x"/);
});

test('conditions: If-Match an offset (bare or as an entity tag), If-None-Match only *', () => {
  const put = (headers: RequestHeaders) => (parse('PUT', '/v1/topics/t/keys/k', headers) as WriteKey).condition;
  assert.equal(put({}), null);
  assert.deepEqual(put({ 'if-match': '42' }), { ifMatch: 42 });
  assert.deepEqual(put({ 'if-match': ' "42" ' }), { ifMatch: 42 });
  assert.deepEqual(put({ 'if-none-match': '*' }), { ifNoneMatch: true });
  const del = parse('DELETE', '/v1/topics/t/keys/k', { 'if-match': '7' }) as WriteKey;
  assert.deepEqual([del.route, del.condition], ['delete_key', { ifMatch: 7 }]);
  refused('PUT', '/v1/topics/t/keys/k', 400, /If-Match: abc is not one offset/, { 'if-match': 'abc' });
  refused('PUT', '/v1/topics/t/keys/k', 400, /not one offset/, { 'if-match': '1, 2' });
  refused('PUT', '/v1/topics/t/keys/k', 400, /not one offset/, { 'if-match': '-1' });
  refused('PUT', '/v1/topics/t/keys/k', 400, /weak/, { 'if-match': 'W/"1"' });
  refused('PUT', '/v1/topics/t/keys/k', 400, /If-Match: \* is not supported/, { 'if-match': '*' });
  refused('PUT', '/v1/topics/t/keys/k', 400, /If-None-Match: "3" is not supported/, { 'if-none-match': '"3"' });
  refused('PUT', '/v1/topics/t/keys/k', 400, /both set/, { 'if-match': '1', 'if-none-match': '*' });
  refused('DELETE', '/v1/topics/t/keys/k', 400, /would delete a key that has no value/, { 'if-none-match': '*' });
});

test('changes: from now by default, a key or a prefix, SSE when the client accepts it', () => {
  const changes = (url: string, headers: RequestHeaders = {}) => parse('GET', url, headers) as Extract<TableRequest, { route: 'changes' }>;
  const plain = changes('/v1/topics/t/changes');
  assert.deepEqual([plain.from, plain.partition, plain.filter, plain.format, plain.resume], ['now', undefined, null, 'ndjson', undefined]);
  assert.equal(changes('/v1/topics/t/changes', { accept: 'text/event-stream' }).format, 'sse');
  assert.equal(changes('/v1/topics/t/changes?format=ndjson', { accept: 'text/event-stream' }).format, 'ndjson');
  assert.equal(changes('/v1/topics/t/changes?from=0&partition=1').from, 0);
  assert.deepEqual(changes('/v1/topics/t/changes?key=a%2Fb').filter, { key: { bytes: Buffer.from('a/b') } });
  assert.deepEqual(changes('/v1/topics/t/changes?key=%7B%22id%22%3A1%7D&key_format=json').filter, { key: { json: { id: 1 } } });
  assert.deepEqual(changes('/v1/topics/t/changes?prefix=user%3A').filter, { prefix: Buffer.from('user:') });
  assert.deepEqual(changes('/v1/topics/t/changes?prefix=AP8&encoding=base64').filter, { prefix: Buffer.from([0x00, 0xff]) });
  assert.deepEqual(
    changes('/v1/topics/t/changes', { 'last-event-id': '0:4,1:-1' }).resume,
    new Map([
      [0, 4],
      [1, -1],
    ]),
  );
  refused('GET', '/v1/topics/t/changes?key=a&prefix=b', 400, /key and prefix are both set/);
  refused('GET', '/v1/topics/t/changes?prefix=b&key_format=json', 400, /key_format does not apply/);
  refused('GET', '/v1/topics/t/changes?format=xml', 400, /format=xml is not known/);
  refused('GET', '/v1/topics/t/changes?from=latest', 400, /from=latest is not an integer/);
  refused('GET', '/v1/topics/t/changes', 400, /Last-Event-ID/, { 'last-event-id': 'garbage' });
});

test('unknown paths are 404 and other methods 405 with Allow', () => {
  refused('GET', '/v1/topics', 404, /no route \/v1\/topics/);
  refused('GET', '/v1/topics/t/keys/a/b', 404, /no route/);
  assert.equal(refused('POST', '/v1/topics/t/keys/k', 405, /method POST is not allowed/).headers.allow, 'GET, PUT, DELETE');
  assert.equal(refused('PUT', '/v1/topics/t/changes', 405, /not allowed/).headers.allow, 'GET');
  assert.equal(refused('DELETE', '/v1/topics/t', 405, /not allowed/).headers.allow, 'GET');
});
