/**
 * Key digest → (offset, tombstone) in typed arrays, open addressing: a partition's latest record
 * per key past the cleaner's horizon, kept for partitions the table API or conditional records
 * use (latest-records.ts). A digest is already a uniform hash, so its first word is the slot.
 * No allocation per entry, and some 50 bytes a key at the load it grows at.
 */
import { KEY_DIGEST_BYTES } from './key-digest.js';

const WORDS = KEY_DIGEST_BYTES / 4;
const INITIAL_SLOTS = 1024;

export class DigestMap {
  private slots = 0;
  private mask = 0;
  private words = new Uint32Array(0);
  private offsets = new Float64Array(0);
  /** 0 empty; 1 a value; 2 a tombstone. */
  private states = new Uint8Array(0);
  size = 0;

  constructor(slots = INITIAL_SLOTS) {
    this.allocate(slots);
  }

  private allocate(slots: number): void {
    this.slots = slots;
    this.mask = slots - 1;
    this.words = new Uint32Array(slots * WORDS);
    this.offsets = new Float64Array(slots);
    this.states = new Uint8Array(slots);
    this.size = 0;
  }

  /** The slot of the digest at buf[at, at + 16), or of the empty slot where it would go. */
  private slotOf(buf: Uint8Array, at: number): number {
    const w0 = word(buf, at);
    const w1 = word(buf, at + 4);
    const w2 = word(buf, at + 8);
    const w3 = word(buf, at + 12);
    const words = this.words;
    for (let s = w0 & this.mask; ; s = (s + 1) & this.mask) {
      if (this.states[s] === 0) return s;
      const b = s * WORDS;
      if (words[b] === w0 && words[b + 1] === w1 && words[b + 2] === w2 && words[b + 3] === w3) return s;
    }
  }

  /** Records the key's latest record: at `offset`, a tombstone or not. */
  set(buf: Uint8Array, at: number, offset: number, tombstone: boolean): void {
    if ((this.size + 1) * 2 > this.slots) this.grow();
    const s = this.slotOf(buf, at);
    if (this.states[s] === 0) {
      const b = s * WORDS;
      this.words[b] = word(buf, at);
      this.words[b + 1] = word(buf, at + 4);
      this.words[b + 2] = word(buf, at + 8);
      this.words[b + 3] = word(buf, at + 12);
      this.size++;
    }
    this.offsets[s] = offset;
    this.states[s] = tombstone ? 2 : 1;
  }

  /** The key's latest record as set, or undefined. */
  get(buf: Uint8Array, at = 0): { offset: number; tombstone: boolean } | undefined {
    const s = this.slotOf(buf, at);
    const state = this.states[s];
    return state === 0 ? undefined : { offset: this.offsets[s]!, tombstone: state === 2 };
  }

  private grow(): void {
    const { words, offsets, states, slots } = this;
    this.allocate(slots * 2);
    const bytes = new Uint8Array(words.buffer);
    for (let s = 0; s < slots; s++) {
      if (states[s] === 0) continue;
      this.set(bytes, s * KEY_DIGEST_BYTES, offsets[s]!, states[s] === 2);
    }
  }
}

function word(b: Uint8Array, i: number): number {
  return (b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)) >>> 0;
}
