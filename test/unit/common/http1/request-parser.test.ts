import { test } from 'node:test';
import assert from 'node:assert/strict';
import { HttpError, RequestParser, type ParserLimits, type RequestHead } from '../../../../src/common/http1/request-parser.js';
import { seededRandom } from '../../../support/seeded-random.js';

type Parsed = { head: RequestHead; body: string }[];
interface Outcome {
  requests: Parsed;
  /** The status of the refusal that ended the stream, if one did. */
  refused?: number;
  /** Bytes of an unfinished request left over. */
  pending: number;
}

const LIMITS: ParserLimits = { maxRequestLineBytes: 64, maxHeaderBytes: 256, maxHeaders: 8 };

/** Feeds the pieces one at a time and takes every event after each. */
function parse(pieces: Buffer[], limits = LIMITS): Outcome {
  const p = new RequestParser(limits);
  const requests: Parsed = [];
  let body: Buffer[] | undefined;
  for (const piece of pieces) {
    p.feed(piece);
    for (;;) {
      let ev;
      try {
        ev = p.next();
      } catch (err) {
        assert.ok(err instanceof HttpError, `only HttpErrors: ${String(err)}`);
        return { requests, refused: err.status, pending: 0 };
      }
      if (!ev) break;
      if (ev.kind === 'head') {
        assert.equal(body, undefined, 'a head only after the previous end');
        requests.push({ head: ev.head, body: '' });
        body = [];
      } else if (ev.kind === 'data') {
        assert.ok(ev.data.length > 0, 'no empty data');
        body!.push(ev.data);
      } else {
        requests.at(-1)!.body = Buffer.concat(body!).toString('latin1');
        body = undefined;
      }
    }
  }
  return { requests, pending: p.buffered + (body ? 1 : 0) };
}

const whole = (text: string, limits?: ParserLimits) => parse([Buffer.from(text, 'latin1')], limits);
const refusedWith = (text: string, limits?: ParserLimits) => whole(text, limits).refused;

test('a GET: method, target, version, lowercased fields, no body, kept alive', () => {
  const { requests, refused } = whole('GET /v1/topics/t/keys/k?x=1 HTTP/1.1\r\nHost: a\r\nX-Thing:  v  w \t\r\nAccept: */*\r\n\r\n');
  assert.equal(refused, undefined);
  assert.equal(requests.length, 1);
  const { head, body } = requests[0]!;
  assert.deepEqual(
    [head.method, head.url, head.httpVersion, head.bodyLength, head.keepAlive, head.expectContinue],
    ['GET', '/v1/topics/t/keys/k?x=1', '1.1', 0, true, false],
  );
  assert.deepEqual(head.headers, { host: 'a', 'x-thing': 'v  w', accept: '*/*' });
  assert.equal(body, '');
});

test('repeated fields are joined; a repeated Host is refused', () => {
  const { requests } = whole('GET / HTTP/1.1\r\nHost: a\r\nAccept: x\r\naccept: y\r\n\r\n');
  assert.equal(requests[0]!.head.headers.accept, 'x, y');
  assert.equal(refusedWith('GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n'), 400);
});

test('keep-alive follows the version and Connection', () => {
  const keepAlive = (text: string) => whole(text).requests[0]!.head.keepAlive;
  assert.equal(keepAlive('GET / HTTP/1.1\r\nHost: a\r\n\r\n'), true);
  assert.equal(keepAlive('GET / HTTP/1.1\r\nHost: a\r\nConnection: Close\r\n\r\n'), false);
  assert.equal(keepAlive('GET / HTTP/1.1\r\nHost: a\r\nConnection: upgrade, close\r\n\r\n'), false);
  assert.equal(keepAlive('GET / HTTP/1.0\r\n\r\n'), false);
  assert.equal(keepAlive('GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n'), true);
});

test('malformed request lines and fields are 400', () => {
  const cases = [
    'GET  / HTTP/1.1\r\nHost: a\r\n\r\n',
    'GET / HTTP/1.1 \r\nHost: a\r\n\r\n',
    'G@T / HTTP/1.1\r\nHost: a\r\n\r\n',
    'GET http://a/ HTTP/1.1\r\nHost: a\r\n\r\n',
    'GET * HTTP/1.1\r\nHost: a\r\n\r\n',
    'GET /a b HTTP/1.1\r\nHost: a\r\n\r\n',
    'GET / HTTQ/1.1\r\nHost: a\r\n\r\n',
    'GET / HTTP/1.1\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: a\r\nX : y\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n folded\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: a\r\nNoColon\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: a\r\n: empty\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: a\r\nX-A: b\rc\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: a\r\nX-A: b\nX-B: c\r\n\r\n',
    'GET / HTTP/1.1\nHost: a\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: a\r\nX-A: b\x00c\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: a\r\nX-A: b\x7fc\r\n\r\n',
    'GET / HTTP/1.1\r\nHost: a\r\nX\x01A: b\r\n\r\n',
  ];
  for (const text of cases) assert.equal(refusedWith(text), 400, JSON.stringify(text));
});

