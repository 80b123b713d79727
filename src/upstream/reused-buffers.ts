/**
 * Large buffers handed out, given back once their user is done with them, and handed out again:
 * response frames the fetch view reads from the upstream (megabytes of the raw log for every
 * answer it puts together). A new buffer of megabytes costs a page fault for every 4 KiB the
 * first time it is written, so filling a new one costs far more than refilling one kept
 * (docs/performance.md), and its memory counts towards the next full garbage collection.
 *
 * give() takes a buffer back once nothing refers to it or to any view of it any more: whatever is
 * written into it next overwrites it. A buffer never given back is collected as usual. Kept
 * buffers are let go after a while without use, so an idle proxy holds none.
 */
export interface ReusedBuffersOptions {
  /** The most bytes kept for reuse. */
  keepBytes: number;
  /** Kept buffers are let go after this long without a take(). */
  idleMs: number;
}

const SMALL_BYTES = 64 << 10;

export class ReusedBuffers {
  private readonly kept: Buffer[] = [];
  private keptBytes = 0;
  /** The memory of buffers handed out, by which give() knows them. */
  private readonly lent = new WeakSet<ArrayBufferLike>();
  private idle: NodeJS.Timeout | null = null;

  constructor(private readonly opts: ReusedBuffersOptions) {}

  /**
   * A buffer of exactly `size` bytes: part of the smallest kept buffer that holds it, or a new
   * one. Small buffers are cheap to allocate and are neither kept nor lent from the kept ones.
   */
  take(size: number): Buffer {
    if (size < SMALL_BYTES) return Buffer.allocUnsafe(size);
    let best = -1;
    for (let i = 0; i < this.kept.length; i++) {
      const length = this.kept[i]!.length;
      if (length >= size && (best < 0 || length < this.kept[best]!.length)) best = i;
    }
    let whole: Buffer;
    if (best >= 0) {
      whole = this.kept.splice(best, 1)[0]!;
      this.keptBytes -= whole.length;
    } else {
      // Not from Node's shared pool: the buffer must own its memory to be known again by it.
      whole = Buffer.allocUnsafeSlow(size);
    }
    this.lent.add(whole.buffer);
    this.stillInUse();
    return whole.subarray(0, size);
  }

  /** Takes back the buffer `view` lies in (a buffer from take(), or any view of one). */
  give(view: Uint8Array): void {
    const memory = view.buffer;
    if (!this.lent.has(memory)) return;
    this.lent.delete(memory);
    if (this.keptBytes + memory.byteLength > this.opts.keepBytes) return;
    this.kept.push(Buffer.from(memory));
    this.keptBytes += memory.byteLength;
    this.stillInUse();
  }

  /** Bytes kept for reuse. */
  get keeping(): number {
    return this.keptBytes;
  }

  private stillInUse(): void {
    if (this.idle) this.idle.refresh();
    else this.idle = setTimeout(() => this.letGo(), this.opts.idleMs).unref();
  }

  private letGo(): void {
    this.idle = null;
    this.kept.length = 0;
    this.keptBytes = 0;
  }
}
