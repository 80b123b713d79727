/**
 * Whether a figure sampled through a soak (resident memory, JS heap, index files) stays flat.
 *
 * A garbage-collected heap saws up and down: V8 lets garbage pile up for minutes before a full
 * collection (the proxy starts with a 64 MiB old space; in a 12-minute soak collections came
 * after 2, then after more than 8 minutes), and RSS follows it. So neither the slope of the raw
 * samples nor their lowest value over a stretch says whether memory is kept: what a process
 * keeps is what is left right after a full collection. The soak marks the samples that follow
 * one: the main thread's used heap shrank by a quarter or more since the sample before (its
 * reserved heap rarely shrinks that much once the process has grown: a 30-minute soak at a
 * thousand partitions saw it happen not once).
 *
 * The rule: the first fifth of the soak is warm-up (consumer groups reading every topic from
 * offset 0, the first rounds of cleaning, caches and write-ahead logs filling to their budgets)
 * and is left out; of the rest, the lowest value right after a full collection in the second
 * half is compared with the lowest in the first half, and the figure is flat when it grew by at
 * most 2 MiB or 1% of the mean per 10 minutes, whichever is more (2 MiB per 10 minutes is about
 * 300 MiB a day). Without a full collection in each half, or in a soak under 10 minutes, there
 * is no verdict. A figure the collector does not touch (the index files) is judged by the
 * lowest sample of each half instead.
 */
export const WARM_UP_SHARE = 0.2;
export const FLAT_BYTES_PER_10_MIN = 2 * 2 ** 20;
export const FLAT_SHARE_PER_10_MIN = 0.01;
export const MIN_VERDICT_SECONDS = 600;
/** A full collection shows as the main thread's used heap shrinking by this share from one sample to the next. */
export const COLLECTION_SHRINK = 0.25;

export const FLAT_RULE =
  `after the warm-up (the first ${WARM_UP_SHARE * 100}% of the soak), the lowest value right after a full garbage collection in the ` +
  `second half may exceed the lowest in the first half by at most ${FLAT_BYTES_PER_10_MIN / 2 ** 20} MiB or ${FLAT_SHARE_PER_10_MIN * 100}% ` +
  `of the mean per 10 minutes, whichever is more; no verdict without a full collection in each half or for soaks under ${MIN_VERDICT_SECONDS / 60} minutes`;

export interface Point {
  /** Seconds since the soak began. */
  at: number;
  value: number;
}

export interface Trend {
  /** Samples after the warm-up. */
  samples: number;
  /** Of them, the ones the floors were taken from (right after a full collection, or all). */
  floorSamples: number;
  /** How much the floor grew from the first half after the warm-up to the second, per 10 minutes (the verdict's figure). */
  floorGrowthPer10Min: number;
  /** Least-squares slope of the samples after the warm-up, per 10 minutes (context: it follows the collector's saw). */
  slopePer10Min: number;
  /** Over every sample, warm-up included. */
  min: number;
  max: number;
  /** Mean after the warm-up. */
  mean: number;
  /** Undefined when the soak could not tell. */
  flat: boolean | undefined;
}

/** Least-squares slope of value over at (value units per second); 0 for fewer than two distinct times. */
export function slope(points: readonly Point[]): number {
  const n = points.length;
  if (n < 2) return 0;
  const meanAt = points.reduce((s, p) => s + p.at, 0) / n;
  const meanValue = points.reduce((s, p) => s + p.value, 0) / n;
  let num = 0;
  let den = 0;
  for (const p of points) {
    num += (p.at - meanAt) * (p.value - meanValue);
    den += (p.at - meanAt) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

/** The times of the samples that follow a full collection: where the heap shrank by COLLECTION_SHRINK or more. */
export function collections(heap: readonly Point[]): number[] {
  return heap.filter((p, i) => i > 0 && p.value <= (1 - COLLECTION_SHRINK) * heap[i - 1]!.value).map((p) => p.at);
}

/**
 * The trend of a figure sampled over a soak of `seconds`; `after` lists the times of samples
 * that follow a full collection, or is omitted for a figure the collector does not touch.
 */
export function trend(points: readonly Point[], seconds: number, after?: readonly number[]): Trend {
  const from = seconds * WARM_UP_SHARE;
  const half = (seconds - from) / 2;
  const settled = points.filter((p) => p.at >= from);
  const marks = after && new Set(after);
  const floors = marks ? settled.filter((p) => marks.has(p.at)) : settled;
  const lowest = (lo: number, hi: number) => Math.min(...floors.filter((p) => p.at >= lo && p.at < hi).map((p) => p.value));
  const first = lowest(from, from + half);
  const last = lowest(from + half, Infinity);
  const known = Number.isFinite(first) && Number.isFinite(last);
  const floorGrowthPer10Min = known ? ((last - first) / half) * 600 : 0;
  const values = points.map((p) => p.value);
  const mean = settled.length ? settled.reduce((s, p) => s + p.value, 0) / settled.length : 0;
  return {
    samples: settled.length,
    floorSamples: floors.length,
    floorGrowthPer10Min,
    slopePer10Min: slope(settled) * 600,
    min: values.length ? Math.min(...values) : 0,
    max: values.length ? Math.max(...values) : 0,
    mean,
    flat: known && seconds >= MIN_VERDICT_SECONDS ? floorGrowthPer10Min <= Math.max(FLAT_BYTES_PER_10_MIN, FLAT_SHARE_PER_10_MIN * mean) : undefined,
  };
}
