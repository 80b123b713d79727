/**
 * The partition of a key: the one asked for (checked against the topic's count), or the one the
 * Java client's default partitioner gives its bytes.
 */
import type { TableKey } from '../engine/api/table-reads.js';
import { ApiError } from './api-error.js';
import { defaultPartition } from './default-partitioner.js';
import type { TopicPartitions } from './topic-partitions.js';

export async function keyPartition(partitions: TopicPartitions, topic: string, key: TableKey, asked: number | undefined): Promise<number> {
  const count = await partitions.count(topic);
  if (asked !== undefined) {
    if (asked >= count) {
      throw new ApiError(
        404,
        `${topic} has no partition ${asked}: it has ${count} (0 to ${count - 1})`,
        'give a partition the topic has, or none to place the key as producers do',
      );
    }
    return asked;
  }
  if ('json' in key) {
    throw new ApiError(
      400,
      'a key given as JSON has no bytes to place it by: its bytes depend on the schema it was written with',
      "give the key's partition with ?partition=N (the one its producer wrote it to)",
    );
  }
  return defaultPartition(key.bytes, count);
}
