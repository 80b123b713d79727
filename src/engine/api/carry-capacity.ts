/**
 * Whether carryBytesPerSecond can keep what a replica carries (docs/carrying.md, "Pacing"). On
 * a store that caps retention a partition's live bytes (the survivors of its cleaned part and
 * its dirty part, as its index counts them) must be rewritten at least once every carry age, or
 * the store lets keys go; paced, a pass takes its live bytes over the rate to do it. The passes
 * of every partition a replica carries take turns at one rate, so what counts is their sum:
 * each partition needs liveBytes / carryAge of the rate, and the replica's capacity ratio, the
 * sum over its partitions of liveBytes / (rate × carryAge), must stay below 1. A ratio above 1
 * means that at this rate some partition's pass cannot come round within its carry age.
 *
 * That is a floor: a pass also follows each clean, and a partition the store keeps for ever
 * (no carry age) is carried at the same rate without a deadline; neither is counted.
 *
 * When a topic is created, its size is not known (retention.bytes and segment.bytes bound it
 * from above, not below), so the only thing that can be refused then is a rate at which not even
 * the smallest pass fits in the carry age: a topic refused that way could not keep one record.
 */
import { BATCH_HEADER_SIZE } from '../../protocol/records/batch-header.js';

export interface CarriedPartition {
  topic: string;
  partition: number;
  liveBytes: number;
  /** The partition's carry age (policy.carryAfterMs). */
  carryAfterMs: number;
}

export interface PartitionCapacity extends CarriedPartition {
  /** liveBytes over what the rate rewrites within the carry age: the partition's share of the replica's ratio. */
  ratio: number;
}

export interface CarryCapacity {
  /** carryBytesPerSecond. */
  bytesPerSecond: number;
  /** The sum of the partitions' ratios: above 1, the rate cannot keep them all. */
  ratio: number;
  /** The partitions this replica carries on a store that caps their retention. */
  partitions: PartitionCapacity[];
}

export interface TopicCapacity {
  topic: string;
  /** Partitions of the topic this replica carries. */
  partitions: number;
  liveBytes: number;
  carryAfterMs: number;
  ratio: number;
}

/** A capacity ratio past which little of the rate is left: `kcompact status` warns, as the alert does. */
export const CAPACITY_WARNING_RATIO = 0.8;

/**
 * The fewest bytes a pass that keeps anything writes: a start marker, a carry batch holding one
 * copy, an end marker, each a batch of its own (a lower bound, counting their headers only).
 */
export const MIN_PASS_BYTES = 3 * BATCH_HEADER_SIZE;

/** What a pass must rewrite of the partition: the bytes its cleaned part keeps, and its dirty part whole. */
export function liveBytes(store: { checkpoint: { cleanBytes: number; firstDirty: number }; segments: Iterable<{ base: number; bytes: number }> }): number {
  const { cleanBytes, firstDirty } = store.checkpoint;
  let dirty = 0;
  for (const s of store.segments) if (s.base >= firstDirty) dirty += s.bytes;
  return cleanBytes + dirty;
}

/** What `bytesPerSecond` rewrites within `carryAfterMs`. */
export function rewritableBytes(bytesPerSecond: number, carryAfterMs: number): number {
  return Math.floor((bytesPerSecond * carryAfterMs) / 1000);
}

export function carryCapacity(carried: readonly CarriedPartition[], bytesPerSecond: number): CarryCapacity {
  let sum = 0;
  const partitions = carried.map((p) => {
    const ratio = p.liveBytes / Math.max(1, rewritableBytes(bytesPerSecond, p.carryAfterMs));
    sum += ratio;
    return { ...p, ratio };
  });
  return { bytesPerSecond, ratio: sum, partitions };
}

/** The partitions by topic, the topic taking the most of the rate first. */
export function topicCapacities(capacity: CarryCapacity): TopicCapacity[] {
  const topics = new Map<string, TopicCapacity>();
  for (const p of capacity.partitions) {
    const t = topics.get(p.topic);
    if (t) {
      t.partitions++;
      t.liveBytes += p.liveBytes;
      t.ratio += p.ratio;
      t.carryAfterMs = Math.min(t.carryAfterMs, p.carryAfterMs);
    } else {
      topics.set(p.topic, { topic: p.topic, partitions: 1, liveBytes: p.liveBytes, carryAfterMs: p.carryAfterMs, ratio: p.ratio });
    }
  }
  return [...topics.values()].sort((a, b) => b.ratio - a.ratio || (a.topic < b.topic ? -1 : 1));
}

/**
 * Why a compact-only topic the store keeps for `retentionMs` cannot be carried at
 * `bytesPerSecond`, or null when it can (or nothing bounds the rate): refused only when not even
 * the smallest pass fits within the carry age, since how much the topic will hold is not known.
 */
export function rateRefusal(topic: string, retentionMs: number, share: number, bytesPerSecond: number): string | null {
  if (retentionMs < 0 || !(bytesPerSecond > 0)) return null;
  const carryAt = Math.floor(retentionMs * share);
  const rewritable = rewritableBytes(bytesPerSecond, carryAt);
  if (rewritable >= MIN_PASS_BYTES) return null;
  return (
    `the store keeps the records of topic ${topic} for retention.ms=${retentionMs} and kcompact carries them at ${share} of that (${carryAt} ms), ` +
    `within which carryBytesPerSecond=${bytesPerSecond} lets a pass write ${rewritable} bytes, less than the ${MIN_PASS_BYTES} bytes of the smallest pass ` +
    `(a start marker, one copy, an end marker): not one record of the topic could be kept; raise carryBytesPerSecond or the store's retention`
  );
}
