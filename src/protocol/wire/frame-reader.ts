/**
 * Splits a Kafka byte stream into size-prefixed frames. Frames are emitted WITH their 4-byte
 * size prefix so that pass-through forwarding writes the original bytes without rebuilding them.
 *
 * Two ways out:
 * - whole frames: chunks are gathered until the frame is complete and joined once (a 1 MiB Fetch
 *   response arriving in 64 KiB pieces costs one copy, not one per piece);
 * - streamed frames: a router sees the first bytes of each frame and may take the frame as a
 *   series of pieces (views of the incoming chunks, no copy) as they arrive, so a frame the proxy
 *   does not change is forwarded while the rest of it is still on the wire.
 */
export class FrameTooLargeError extends Error {
  constructor(
    readonly size: number,
    readonly max: number,
  ) {
    super(size < 0 ? `frame size ${size} is negative` : `frame of ${size} bytes exceeds the maximum of ${max} bytes`);
    this.name = 'FrameTooLargeError';
  }
}

export interface FrameRouter {
  /** Bytes of a frame (size prefix included) the router needs to see to decide. */
  peekBytes: number;
  /**
   * Given the first peekBytes of a frame and its total length, returns a sink that takes the
   * frame's bytes piece by piece (the first piece starts with the size prefix; the last one is
   * followed by a call with null), or null to receive the frame whole through onFrame.
   */
  stream(head: Buffer, frameBytes: number): ((piece: Buffer | null) => void) | null;
}

export class FrameReader {
  private chunks: Buffer[] = [];
  private have = 0;
  private need = -1;
  private decided = false;
  private sink: ((piece: Buffer | null) => void) | null = null;
  private streamLeft = 0;

  constructor(private readonly maxFrameBytes: number) {}

  /** Bytes buffered towards the next frame (for backpressure decisions and tests). */
  get buffered(): number {
    return this.have;
  }

  /** Feeds a chunk; calls onFrame for each complete frame. Throws FrameTooLargeError. */
  push(chunk: Buffer, onFrame: (frame: Buffer) => void, router?: FrameRouter): void {
    if (chunk.length === 0) return;
    if (this.sink) chunk = this.feedStream(chunk);
    if (chunk.length === 0) return;
    this.chunks.push(chunk);
    this.have += chunk.length;
    for (;;) {
      if (this.need < 0) {
        if (this.have < 4) return;
        const size = this.peek(4).readInt32BE(0);
        if (size < 0 || size > this.maxFrameBytes) throw new FrameTooLargeError(size, this.maxFrameBytes);
        this.need = size + 4;
        this.decided = false;
      }
      if (router && !this.decided && this.need > router.peekBytes) {
        if (this.have < router.peekBytes) return;
        this.decided = true;
        const sink = router.stream(this.peek(router.peekBytes), this.need);
        if (sink) {
          this.sink = sink;
          this.streamLeft = this.need;
          this.need = -1;
          const pending = this.chunks;
          this.chunks = [];
          this.have = 0;
          for (let i = 0; i < pending.length; i++) {
            const rest = this.feedStream(pending[i]!);
            if (!this.sink) {
              // The streamed frame ended in this chunk: what follows starts the next frames.
              this.chunks = rest.length > 0 ? [rest, ...pending.slice(i + 1)] : pending.slice(i + 1);
              this.have = this.chunks.reduce((n, c) => n + c.length, 0);
              break;
            }
          }
          continue;
        }
      }
      if (this.have < this.need) return;
      const frame = this.take(this.need);
      this.need = -1;
      onFrame(frame);
    }
  }

  /** Passes the streamed frame's share of a chunk to its sink; returns the rest of the chunk. */
  private feedStream(chunk: Buffer): Buffer {
    const n = Math.min(this.streamLeft, chunk.length);
    const sink = this.sink!;
    this.streamLeft -= n;
    if (this.streamLeft === 0) this.sink = null;
    sink(n === chunk.length ? chunk : chunk.subarray(0, n));
    if (this.streamLeft === 0) sink(null);
    return chunk.subarray(n);
  }

  /** The first n buffered bytes (a view when they sit in one chunk). */
  private peek(n: number): Buffer {
    const first = this.chunks[0]!;
    if (first.length >= n) return first.subarray(0, n);
    const head = Buffer.allocUnsafe(n);
    let filled = 0;
    for (const c of this.chunks) {
      const k = Math.min(n - filled, c.length);
      c.copy(head, filled, 0, k);
      filled += k;
      if (filled === n) break;
    }
    return head;
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