test('other versions are 505', () => {
  assert.equal(refusedWith('GET / HTTP/2.0\r\nHost: a\r\n\r\n'), 505);
  assert.equal(refusedWith('GET / HTTP/1.2\r\nHost: a\r\n\r\n'), 505);
});

test('limits: a long request line is 414, a large header block or too many fields 431', () => {
  assert.equal(refusedWith(`GET /${'a'.repeat(70)} HTTP/1.1\r\nHost: a\r\n\r\n`), 414);
  assert.equal(refusedWith(`GET /${'a'.repeat(70)}`), 414, 'without waiting for the line to end');
  assert.equal(refusedWith(`GET / HTTP/1.1\r\nHost: a\r\nX: ${'b'.repeat(300)}\r\n\r\n`), 431);
  assert.equal(refusedWith(`GET / HTTP/1.1\r\nHost: a\r\nX: ${'b'.repeat(300)}`), 431, 'without waiting for the head to end');
  const many = Array.from({ length: 9 }, (_, i) => `X-${i}: v\r\n`).join('');
  assert.equal(refusedWith(`GET / HTTP/1.1\r\nHost: a\r\n${many}\r\n`), 431);
  // At the limits exactly: taken.
  const line = `GET /${'a'.repeat(64 - 'GET / HTTP/1.1'.length)} HTTP/1.1`;
  assert.equal(line.length, 64);
  assert.equal(refusedWith(`${line}\r\nHost: a\r\n\r\n`), undefined);
});

test('Content-Length bodies; several equal lengths are one, differing ones 400', () => {
  const { requests } = whole('PUT /k HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloGET / HTTP/1.1\r\nHost: a\r\n\r\n');
  assert.deepEqual(
    requests.map((r) => [r.head.method, r.head.bodyLength, r.body]),
    [
      ['PUT', 5, 'hello'],
      ['GET', 0, ''],
    ],
  );
  assert.equal(whole('PUT /k HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc').requests[0]!.body, 'abc');
  assert.equal(refusedWith('PUT /k HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd'), 400);
  assert.equal(refusedWith('PUT /k HTTP/1.1\r\nHost: a\r\nContent-Length: 3, 4\r\n\r\nabcd'), 400);
  assert.equal(refusedWith('PUT /k HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n'), 400);
  assert.equal(refusedWith('PUT /k HTTP/1.1\r\nHost: a\r\nContent-Length: 0x10\r\n\r\n'), 400);
  assert.equal(refusedWith('PUT /k HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999\r\n\r\n'), 400);
});

test('chunked bodies: extensions ignored, trailers consumed, framing errors 400', () => {
  const chunked = 'PUT /k HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n';
  const { requests, refused } = whole(`${chunked}5;name=value\r\nhello\r\nA \r\n, world!!!\r\n0\r\nX-Trailer: t\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n`);
  assert.equal(refused, undefined);
  assert.deepEqual(
    requests.map((r) => [r.head.bodyLength, r.body]),
    [
      ['chunked', 'hello, world!!!'],
      [0, ''],
    ],
  );
  assert.equal(whole(`${chunked}0\r\n\r\n`).requests[0]!.body, '');
  for (const bad of ['5\r\nhelloX\r\n0\r\n\r\n', 'z\r\n', '5\nhello\r\n', '-1\r\n', '1234567890abc\r\n', '0\r\nbad trailer\r\n\r\n']) {
    assert.equal(refusedWith(chunked + bad), 400, JSON.stringify(bad));
  }
});

test('Transfer-Encoding: with Content-Length 400 (smuggling), other than chunked 501', () => {
  assert.equal(refusedWith('PUT /k HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n'), 400);
  assert.equal(refusedWith('PUT /k HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n'), 501);
  assert.equal(refusedWith('PUT /k HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n'), 501);
  assert.equal(refusedWith('PUT /k HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n'), 501);
  assert.equal(refusedWith('PUT /k HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n'), 501);
  assert.equal(whole('PUT /k HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n0\r\n\r\n').requests[0]!.head.bodyLength, 'chunked');
});

