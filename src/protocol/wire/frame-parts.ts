/**
 * A frame handed to a socket in pieces: the large byte fields it holds (a Fetch answer's
 * records, megabytes) between the encoded rest, each as it is. Joining them into one buffer
 * would copy every byte into memory just allocated for it, only for the socket to copy them once
 * more; a socket writes the pieces together (writev) instead.
 */
export class FrameParts {
  constructor(
    readonly parts: readonly Buffer[],
    /** The frame's bytes, its size prefix included. */
    readonly length: number,
  ) {}

  /** The frame in one buffer (a copy), for whatever needs it whole. */
  whole(): Buffer {
    return Buffer.concat(this.parts, this.length);
  }
}

/** A frame going out: one buffer, or its parts. */
export type OutgoingFrame = Buffer | FrameParts;

/** The frame in one buffer. */
export function wholeFrame(frame: OutgoingFrame): Buffer {
  return frame instanceof FrameParts ? frame.whole() : frame;
}
