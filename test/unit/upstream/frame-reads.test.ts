import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { FrameTooLargeError } from '../../../src/protocol/wire/frame-reader.js';
import { frameReads } from '../../../src/upstream/frame-reads.js';

function frame(payload: Buffer): Buffer {
  const out = Buffer.alloc(4 + payload.length);
  out.writeInt32BE(payload.length, 0);
  payload.copy(out, 4);
  return out;
}

/** Feeds `stream` as node would: each read fills at most what the buffer offers, and at most `cut(i)` bytes. */
function feed(opts: net.OnReadOpts, stream: Buffer, cut: (read: number) => number): boolean {
  let at = 0;
  for (let read = 0; at < stream.length; read++) {
    const target = typeof opts.buffer === 'function' ? opts.buffer() : opts.buffer;
    const n = Math.min(target.length, cut(read), stream.length - at);
    stream.copy(target as Buffer, 0, at, at + n);
    at += n;
    if (opts.callback(n, target) === false) return false;
  }
  return true;
}

// A response holds a correlation id at least.
const payloads = [Buffer.from('abcd'), Buffer.alloc(300, 7), Buffer.alloc(200_000, 9), Buffer.from('hello'), Buffer.alloc(70_000, 3), Buffer.alloc(4, 1)];
const frames = payloads.map(frame);
const stream = Buffer.concat(frames);

test('frames come out whole and in order whatever the read sizes', () => {
  for (const size of [1, 2, 3, 5, 4096, 65_536, 1 << 20]) {
    const got: Buffer[] = [];
    const ok = feed(
      frameReads(
        1 << 20,
        (f) => got.push(f),
        (err) => assert.fail(err),
      ),
      stream,
      () => size,
    );
    assert.equal(ok, true);
    assert.deepEqual(got, frames, `reads of ${size} bytes`);
  }
  for (let seed = 1; seed <= 20; seed++) {
    let x = seed;
    const random = () => ((x = (x * 1103515245 + 12345) & 0x7fffffff) % 100_000) + 1;
    const got: Buffer[] = [];
    feed(
      frameReads(
        1 << 20,
        (f) => got.push(f),
        (err) => assert.fail(err),
      ),
      stream,
      random,
    );
    assert.deepEqual(got, frames, `random reads, seed ${seed}`);
  }
});

test('a large frame is read into its own buffer: the read after its size prefix is offered the rest of it', () => {
  const reads = frameReads(
    1 << 20,
    () => {},
    (err) => assert.fail(err),
  );
  const big = frame(Buffer.alloc(200_000, 1));
  const first = reads.buffer as () => Buffer;
  const into = first();
  big.copy(into, 0, 0, 1000);
  reads.callback(1000, into);
  assert.equal(first().length, big.length - 1000);
});

test('an oversized, negative or too small size is reported and reading stops', () => {
  for (const size of [101, -5, 3]) {
    const errors: Error[] = [];
    const head = Buffer.alloc(8);
    head.writeInt32BE(size, 0);
    const ok = feed(
      frameReads(
        100,
        () => assert.fail('no frame expected'),
        (err) => errors.push(err),
      ),
      head,
      () => 8,
    );
    assert.equal(ok, false);
    assert.equal(errors.length, 1);
    if (size === 3) assert.match(errors[0]!.message, /shorter than a correlation id/);
    else assert.ok(errors[0] instanceof FrameTooLargeError);
  }
});

test('each frame is read into the buffer chosen for its correlation id', () => {
  const chosen: [number, number][] = [];
  const own = Buffer.alloc(frames[2]!.length + 100);
  const got: Buffer[] = [];
  const opts = frameReads(
    1 << 20,
    (f) => got.push(f),
    (err) => assert.fail(err),
    (size, correlationId) => {
      chosen.push([size, correlationId]);
      return size === own.length - 100 ? own.subarray(0, size) : Buffer.alloc(size);
    },
  );
  feed(opts, stream, () => 1000);
  assert.deepEqual(
    chosen,
    frames.map((f) => [f.length, f.readInt32BE(4)]),
  );
  assert.deepEqual(got, frames);
  assert.equal(got[2]!.buffer, own.buffer, 'the frame is the buffer it was read into');
});

test('what the frame handler throws is reported, and nothing more is read', () => {
  const errors: Error[] = [];
  const opts = frameReads(
    1 << 20,
    () => {
      throw new Error('bad response');
    },
    (err) => errors.push(err),
  );
  assert.equal(
    feed(opts, stream, () => 64),
    false,
  );
  assert.deepEqual(
    errors.map((e) => e.message),
    ['bad response'],
  );
});

test('frames arrive whole through a real socket', async () => {
  const server = net.createServer((s) => {
    // Several writes, so that reads split frames at places of the kernel's choosing.
    for (let at = 0; at < stream.length; at += 50_000) s.write(stream.subarray(at, at + 50_000));
    s.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const got: Buffer[] = [];
    const { port } = server.address() as net.AddressInfo;
    await new Promise<void>((resolve, reject) => {
      const fail = (err: Error) => {
        socket.destroy();
        reject(err);
      };
      const socket = net.connect({ host: '127.0.0.1', port, onread: frameReads(1 << 20, (f) => got.push(f), fail) });
      socket.on('error', fail);
      socket.on('close', () => resolve());
    });
    assert.deepEqual(got, frames);
  } finally {
    server.close();
  }
});
