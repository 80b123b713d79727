/**
 * The surviving offsets of one partition's cleaned range, as the fetch view reads them on the
 * proxy's event loop: immutable, in memory, never SQLite. The worker builds one after every clean
 * and transfers it (no copy) to the main thread, which swaps it in.
 *
 * Two encodings, whichever is smaller for the partition at hand:
 * - sorted offsets relative to the first survivor, 4 bytes per surviving key (8 when a
 *   partition's offsets span more than 32 bits), searched in O(log n): keys updated often;
 * - a bitmap over the offsets from the first survivor to the last, one bit per offset: keys
 *   mostly written once, where nearly every offset survives (10M such keys: 1.2 MiB, not 40).
 */
import type { CarriedSnapshot, LogEnd, PartitionIndexView } from './index-view.js';
import { firstAtLeast } from '../../common/sorted-search.js';

export type SurvivorEncoding = 'u32' | 'f64' | 'bitmap';

export interface SurvivorSnapshot {
  cleanedUpTo: number;
  carried?: CarriedSnapshot;
  /** The first surviving offset (0 when none survive). */
  base: number;
  count: number;
  encoding: SurvivorEncoding;
  /**
   * u32, f64: offsets minus base, ascending (a Uint32Array's or Float64Array's buffer);
   * bitmap: Uint32Array words, bit i (word i >> 5, bit i & 31) set when base + i survives.
   */
  data: ArrayBuffer;
}

/** Bitmaps index bits with 32-bit arithmetic. */
const MAX_BITMAP_BITS = 2 ** 31;

/**
 * Packs `count` ascending offsets from min to max (all below cleanedUpTo), handed over one by one
 * by `each`, straight into the smaller encoding: no intermediate list, however many keys survive.
 */
export function buildSnapshot(cleanedUpTo: number, count: number, min: number, max: number, each: (visit: (offset: number) => void) => void): SurvivorSnapshot {
  const base = count > 0 ? min : 0;
  const span = count > 0 ? max - base + 1 : 0;
  const wide = span > 2 ** 32;
  const bitmapBytes = Math.ceil(span / 32) * 4;
  let seen = 0;
  let data: ArrayBuffer;
  let encoding: SurvivorEncoding;
  if (count > 0 && span <= MAX_BITMAP_BITS && bitmapBytes < count * 4) {
    const words = new Uint32Array(bitmapBytes / 4);
    each((offset) => {
      const i = offset - base;
      words[i >>> 5]! |= 1 << (i & 31);
      seen++;
    });
    data = words.buffer as ArrayBuffer;
    encoding = 'bitmap';
  } else {
    const deltas = wide ? new Float64Array(count) : new Uint32Array(count);
    each((offset) => {
      deltas[seen++] = offset - base;
    });
    data = deltas.buffer as ArrayBuffer;
    encoding = wide ? 'f64' : 'u32';
  }
  if (seen !== count) throw new Error(`expected ${count} survivors, got ${seen}`);
  return { cleanedUpTo, base, count, encoding, data };
}

/** A snapshot of ascending offsets already in memory. */
export function snapshotOf(cleanedUpTo: number, offsets: Float64Array): SurvivorSnapshot {
  const n = offsets.length;
  return buildSnapshot(cleanedUpTo, n, n > 0 ? offsets[0]! : 0, n > 0 ? offsets[n - 1]! : 0, (visit) => offsets.forEach((o) => visit(o)));
}

const EMPTY = new Float64Array(0);

/** A set of offsets, whatever its encoding. */
interface OffsetSet {
  /** The offsets in [from, to), ascending. */
  between(from: number, to: number): Float64Array;
  /** How many offsets lie in [from, to). */
  count(from: number, to: number): number;
  /** The first offset at or after `offset`, or -1. */
  firstFrom(offset: number): number;
}

export class SurvivorSet implements PartitionIndexView {
  readonly size: number;
  private readonly upTo: number;
  private readonly offsets: OffsetSet;
  private readonly carry: CarriedSnapshot | undefined;

  constructor(snapshot: SurvivorSnapshot) {
    this.upTo = snapshot.cleanedUpTo;
    this.carry = snapshot.carried;
    this.size = snapshot.count;
    const { base, data } = snapshot;
    if (snapshot.encoding === 'bitmap') this.offsets = new OffsetBitmap(base, new Uint32Array(data));
    else this.offsets = new SortedOffsets(base, snapshot.encoding === 'f64' ? new Float64Array(data) : new Uint32Array(data));
  }

  cleanedUpTo(): number {
    return this.upTo;
  }

  survivors(from: number, to: number): Float64Array {
    const end = Math.min(to, this.upTo);
    return end <= from ? EMPTY : this.offsets.between(from, end);
  }

  survivorCount(from: number, to: number): number {
    const end = Math.min(to, this.upTo);
    return end <= from ? 0 : this.offsets.count(from, end);
  }

  nextVisible(offset: number): number {
    if (offset >= this.upTo) return offset;
    const next = this.offsets.firstFrom(offset);
    return next < 0 ? this.upTo : next;
  }

  carried(): CarriedSnapshot | undefined {
    return this.carry;
  }

