/**
 * The partition the Java client's default partitioner gives a keyed record:
 * toPositive(murmur2(keyBytes)) % numPartitions (org.apache.kafka.common.utils.Utils and
 * BuiltInPartitioner). A write through the table API lands where a Java, librdkafka
 * (murmur2_random) or kafkajs (JavaCompatiblePartitioner) producer would put the same key, so a
 * key has one partition whichever way it was written.
 */

const SEED = 0x9747b28c;
const M = 0x5bd1e995;

/** Kafka's Utils.murmur2, 32-bit signed as Java returns it; Math.imul and >>> keep Java's int arithmetic. */
export function murmur2(data: Uint8Array): number {
  const length = data.length;
  let h = (SEED ^ length) | 0;
  const length4 = length >>> 2;
  for (let i = 0; i < length4; i++) {
    const i4 = i * 4;
    let k = data[i4]! | (data[i4 + 1]! << 8) | (data[i4 + 2]! << 16) | (data[i4 + 3]! << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    k = Math.imul(k, M);
    h = Math.imul(h, M);
    h ^= k;
  }
  // Java's switch on length % 4 falls through from the highest remaining byte down.
  const tail = length & ~3;
  const rest = length & 3;
  if (rest >= 3) h ^= data[tail + 2]! << 16;
  if (rest >= 2) h ^= data[tail + 1]! << 8;
  if (rest >= 1) {
    h ^= data[tail]!;
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/** Kafka's Utils.toPositive: the sign bit cleared, not Math.abs (which differs at -2^31). */
export function toPositive(n: number): number {
  return n & 0x7fffffff;
}

export function defaultPartition(key: Uint8Array, numPartitions: number): number {
  if (!Number.isInteger(numPartitions) || numPartitions < 1) throw new RangeError(`a topic has at least one partition, got ${numPartitions}`);
  return toPositive(murmur2(key)) % numPartitions;
}
