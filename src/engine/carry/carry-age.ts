/**
 * How old the store's records of a partition are, where the store caps retention
 * (docs/carrying.md). The store lets a record go once the newest timestamp of the store segment
 * holding it is older than its retention; that segment's newest is never older than the
 * record's own batch, so a record is safe until at least its batch's timestamp plus the
 * retention. The oldest records the partition still needs are the last pass's copies (stamped
 * with the time of carrying) and the originals the store holds past the last pass's release
 * (judged by the first batch of each virtual segment, as Kafka rolls and retains by it).
 */
import type { PartitionStore } from '../store/partition-store.js';

/**
 * The store time of the oldest record the partition still needs, or undefined when it needs
 * none (an empty partition, or batches without timestamps).
 */
export function oldestNeeded(store: PartitionStore): number | undefined {
  const { carry, checkpoint } = store;
  let oldest = carry.pass >= 0 && carry.passTime >= 0 ? carry.passTime : Infinity;
  const released = Math.max(checkpoint.logStartOffset, carry.passRelease);
  const segments = store.segments;
  for (let i = 0; i < segments.length; i++) {
    const end = i + 1 < segments.length ? segments[i + 1]!.base : checkpoint.nextOffset;
    if (end <= released) continue;
    const ts = segments[i]!.rollingTimestamp;
    if (ts >= 0 && ts < oldest) oldest = ts;
  }
  return Number.isFinite(oldest) ? oldest : undefined;
}

/** Time left before the store may let the oldest needed record go; undefined when nothing is at stake. */
export function carryMarginMs(store: PartitionStore, storeRetentionMs: number, now: number): number | undefined {
  if (storeRetentionMs < 0) return undefined;
  const oldest = oldestNeeded(store);
  return oldest === undefined ? undefined : oldest + storeRetentionMs - now;
}

/** Whether the last pass's copies reached the carry age, so that they must be carried again. */
export function copiesAged(store: PartitionStore, carryAfterMs: number, now: number): boolean {
  const { pass, passTime } = store.carry;
  return carryAfterMs > 0 && pass >= 0 && passTime >= 0 && now - passTime >= carryAfterMs;
}
