import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { startHttp1Server, type Http1Handler, type Http1Server, type Http1ServerOptions } from '../../../../src/common/http1/server.js';

/** Echoes what it got as JSON; /stream and /slow are for streamed and late answers. */
const echo: Http1Handler = (req, res) => {
  req.body().then(
    (body) => {
      const text = JSON.stringify({ method: req.method, url: req.url, version: req.httpVersion, headers: req.headers, body: body.toString('latin1') });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(text);
    },
    (err: { status: number; message: string }) => {
      res.writeHead(err.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: err.message }));
    },
  );
};

async function server(handler: Http1Handler = echo, opts: Partial<Http1ServerOptions> = {}): Promise<Http1Server> {
  return startHttp1Server({ host: '127.0.0.1', port: 0, maxBodyBytes: 1024, ...opts }, handler);
}

/** Sends raw bytes (each piece after a pause) and returns what came back until the server closed, or until `until` holds. */
async function raw(s: Http1Server, pieces: (string | Buffer)[], until?: (text: string) => boolean, pauseMs = 5): Promise<{ text: string; closed: boolean }> {
  const socket = net.connect(s.address.port, '127.0.0.1');
  await once(socket, 'connect');
  let text = '';
  let closed = false;
  const done = new Promise<void>((resolve) => {
    socket.on('data', (c: Buffer) => {
      text += c.toString('latin1');
      if (until?.(text)) resolve();
    });
    socket.on('close', () => {
      closed = true;
      resolve();
    });
    socket.on('error', () => resolve());
  });
  for (const p of pieces) {
    if (socket.destroyed) break;
    socket.write(p);
    if (pieces.length > 1) await sleep(pauseMs);
  }
  await done;
  if (!closed) socket.destroy();
  return { text, closed };
}

const statuses = (text: string) => [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
const GET = (path = '/', extra = '') => `GET ${path} HTTP/1.1\r\nHost: a\r\n${extra}\r\n`;

test('an answer is head and body with its length in one write; a kept-alive connection takes the next request', async () => {
  const writes: number[] = [];
  const s = await server((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    const socket = (res as unknown as { sink: { socket: net.Socket & { counted?: true } } }).sink.socket;
    if (!socket.counted) {
      socket.counted = true;
      const write = socket.write.bind(socket);
      socket.write = ((data: string | Buffer, ...rest: never[]) => (writes.push(Buffer.byteLength(data)), write(data, ...rest))) as typeof socket.write;
    }
    res.end(`{"url":"${req.url}"}`);
  });
  try {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = (path: string) =>
      new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string; socket: net.Socket }>((resolve, reject) => {
        http
          .get({ host: '127.0.0.1', port: s.address.port, path, agent }, (res) => {
            let body = '';
            res.on('data', (c: Buffer) => (body += c.toString()));
            res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body, socket: res.socket }));
          })
          .on('error', reject);
      });
    const a = await get('/a');
    const b = await get('/b?x=1');
    assert.deepEqual([a.status, a.body, a.headers['content-length']], [200, '{"url":"/a"}', '12']);
    assert.equal(b.body, '{"url":"/b?x=1"}');
    assert.equal(a.socket, b.socket, 'the same connection');
    assert.equal(writes.length, 2, 'one write per answer');
    agent.destroy();
  } finally {
    await s.close();
  }
});

test('pipelined requests are answered in order, even when a later one is answered sooner', async () => {
  const s = await server((req, res) => {
    const delay = req.url === '/slow' ? 30 : 0;
    setTimeout(() => res.end(req.url), delay);
  });
  try {
    const { text } = await raw(s, [GET('/slow') + GET('/fast') + GET('/last', 'Connection: close\r\n')]);
    assert.deepEqual(statuses(text), [200, 200, 200]);
    assert.deepEqual(
      [...text.matchAll(/\r\n\r\n(\/[a-z]+)/g)].map((m) => m[1]),
      ['/slow', '/fast', '/last'],
    );
    assert.match(text, /connection: close\r\n\r\n\/last$/);
  } finally {
    await s.close();
  }
});

