/**
 * The surviving offsets of one partition's cleaned range, as the fetch view reads them on the
 * proxy's event loop: an immutable sorted array, searched in O(log n), never SQLite. The worker
 * builds one after every clean and transfers it (no copy) to the main thread, which swaps it in.
 *
 * Offsets are stored relative to the first survivor, in 32 bits when the range allows (every
 * real partition) and in 64-bit floats otherwise: 4 bytes per surviving key.
 */
import type { PartitionIndexView } from '../index-view.js';

export interface SurvivorSnapshot {
  cleanedUpTo: number;
  base: number;
  /** Offsets minus base, ascending: a Uint32Array's or Float64Array's buffer. */
  deltas: ArrayBuffer;
  wide: boolean;
}

const EMPTY = new Float64Array(0);

/**
 * Packs `count` ascending offsets from min to max (all below cleanedUpTo), handed over one by one
 * by `each`, straight into the compact array: no intermediate list, however many keys survive.
 */
export function buildSnapshot(cleanedUpTo: number, count: number, min: number, max: number, each: (visit: (offset: number) => void) => void): SurvivorSnapshot {
  const base = count > 0 ? min : 0;
  const wide = count > 0 && max - base > 0xffffffff;
  const deltas = wide ? new Float64Array(count) : new Uint32Array(count);
  let i = 0;
  each((offset) => {
    deltas[i++] = offset - base;
  });
  if (i !== count) throw new Error(`expected ${count} survivors, got ${i}`);
  return { cleanedUpTo, base, deltas: deltas.buffer as ArrayBuffer, wide };
}

/** A snapshot of ascending offsets already in memory. */
export function snapshotOf(cleanedUpTo: number, offsets: Float64Array): SurvivorSnapshot {
  const n = offsets.length;
  return buildSnapshot(cleanedUpTo, n, n > 0 ? offsets[0]! : 0, n > 0 ? offsets[n - 1]! : 0, (visit) => offsets.forEach((o) => visit(o)));
}

export class SurvivorSet implements PartitionIndexView {
  private readonly base: number;
  private readonly deltas: Uint32Array | Float64Array;
  private readonly upTo: number;

  constructor(snapshot: SurvivorSnapshot) {
    this.upTo = snapshot.cleanedUpTo;
    this.base = snapshot.base;
    this.deltas = snapshot.wide ? new Float64Array(snapshot.deltas) : new Uint32Array(snapshot.deltas);
  }

  get size(): number {
    return this.deltas.length;
  }

  cleanedUpTo(): number {
    return this.upTo;
  }

  survivors(from: number, to: number): Float64Array {
    const end = Math.min(to, this.upTo);
    if (end <= from) return EMPTY;
    const lo = this.lowerBound(from);
    const hi = this.lowerBound(end);
    if (hi <= lo) return EMPTY;
    const out = new Float64Array(hi - lo);
    for (let i = lo; i < hi; i++) out[i - lo] = this.base + this.deltas[i]!;
    return out;
  }

  nextVisible(offset: number): number {
    if (offset >= this.upTo) return offset;
    const i = this.lowerBound(offset);
    return i < this.deltas.length ? this.base + this.deltas[i]! : this.upTo;
  }

  /** The index of the first survivor >= offset. */
  private lowerBound(offset: number): number {
    const target = offset - this.base;
    const d = this.deltas;
    let lo = 0;
    let hi = d.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (d[mid]! < target) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}