test('Expect: 100-continue is noted for a body; another expectation is 417', () => {
  const expects = (text: string) => whole(text).requests[0]!.head.expectContinue;
  assert.equal(expects('PUT /k HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n\r\n'), true);
  assert.equal(expects('PUT /k HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n'), false);
  assert.equal(refusedWith('PUT /k HTTP/1.1\r\nHost: a\r\nExpect: something\r\n\r\n'), 417);
});

test('empty lines before a request line are ignored', () => {
  assert.equal(whole('\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n').requests.length, 1);
});

const SAMPLES = [
  'GET /v1/topics/t/keys/k HTTP/1.1\r\nHost: a\r\n\r\n',
  'GET / HTTP/1.0\r\n\r\n',
  '\r\nGET /x HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n',
  'PUT /k HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n\r\nhello world',
  'PUT /k HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nT: v\r\n\r\n',
  'DELETE /k HTTP/1.1\r\nHost: a\r\nIf-Match: "3"\r\n\r\n',
  'PUT /k HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nhi',
  'PUT /k HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n',
  'GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n',
  `GET /${'x'.repeat(80)} HTTP/1.1\r\n\r\n`,
  `GET / HTTP/1.1\r\nHost: a\r\nX: ${'y'.repeat(300)}\r\n\r\n`,
  'PUT /k HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcdefg\r\n',
];

function splitAt(bytes: Buffer, random: () => number): Buffer[] {
  const pieces: Buffer[] = [];
  let at = 0;
  while (at < bytes.length) {
    const n = 1 + Math.floor(random() * Math.min(bytes.length - at, random() < 0.5 ? 3 : 40));
    pieces.push(bytes.subarray(at, at + n));
    at += n;
  }
  return pieces;
}

const summary = (o: Outcome) => JSON.stringify({ requests: o.requests, refused: o.refused });

test('property: however the bytes are split, the parse is the same (every boundary, then random splits)', () => {
  const random = seededRandom(35);
  for (let n = 0; n < 400; n++) {
    // Requests in a row, sometimes with garbage at the end, sometimes cut short.
    const count = 1 + Math.floor(random() * 4);
    let text = '';
    for (let i = 0; i < count; i++) text += SAMPLES[Math.floor(random() * SAMPLES.length)];
    if (random() < 0.2) text += String.fromCharCode(...Array.from({ length: 1 + Math.floor(random() * 20) }, () => Math.floor(random() * 256)));
    if (random() < 0.2) text = text.slice(0, Math.floor(random() * text.length));
    const bytes = Buffer.from(text, 'latin1');
    const expected = summary(parse([bytes]));
    // Every single boundary.
    for (let at = 1; at < bytes.length; at++) {
      assert.equal(summary(parse([bytes.subarray(0, at), bytes.subarray(at)])), expected, `case ${n} split at ${at}`);
    }
    assert.equal(summary(parse([...bytes].map((b) => Buffer.of(b)))), expected, `case ${n} byte by byte`);
    for (let s = 0; s < 5; s++) assert.equal(summary(parse(splitAt(bytes, random))), expected, `case ${n} random split`);
  }
});

test('property: random bytes and mutated requests never throw anything but an HttpError, and never loop', () => {
  const random = seededRandom(9112);
  for (let n = 0; n < 3000; n++) {
    let bytes: Buffer;
    if (random() < 0.3) {
      bytes = Buffer.from(Array.from({ length: Math.floor(random() * 200) }, () => Math.floor(random() * 256)));
    } else {
      bytes = Buffer.from(SAMPLES[Math.floor(random() * SAMPLES.length)]! + SAMPLES[Math.floor(random() * SAMPLES.length)]!, 'latin1');
      const flips = 1 + Math.floor(random() * 4);
      for (let f = 0; f < flips; f++) {
        const at = Math.floor(random() * bytes.length);
        bytes[at] = random() < 0.5 ? [0, 9, 10, 13, 32, 58, 59, 48, 127, 255][Math.floor(random() * 10)]! : Math.floor(random() * 256);
      }
    }
    const outcome = parse(splitAt(bytes, random));
    assert.equal(summary(outcome), summary(parse([bytes])), `mutated case ${n}`);
    if (outcome.refused !== undefined) assert.ok([400, 414, 417, 431, 501, 505].includes(outcome.refused), `status ${outcome.refused}`);
  }
});
