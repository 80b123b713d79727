/**
 * Splits a Kafka byte stream into size-prefixed frames. Frames are emitted WITH their 4-byte
 * size prefix so that pass-through forwarding writes the original bytes without rebuilding them.
 *
 * Chunks are gathered until a whole frame is present and then joined once: a 1 MiB Fetch
 * response arriving in 64 KiB pieces costs one copy, not one per piece.
 */
export class FrameTooLargeError extends Error {
  constructor(readonly size: number, readonly max: number) {
    super(size < 0 ? `frame size ${size} is negative` : `frame of ${size} bytes exceeds the maximum of ${max} bytes`);
    this.name = 'FrameTooLargeError';
  }
}

export class FrameReader {
  private chunks: Buffer[] = [];
  private have = 0;
  private need = -1;

  constructor(private readonly maxFrameBytes: number) {}

  /** Bytes buffered towards the next frame (for backpressure decisions and tests). */
  get buffered(): number {
    return this.have;
  }

  /** Feeds a chunk; calls onFrame for each complete frame. Throws FrameTooLargeError. */
  push(chunk: Buffer, onFrame: (frame: Buffer) => void): void {
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.have += chunk.length;
    for (;;) {
      if (this.need < 0) {
        if (this.have < 4) return;
        const size = this.peekSize();
        if (size < 0 || size > this.maxFrameBytes) throw new FrameTooLargeError(size, this.maxFrameBytes);
        this.need = size + 4;
      }
      if (this.have < this.need) return;
      const frame = this.take(this.need);
      this.need = -1;
      onFrame(frame);
    }
  }

  private peekSize(): number {
    const first = this.chunks[0]!;
    if (first.length >= 4) return first.readInt32BE(0);
    const head = Buffer.allocUnsafe(4);
    let filled = 0;
    for (const c of this.chunks) {
      const n = Math.min(4 - filled, c.length);
      c.copy(head, filled, 0, n);
      filled += n;
      if (filled === 4) break;
    }
    return head.readInt32BE(0);
  }

  private take(n: number): Buffer {
    this.have -= n;
    const first = this.chunks[0]!;
    if (first.length >= n) {
      if (first.length === n) this.chunks.shift();
      else this.chunks[0] = first.subarray(n);
      return first.subarray(0, n);
    }
    const out = Buffer.allocUnsafe(n);
    let filled = 0;
    while (filled < n) {
      const c = this.chunks[0]!;
      const want = n - filled;
      if (c.length <= want) {
        c.copy(out, filled);
        filled += c.length;
        this.chunks.shift();
      } else {
        c.copy(out, filled, 0, want);
        this.chunks[0] = c.subarray(want);
        filled += want;
      }
    }
    return out;
  }
}
