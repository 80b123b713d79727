/**
 * Bytes in pieces: a Fetch answer's records put together from batches of several reads, or a
 * frame holding such byte fields (megabytes) between its encoded rest. Joining the pieces would
 * copy every byte into memory just allocated for it, only for a socket to copy them once more;
 * the writer takes a byte field's pieces as they are, and a socket writes a frame's pieces
 * together (writev).
 *
 * The pieces may be views of buffers that are to be reused (the fetch view's reads of the store):
 * whoever is last to read them calls done() once it no longer does, whereupon `release` gives
 * those buffers back. A frame's done() releases every byte field it holds. Pieces never done are
 * collected as usual.
 */
export class ByteParts {
  private release: (() => void) | undefined;

  constructor(
    readonly parts: readonly Buffer[],
    /** The bytes of all the parts together (a frame's size prefix included). */
    readonly length: number,
    release?: () => void,
  ) {
    let sum = 0;
    for (const part of parts) sum += part.length;
    // A length that is not the parts' would frame every byte after them wrongly.
    if (sum !== length) throw new RangeError(`byte parts of ${sum} bytes said to be ${length}`);
    this.release = release;
  }

  /** The parts, whatever their length together. */
  static of(parts: readonly Buffer[], release?: () => void): ByteParts {
    let length = 0;
    for (const part of parts) length += part.length;
    return new ByteParts(parts, length, release);
  }

  /** Whether done() gives buffers back: the pieces must then be read before it, and not after. */
  get releases(): boolean {
    return this.release !== undefined;
  }

  /** The bytes in one buffer (a copy), for whatever needs them whole. */
  whole(): Buffer {
    return Buffer.concat(this.parts, this.length);
  }

  /** Nothing reads the parts any more: the buffers they are views of go back (once). */
  done(): void {
    const release = this.release;
    this.release = undefined;
    release?.();
  }
}

/**
 * Puts records in a decoded body that is to be encoded again. A decoded body's type knows one
 * buffer, as decoding gives; the encoder takes parts too (BodyInit), and nothing reads the
 * records of a body on its way out.
 */
export function putRecords(into: { records: Buffer | null }, records: Buffer | ByteParts | null): void {
  const outgoing: { records: Buffer | ByteParts | null } = into;
  outgoing.records = records;
}

/** A frame going out: one buffer, or its parts. */
export type OutgoingFrame = Buffer | ByteParts;

/** The frame in one buffer. */
export function wholeFrame(frame: OutgoingFrame): Buffer {
  return frame instanceof ByteParts ? frame.whole() : frame;
}
