/**
 * Whether a figure sampled through a soak (resident memory, JS heap, index files) stays flat.
 *
 * A garbage-collected heap saws up and down: V8 lets garbage pile up for minutes before a full
 * collection, and RSS follows it. So neither the slope of the raw samples nor their lowest value
 * over a stretch says whether memory is kept: what a process keeps is what is left right after a
 * full collection. The soak marks the samples that follow one: the main thread's used heap shrank
 * by a quarter or more since the sample before.
 *
 * The rule judges the soak proper, after a warm-up of the same traffic: the warm-up takes the
 * consumer groups' first reads of every topic, the first rounds of cleaning, and the growth of
 * caches and of V8's heaps to their working sizes. At a thousand partitions V8's reserved JS
 * heaps take tens of minutes to level off, while glibc's heap stays where indexing left it;
 * judged from the start, a soak takes that growth for a leak. scale.ts's default warm-up is
 * chosen from how long they took (docs/performance.md).
 *
 * The figure is flat when the least-squares slope of its samples right after a full collection
 * (all the samples, for a figure the collector does not touch: the index files) is at most 2 MiB
 * or 1% of its mean per 10 minutes, whichever is more (2 MiB per 10 minutes is about 300 MiB a
 * day). A slope uses every floor sample, where comparing the lowest of two stretches turns on
 * one sample each. Without a full collection in each half of the soak, or for a soak under 10
 * minutes, there is no verdict.
 */
export const FLAT_BYTES_PER_10_MIN = 2 * 2 ** 20;
export const FLAT_SHARE_PER_10_MIN = 0.01;
export const MIN_VERDICT_SECONDS = 600;
/** A full collection shows as the main thread's used heap shrinking by this share from one sample to the next. */
export const COLLECTION_SHRINK = 0.25;

export const FLAT_RULE =
  `after the warm-up, the least-squares slope of the samples right after a full garbage collection may be at most ` +
  `${FLAT_BYTES_PER_10_MIN / 2 ** 20} MiB or ${FLAT_SHARE_PER_10_MIN * 100}% of the mean per 10 minutes, whichever is more; ` +
  `no verdict without a full collection in each half of the soak or for soaks under ${MIN_VERDICT_SECONDS / 60} minutes`;

export interface Point {
  /** Seconds since the traffic began. */
  at: number;
  value: number;
}

/** The judged stretch of a soak, in seconds since the traffic began: from the end of the warm-up to the end. */
export interface Window {
  from: number;
  to: number;
}

export interface Trend {
  /** Samples in the window. */
  samples: number;
  /** Of them, the ones the floor slope was taken from (right after a full collection, or all). */
  floorSamples: number;
  /** Least-squares slope of the floor samples, per 10 minutes (the verdict's figure). */
  floorSlopePer10Min: number;
  /** Least-squares slope of all the samples in the window, per 10 minutes (context: it follows the collector's saw). */
  slopePer10Min: number;
  /** Over every sample, warm-up included. */
  min: number;
  max: number;
  /** Mean in the window. */
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
 * The trend of a figure sampled over a soak judged over `window`; `after` lists the times of
 * samples that follow a full collection, or is omitted for a figure the collector does not touch.
 */
export function trend(points: readonly Point[], window: Window, after?: readonly number[]): Trend {
  const judged = points.filter((p) => p.at >= window.from && p.at <= window.to);
  const marks = after && new Set(after);
  const floors = marks ? judged.filter((p) => marks.has(p.at)) : judged;
  const middle = (window.from + window.to) / 2;
  const known = floors.some((p) => p.at < middle) && floors.some((p) => p.at >= middle);
  const floorSlopePer10Min = slope(floors) * 600;
  const values = points.map((p) => p.value);
  const mean = judged.length ? judged.reduce((s, p) => s + p.value, 0) / judged.length : 0;
  return {
    samples: judged.length,
    floorSamples: floors.length,
    floorSlopePer10Min,
    slopePer10Min: slope(judged) * 600,
    min: values.length ? Math.min(...values) : 0,
    max: values.length ? Math.max(...values) : 0,
    mean,
    flat:
      known && window.to - window.from >= MIN_VERDICT_SECONDS ? floorSlopePer10Min <= Math.max(FLAT_BYTES_PER_10_MIN, FLAT_SHARE_PER_10_MIN * mean) : undefined,
  };
}
