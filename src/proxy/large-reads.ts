/**
 * Large reads for upstream sockets, where Fetch responses of megabytes arrive. Node reads a socket
 * 64 KiB at a time: relaying a gigabyte costs some 16,000 read calls and as many callbacks, and the
 * kernel time of those calls is most of what the proxy spends on a consumer. Reads of up to
 * 256 KiB cut the calls, and with them the CPU per relayed gigabyte (docs/performance.md).
 *
 * A read that filled a good part of its buffer keeps it (the chunk is a view, no copy) and the
 * next read gets a fresh one; a small read is copied out so that a 100-byte response does not pin
 * a large buffer for as long as something holds a view of it.
 */
import type net from 'node:net';

const READ_BYTES = 256 << 10;
/** Reads below this many bytes are copied out of the read buffer, which is then read into again. */
const KEEP_BYTES = 64 << 10;

export function largeReads(onData: (chunk: Buffer) => void): net.OnReadOpts {
  let buffer = Buffer.allocUnsafeSlow(READ_BYTES);
  return {
    // Node asks for the next buffer after each callback: a kept buffer has been replaced by then.
    buffer: () => buffer,
    callback: (n) => {
      if (n < KEEP_BYTES) {
        onData(Buffer.from(buffer.subarray(0, n)));
      } else {
        const chunk = buffer.subarray(0, n);
        buffer = Buffer.allocUnsafeSlow(READ_BYTES);
        onData(chunk);
      }
      return true;
    },
  };
}
