import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FrameReader, FrameTooLargeError } from '../../../src/protocol/wire/frame-reader.js';

function frame(payload: Buffer): Buffer {
  const out = Buffer.alloc(4 + payload.length);
  out.writeInt32BE(payload.length, 0);
  payload.copy(out, 4);
  return out;
}

test('frames split at every byte boundary come out whole and in order', () => {
  const frames = [Buffer.from('a'), Buffer.alloc(0), Buffer.alloc(300, 7), Buffer.from('hello world')].map(frame);
  const stream = Buffer.concat(frames);
  for (let cut = 1; cut < stream.length; cut++) {
    const reader = new FrameReader(1024);
    const got: Buffer[] = [];
    reader.push(stream.subarray(0, cut), (f) => got.push(Buffer.from(f)));
    reader.push(stream.subarray(cut), (f) => got.push(Buffer.from(f)));
    assert.deepEqual(got, frames, `cut at ${cut}`);
    assert.equal(reader.buffered, 0);
  }
});

test('byte-by-byte feeding yields the same frames', () => {
  const frames = [Buffer.alloc(5, 1), Buffer.alloc(70, 2)].map(frame);
  const stream = Buffer.concat(frames);
  const reader = new FrameReader(1024);
  const got: Buffer[] = [];
  for (let i = 0; i < stream.length; i++) reader.push(stream.subarray(i, i + 1), (f) => got.push(Buffer.from(f)));
  assert.deepEqual(got, frames);
});

test('a frame in one chunk is a view, not a copy', () => {
  const stream = Buffer.concat([frame(Buffer.alloc(10, 3)), frame(Buffer.alloc(4, 4))]);
  const got: Buffer[] = [];
  new FrameReader(1024).push(stream, (f) => got.push(f));
  assert.equal(got[0]!.buffer, stream.buffer);
  assert.equal(got[1]!.byteOffset, stream.byteOffset + 14);
});

test('oversized and negative sizes are refused before buffering the body', () => {
  const reader = new FrameReader(100);
  const big = Buffer.alloc(4);
  big.writeInt32BE(101, 0);
  assert.throws(() => reader.push(big, () => {}), FrameTooLargeError);
  const neg = Buffer.alloc(4);
  neg.writeInt32BE(-5, 0);
  assert.throws(() => new FrameReader(100).push(neg, () => {}), /negative/);
  const exact = frame(Buffer.alloc(100));
  let n = 0;
  new FrameReader(100).push(exact, () => n++);
  assert.equal(n, 1);
});

test('a router can take frames as pieces, at every chunk boundary, without disturbing the others', () => {
  const payloads = [Buffer.alloc(30, 1), Buffer.from('x'), Buffer.alloc(200, 2), Buffer.alloc(9, 3), Buffer.alloc(64, 4)];
  const frames = payloads.map(frame);
  const stream = Buffer.concat(frames);
  // Stream frames whose first payload byte is even; peek 6 bytes (size + 2).
  const streamed = (f: Buffer) => f.length > 6 && f[4]! % 2 === 0;
  for (let cut1 = 1; cut1 < stream.length; cut1 += 3) {
    for (const cut2 of [cut1 + 1, cut1 + 17, stream.length]) {
      const reader = new FrameReader(1024);
      const whole: Buffer[] = [];
      const pieces: Buffer[][] = [];
      const router = {
        peekBytes: 6,
        stream: (head: Buffer, bytes: number) => {
          if (head[4]! % 2 !== 0) return null;
          const parts: Buffer[] = [];
          pieces.push(parts);
          let ended = false;
          return (piece: Buffer | null) => {
            assert.equal(ended, false);
            if (piece === null) {
              ended = true;
              assert.equal(Buffer.concat(parts).length, bytes);
            } else parts.push(Buffer.from(piece));
          };
        },
      };
      for (const [a, b] of [
        [0, cut1],
        [cut1, Math.min(cut2, stream.length)],
        [Math.min(cut2, stream.length), stream.length],
      ] as const) {
        if (b > a) reader.push(stream.subarray(a, b), (f) => whole.push(Buffer.from(f)), router);
      }
      assert.deepEqual(
        whole,
        frames.filter((f) => !streamed(f)),
        `whole frames, cuts ${cut1}/${cut2}`,
      );
      assert.deepEqual(
        pieces.map((p) => Buffer.concat(p)),
        frames.filter(streamed),
        `streamed frames, cuts ${cut1}/${cut2}`,
      );
      assert.equal(reader.buffered, 0);
    }
  }
});
