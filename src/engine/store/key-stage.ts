/**
 * Key digests bound as statement parameters without a Buffer per row: a statement binding up to
 * `slots` keys binds fixed views into one staging buffer, refilled before each run (SQLite copies
 * a bound blob). A subarray per row was a measurable share of ingest, copies above all.
 */
import { KEY_DIGEST_BYTES } from './key-digest.js';

export class KeyStage {
  private readonly stage: Buffer;
  private readonly views: Buffer[] = [];

  constructor(slots: number) {
    this.stage = Buffer.alloc(slots * KEY_DIGEST_BYTES);
    for (let j = 0; j < slots; j++) this.views.push(this.stage.subarray(j * KEY_DIGEST_BYTES, (j + 1) * KEY_DIGEST_BYTES));
  }

  /** Slot j holding the digest at keys[row * 16, row * 16 + 16), to bind before the next run. */
  put(j: number, keys: Uint8Array, row: number): Buffer {
    const stage = this.stage;
    const to = j * KEY_DIGEST_BYTES;
    const from = row * KEY_DIGEST_BYTES;
    for (let b = 0; b < KEY_DIGEST_BYTES; b++) stage[to + b] = keys[from + b]!;
    return this.views[j]!;
  }

  /** Slots [0, n) holding the digests of rows [row, row + n), in one copy; slot j is view(j). */
  putRun(keys: Buffer, row: number, n: number): void {
    keys.copy(this.stage, 0, row * KEY_DIGEST_BYTES, (row + n) * KEY_DIGEST_BYTES);
  }

  view(j: number): Buffer {
    return this.views[j]!;
  }
}
