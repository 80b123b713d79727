/**
 * Whole response frames for the proxy's own upstream connections, read where they will stay: once
 * a frame's size prefix and correlation id have arrived, the socket reads the rest of the frame
 * straight into a buffer of its size (one the request brought along, or a new one). A Fetch
 * response of megabytes (the fetch view reading on, the indexer tailing) then costs neither a
 * series of 64-256 KiB read buffers nor the copy that joins them, and one read call takes as much
 * of the frame as the socket holds: less CPU per response, and less again when read into a buffer
 * kept from an earlier read (reused-buffers.ts; docs/performance.md).
 *
 * Reads between frames land in one reused buffer; the head of the next frame is taken from there.
 */
import type net from 'node:net';
import { ProtocolError } from '../protocol/errors.js';
import { FrameTooLargeError } from '../protocol/wire/frame-reader.js';

const BETWEEN_FRAMES_BYTES = 64 << 10;
/** The size prefix and the correlation id: what a frame's buffer is chosen by. */
const HEAD_BYTES = 8;

/** A buffer of exactly `frameBytes` for the response to `correlationId`. */
export type FrameAllocator = (frameBytes: number, correlationId: number) => Buffer;

const newBuffer: FrameAllocator = (frameBytes) => Buffer.allocUnsafe(frameBytes);

/**
 * Socket read options that hand each complete frame (size prefix included) to `onFrame`. An
 * invalid size, or anything `onFrame` throws, goes to `onError`, and reading stops.
 */
export function frameReads(
  maxFrameBytes: number,
  onFrame: (frame: Buffer) => void,
  onError: (err: Error) => void,
  allocate: FrameAllocator = newBuffer,
): net.OnReadOpts {
  const between = Buffer.allocUnsafeSlow(BETWEEN_FRAMES_BYTES);
  const head = Buffer.alloc(HEAD_BYTES);
  let headHave = 0;
  let frame: Buffer | null = null;
  let filled = 0;
  let failed = false;

  const complete = () => {
    const done = frame!;
    frame = null;
    onFrame(done);
  };

  const start = () => {
    const size = head.readInt32BE(0);
    if (size < 0 || size > maxFrameBytes) throw new FrameTooLargeError(size, maxFrameBytes);
    if (size < HEAD_BYTES - 4) throw new ProtocolError(`upstream response of ${size} bytes is shorter than a correlation id`);
    frame = allocate(size + 4, head.readInt32BE(4));
    head.copy(frame, 0);
    filled = HEAD_BYTES;
    if (filled === frame.length) complete();
  };

  /** Takes what `between` holds up to `end`: the rest of a frame, frame heads, whole frames. */
  const consume = (end: number) => {
    let at = 0;
    while (at < end) {
      if (frame) {
        const n = Math.min(frame.length - filled, end - at);
        between.copy(frame, filled, at, at + n);
        filled += n;
        at += n;
        if (filled === frame.length) complete();
        continue;
      }
      const n = Math.min(HEAD_BYTES - headHave, end - at);
      between.copy(head, headHave, at, at + n);
      headHave += n;
      at += n;
      if (headHave < HEAD_BYTES) return;
      headHave = 0;
      start();
    }
  };

  return {
    // Node asks for the next buffer after each callback; a frame being read is read into itself.
    buffer: () => (frame ? frame.subarray(filled) : between),
    callback: (n) => {
      if (failed) return false;
      try {
        if (frame) {
          filled += n;
          if (filled === frame.length) complete();
        } else {
          consume(n);
        }
        return true;
      } catch (err) {
        failed = true;
        onError(err as Error);
        return false;
      }
    },
  };
}