test('keep-alive: Connection: close and HTTP/1.0 close after the answer; HTTP/1.0 with keep-alive stays', async () => {
  const s = await server();
  try {
    const close = await raw(s, [GET('/', 'Connection: close\r\n')]);
    assert.equal(close.closed, true);
    assert.match(close.text, /connection: close/);
    const old = await raw(s, ['GET / HTTP/1.0\r\n\r\n']);
    assert.deepEqual([statuses(old.text), old.closed], [[200], true]);
    const kept = await raw(s, ['GET /1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\nGET /2 HTTP/1.0\r\n\r\n']);
    assert.deepEqual(statuses(kept.text), [200, 200]);
    assert.match(kept.text, /connection: keep-alive\r\n/);
    assert.equal(kept.closed, true, 'the second asked nothing: closed after it');
    const open = await raw(s, [GET()], (t) => t.includes('"body":""}'));
    assert.equal(open.closed, false, 'HTTP/1.1 stays open');
  } finally {
    await s.close();
  }
});

test('malformed requests: the status their fault has, a JSON {error, fix} body, and the connection closes', async () => {
  const s = await server();
  try {
    const cases: [string, number][] = [
      ['GET / HTTP/1.1\r\nHost: a\r\nX: a\rb\r\n\r\n', 400],
      ['GET / HTTP/1.1\r\nHost: a\r\n folded\r\n\r\n', 400],
      ['GET / HTTP/1.1\r\n\r\n', 400],
      [`GET /${'a'.repeat(9000)} HTTP/1.1\r\nHost: a\r\n\r\n`, 414],
      [`GET / HTTP/1.1\r\nHost: a\r\nX: ${'b'.repeat(17000)}\r\n\r\n`, 431],
      [`GET / HTTP/1.1\r\nHost: a\r\n${'X: y\r\n'.repeat(101)}\r\n`, 431],
      ['PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400],
      ['PUT / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc', 400],
      ['PUT / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n', 501],
      ['GET / HTTP/2.0\r\nHost: a\r\n\r\n', 505],
      ['PUT / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\nContent-Length: 1\r\n\r\nx', 417],
      ['\x00\x01\x02garbage\r\n\r\n', 400],
    ];
    for (const [request, status] of cases) {
      const { text, closed } = await raw(s, [request]);
      assert.deepEqual(statuses(text), [status], JSON.stringify(request.slice(0, 60)));
      assert.equal(closed, true);
      const body = JSON.parse(text.slice(text.indexOf('\r\n\r\n') + 4)) as { error: string; fix: string };
      assert.equal(typeof body.error, 'string');
      assert.equal(typeof body.fix, 'string');
    }
    // A malformed request after a good one: the good one is answered first.
    const { text } = await raw(s, [GET('/ok') + 'BAD\r\n\r\n']);
    assert.deepEqual(statuses(text), [200, 400]);
  } finally {
    await s.close();
  }
});

test('bodies: Content-Length and chunked (extensions, trailers), split anywhere', async () => {
  const s = await server();
  try {
    const put =
      'PUT /k HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n4;ext=1\r\nabcd\r\n3\r\nefg\r\n0\r\nTrailer-A: b\r\n\r\n' +
      GET('/after', 'Connection: close\r\n');
    const pieces = put.match(/[\s\S]{1,7}/g)!;
    const { text } = await raw(s, pieces, undefined, 1);
    const bodies = [...text.matchAll(/\r\n\r\n(\{.*?\})(?=HTTP|$)/g)].map((m) => JSON.parse(m[1]!) as { url: string; body: string });
    assert.deepEqual(
      bodies.map((b) => [b.url, b.body]),
      [
        ['/k', 'abcdefg'],
        ['/after', ''],
      ],
    );
    const cl = await raw(s, ['PUT /k HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhe', 'llo']);
    assert.match(cl.text, /"body":"hello"/);
  } finally {
    await s.close();
  }
});

test('a body past the limit: 413 without reading it, then the connection closes; a bad chunk is 400', async () => {
  const s = await server();
  try {
    const big = await raw(s, ['PUT /k HTTP/1.1\r\nHost: a\r\nContent-Length: 2000\r\n\r\n', Buffer.alloc(2000)]);
    assert.deepEqual([statuses(big.text), big.closed], [[413], true]);
    const chunks = await raw(s, [
      'PUT /k HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n',
      '400\r\n' + 'x'.repeat(1024) + '\r\n',
      '1\r\ny\r\n0\r\n\r\n',
    ]);
    assert.deepEqual([statuses(chunks.text), chunks.closed], [[413], true]);
    const badChunk = await raw(s, ['PUT /k HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcde\r\n']);
    assert.deepEqual([statuses(badChunk.text), badChunk.closed], [[400], true]);
  } finally {
    await s.close();
  }
});

test('Expect: 100-continue: 100 Continue once the handler reads the body, not when it answers without it', async () => {
  const s = await server((req, res) => {
    if (req.url === '/refuse') {
      res.writeHead(401, {});
      res.end('no');
      return;
    }
    echo(req, res);
  });
  try {
    const head = 'PUT /k HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n';
    const socket = net.connect(s.address.port, '127.0.0.1');
    await once(socket, 'connect');
    socket.write(head);
    const [first] = (await once(socket, 'data')) as [Buffer];
    assert.equal(first.toString(), 'HTTP/1.1 100 Continue\r\n\r\n');
    socket.write('hello');
    const [second] = (await once(socket, 'data')) as [Buffer];
    assert.match(second.toString(), /^HTTP\/1\.1 200 OK\r\n[\s\S]*"body":"hello"/);
    socket.destroy();
    const refused = await raw(s, [head.replace('/k', '/refuse')]);
    assert.deepEqual([statuses(refused.text), refused.closed], [[401], true], 'no 100; closed since the body was never read');
  } finally {
    await s.close();
  }
});

test('a streamed answer: chunked, write() false under backpressure then drain, close when the client goes', async () => {
  let drained = 0;
  let falses = 0;
  let closedSeen = false;
  const streamed = new Promise<void>((resolveStream) => {
    void (async () => {
      const s = await server((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/x-ndjson' });
        res.flushHeaders();
        res.on('close', () => {
          closedSeen = true;
          resolveStream();
        });
        const line = 'x'.repeat(64 * 1024) + '\n';
        const pump = () => {
          while (!closedSeen) {
            if (!res.write(line)) {
              falses++;
              res.once('drain', () => {
                drained++;
                pump();
              });
              return;
            }
          }
        };
        pump();
      });
      const socket = net.connect(s.address.port, '127.0.0.1');
      await once(socket, 'connect');
      socket.write(GET('/stream'));
      // Read nothing for a while: the server must see backpressure and wait.
      socket.pause();
      await sleep(100);
      assert.ok(falses >= 1, 'write() returned false');
      const before = drained;
      let got = '';
      socket.on('data', (c: Buffer) => (got += c.toString('latin1', 0, Math.min(c.length, 200))));
      socket.resume();
      await sleep(100);
      assert.ok(drained > before, 'drain came once the client read');
      assert.match(got, /^HTTP\/1\.1 200 OK\r\ncontent-type: application\/x-ndjson\r\ntransfer-encoding: chunked\r\n\r\n10001\r\nxxx/);
      socket.destroy();
      await sleep(50);
      await s.close();
    })();
  });
  await streamed;
  assert.ok(closedSeen, "'close' when the client went");
});

test('a streamed answer ends with the last chunk; the connection then takes the next request', async () => {
  const s = await server((req, res) => {
    if (req.url === '/stream') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('ab');
      res.write(Buffer.from('cd'));
      res.end();
    } else res.end('plain');
  });
  try {
    const { text } = await raw(s, [GET('/stream') + GET('/next', 'Connection: close\r\n')]);
    assert.match(text, /transfer-encoding: chunked\r\n\r\n2\r\nab\r\n2\r\ncd\r\n0\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
    assert.match(text, /plain$/);
    const old = await raw(s, ['GET /stream HTTP/1.0\r\n\r\n']);
    assert.match(old.text, /connection: close\r\n\r\nabcd$/, 'HTTP/1.0: no chunks, the end is the close');
  } finally {
    await s.close();
  }
});

test('timeouts: a head that does not finish gets 408; an idle kept-alive connection is closed', async () => {
  const s = await server(echo, { headersTimeoutMs: 100, keepAliveTimeoutMs: 100 });
  try {
    const slow = await raw(s, ['GET / HTTP/1.1\r\n', 'Host: a\r\n']);
    assert.deepEqual([statuses(slow.text), slow.closed], [[408], true]);
    const started = Date.now();
    const idle = await raw(s, [GET()]);
    assert.deepEqual([statuses(idle.text), idle.closed], [[200], true]);
    assert.ok(Date.now() - started >= 90, 'closed after the idle timeout, not at once');
    await sleep(20);
    assert.equal(s.connections, 0);
  } finally {
    await s.close();
  }
});

test('a handler that throws is a 500 and the connection closes; the server lives on', async () => {
  const s = await server((req, res) => {
    if (req.url === '/throw') throw new Error('boom');
    res.end('ok');
  });
  try {
    const { text, closed } = await raw(s, [GET('/throw')]);
    assert.deepEqual([statuses(text), closed], [[500], true]);
    assert.match((await raw(s, [GET('/', 'Connection: close\r\n')])).text, /ok$/);
  } finally {
    await s.close();
  }
});

test('random garbage on many connections never takes the server down', async () => {
  const s = await server();
  try {
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    for (let n = 0; n < 40; n++) {
      const bytes = Buffer.from(Array.from({ length: 1 + Math.floor(random() * 300) }, () => Math.floor(random() * 256)));
      const prefix = random() < 0.5 ? 'PUT / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n' : '';
      await raw(s, [prefix, bytes, '\r\n\r\n'], (t) => t.length > 0, 1);
    }
    const { text } = await raw(s, [GET('/', 'Connection: close\r\n')]);
    assert.deepEqual(statuses(text), [200]);
  } finally {
    await s.close();
  }
});

test('curl: GET, PUT from stdin (chunked), a large PUT (100-continue), HTTP/1.0', async (t) => {
  const run = (args: string[], input?: string) =>
    new Promise<string>((resolve, reject) => {
      const child = execFile('curl', ['-sS', '--max-time', '10', ...args], { maxBuffer: 64 * 1024 * 1024 }, (err, stdout) =>
        err ? reject(err) : resolve(stdout),
      );
      if (input !== undefined) child.stdin!.end(input);
    });
  try {
    await run(['--version']);
  } catch {
    t.skip('curl is not installed');
    return;
  }
  const s = await server(echo, { maxBodyBytes: 4 * 1024 * 1024 });
  try {
    const base = `http://127.0.0.1:${s.address.port}`;
    const get = JSON.parse(await run([`${base}/a?b=c`, '-H', 'X-Thing: v'])) as { url: string; headers: Record<string, string> };
    assert.deepEqual([get.url, get.headers['x-thing']], ['/a?b=c', 'v']);
    const chunked = JSON.parse(await run(['-T', '-', `${base}/k`], 'from stdin')) as { method: string; headers: Record<string, string>; body: string };
    assert.deepEqual([chunked.method, chunked.headers['transfer-encoding'], chunked.body], ['PUT', 'chunked', 'from stdin']);
    const large = 'z'.repeat(2 * 1024 * 1024);
    const big = JSON.parse(await run(['-X', 'PUT', '--data-binary', '@-', `${base}/big`], large)) as { headers: Record<string, string>; body: string };
    assert.equal(big.headers.expect, '100-continue');
    assert.equal(big.body.length, large.length);
    const old = JSON.parse(await run(['-0', `${base}/old`])) as { version: string };
    assert.equal(old.version, '1.0');
    const status = await run(['-o', '/dev/null', '-w', '%{http_code}', '-X', 'PUT', '--data-binary', '@-', `${base}/big`], 'y'.repeat(5 * 1024 * 1024));
    assert.equal(status, '413');
  } finally {
    await s.close();
  }
});

test('the writer refuses fields that would break the head: CR or LF in a value, framing fields of its own', async () => {
  const { ResponseWriter, HeaderFields } = await import('../../../../src/common/http1/response-writer.js');
  const written: string[] = [];
  const sink = { write: (d: string | Buffer) => (written.push(d.toString()), true), finished: () => {} };
  const res = new ResponseWriter(sink, '1.1', true);
  assert.throws(() => res.writeHead(200, { 'x-a': 'b\r\nset-cookie: c' }), TypeError);
  assert.throws(() => res.writeHead(200, { 'content-length': 3 }), TypeError);
  assert.throws(() => res.writeHead(200, { 'bad name': 'v' }), TypeError);
  assert.throws(() => res.writeHead(101, {}), RangeError);
  res.writeHead(201, new HeaderFields({ 'x-a': 'b', connection: 'close' }));
  res.end('{}');
  assert.deepEqual(written, ['HTTP/1.1 201 Created\r\nx-a: b\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}']);
});

test('a client that half-closes after its requests still gets every answer, then the connection closes', async () => {
  const s = await server((req, res) => {
    setTimeout(() => res.end(req.url), 10);
  });
  try {
    const socket = net.connect(s.address.port, '127.0.0.1');
    await once(socket, 'connect');
    let text = '';
    socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
    socket.end(GET('/one') + GET('/two'));
    await once(socket, 'close');
    assert.deepEqual(statuses(text), [200, 200]);
    assert.match(text, /\/one[\s\S]*\/two$/);
  } finally {
    await s.close();
  }
  const e = await server();
  try {
    const socket = net.connect(e.address.port, '127.0.0.1');
    await once(socket, 'connect');
    let text = '';
    socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
    socket.end('PUT /k HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\nabc');
    await once(socket, 'close');
    assert.deepEqual(statuses(text), [400], 'a body cut short by the half close is refused');
  } finally {
    await e.close();
  }
});