  /** Kept by SurvivorIndex: a log end comes more often than snapshots, and outlives them. */
  logEnd: LogEnd | undefined;

  end(): LogEnd | undefined {
    return this.logEnd;
  }
}

/** Whether the copies of the last whole pass answer for `offset`: at or past the topic's own start, below copiesBelow. */
export function copiesHold(carried: CarriedSnapshot | undefined, offset: number): carried is CarriedSnapshot {
  return carried !== undefined && carried.copiesFrom >= 0 && offset >= carried.topicStart && offset < carried.copiesBelow;
}

/** Where to start reading a carried partition's copies for its records from `offset` on. */
export function copiesReadFrom(carried: CarriedSnapshot, offset: number): number {
  const m = carried.marks;
  let lo = 0;
  let hi = m.length / 2;
  // The last mark at or before the offset: every copy between it and the offset's is of a smaller offset.
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (m[mid * 2]! <= offset) lo = mid + 1;
    else hi = mid;
  }
  return lo === 0 ? carried.copiesFrom : m[(lo - 1) * 2 + 1]!;
}

class SortedOffsets implements OffsetSet {
  constructor(
    private readonly base: number,
    private readonly deltas: Uint32Array | Float64Array,
  ) {}

  count(from: number, to: number): number {
    return Math.max(0, this.lowerBound(to) - this.lowerBound(from));
  }

  between(from: number, to: number): Float64Array {
    const lo = this.lowerBound(from);
    const hi = this.lowerBound(to);
    if (hi <= lo) return EMPTY;
    const out = new Float64Array(hi - lo);
    for (let i = lo; i < hi; i++) out[i - lo] = this.base + this.deltas[i]!;
    return out;
  }

  firstFrom(offset: number): number {
    const i = this.lowerBound(offset);
    return i < this.deltas.length ? this.base + this.deltas[i]! : -1;
  }

  /** The index of the first offset >= offset. */
  private lowerBound(offset: number): number {
    return firstAtLeast(this.deltas, offset - this.base);
  }
}

/** Words per block of the bitmap's rank table: 2048 offsets. */
const BLOCK_WORDS = 64;

class OffsetBitmap implements OffsetSet {
  private readonly bits: number;
  /** Set bits before each block, so counting and skipping empty stretches go a block at a time. */
  private readonly blockRank: Uint32Array;

  constructor(
    private readonly base: number,
    private readonly words: Uint32Array,
  ) {
    this.bits = words.length * 32;
    const blocks = Math.ceil(words.length / BLOCK_WORDS);
    this.blockRank = new Uint32Array(blocks + 1);
    for (let b = 0, rank = 0; b < blocks; b++) {
      const end = Math.min((b + 1) * BLOCK_WORDS, words.length);
      for (let w = b * BLOCK_WORDS; w < end; w++) rank += popcount(words[w]!);
      this.blockRank[b + 1] = rank;
    }
  }

  count(from: number, to: number): number {
    const lo = Math.max(from - this.base, 0);
    const hi = Math.min(to - this.base, this.bits);
    return hi <= lo ? 0 : this.rank(hi) - this.rank(lo);
  }

  between(from: number, to: number): Float64Array {
    const lo = Math.max(from - this.base, 0);
    const hi = Math.min(to - this.base, this.bits);
    if (hi <= lo) return EMPTY;
    const n = this.rank(hi) - this.rank(lo);
    if (n === 0) return EMPTY;
    const out = new Float64Array(n);
    let k = 0;
    for (let i = this.nextSet(lo); k < n; i = this.nextSet(i + 1)) out[k++] = this.base + i;
    return out;
  }

  firstFrom(offset: number): number {
    const i = this.nextSet(Math.max(offset - this.base, 0));
    return i < 0 ? -1 : this.base + i;
  }

  /** Set bits in [0, i). */
  private rank(i: number): number {
    const w = i >>> 5;
    let r = this.blockRank[Math.floor(w / BLOCK_WORDS)]!;
    for (let x = w - (w % BLOCK_WORDS); x < w; x++) r += popcount(this.words[x]!);
    if (i & 31) r += popcount(this.words[w]! & ((1 << (i & 31)) - 1));
    return r;
  }

  /** The first set bit at or after i, or -1. */
  private nextSet(i: number): number {
    if (i >= this.bits) return -1;
    let w = i >>> 5;
    let word = this.words[w]! & (-1 << (i & 31));
    for (;;) {
      if (word !== 0) return (w << 5) + ctz(word);
      w++;
      if (w >= this.words.length) return -1;
      if (w % BLOCK_WORDS === 0) {
        // Whole blocks without survivors are stepped over by their rank.
        let b = w / BLOCK_WORDS;
        while (b < this.blockRank.length - 1 && this.blockRank[b + 1] === this.blockRank[b]) b++;
        if (b >= this.blockRank.length - 1) return -1;
        w = b * BLOCK_WORDS;
      }
      word = this.words[w]!;
    }
  }
}

function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  return (((x + (x >>> 4)) & 0x0f0f0f0f) * 0x01010101) >>> 24;
}

/** Trailing zeros of a non-zero 32-bit word. */
function ctz(x: number): number {
  return 31 - Math.clz32(x & -x);
}
