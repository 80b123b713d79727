/**
 * The worker's requests about one partition, other than Fetch: where the upstream log starts
 * and ends (ListOffsets), and moving its start for compact,delete retention (DeleteRecords).
 */
import { ApiKey } from '../../protocol/messages.js';
import type { UpstreamClient } from '../../upstream/client.js';

const EARLIEST_TIMESTAMP = -2n;
const LATEST_TIMESTAMP = -1n;
const TIMEOUT_MS = 30_000;

/** The upstream's log start and end offsets of a partition (asked of its leader). */
export async function logBounds(client: UpstreamClient, topic: string, partition: number): Promise<[number, number]> {
  const version = client.version(ApiKey.ListOffsets);
  const ask = async (timestamp: bigint): Promise<number> => {
    const body = await client.request(ApiKey.ListOffsets, version, {
      replicaId: -1,
      isolationLevel: 0,
      topics: [{ name: topic, partitions: [{ partitionIndex: partition, currentLeaderEpoch: -1, timestamp }] }],
      timeoutMs: TIMEOUT_MS,
    });
    const p = body.topics?.[0]?.partitions?.[0];
    if (!p || p.errorCode !== 0) throw new Error(`ListOffsets for ${topic}-${partition} failed with error ${p?.errorCode ?? 'none'}`);
    return Number(p.offset);
  };
  return [await ask(EARLIEST_TIMESTAMP), await ask(LATEST_TIMESTAMP)];
}

/** The partition's last stable offset now (ListOffsets LATEST at READ_COMMITTED). */
export async function lastStableOffset(client: UpstreamClient, topic: string, partition: number): Promise<number> {
  const body = await client.request(ApiKey.ListOffsets, client.version(ApiKey.ListOffsets), {
    replicaId: -1,
    isolationLevel: 1,
    topics: [{ name: topic, partitions: [{ partitionIndex: partition, currentLeaderEpoch: -1, timestamp: LATEST_TIMESTAMP }] }],
    timeoutMs: TIMEOUT_MS,
  });
  const p = body.topics?.[0]?.partitions?.[0];
  if (!p || p.errorCode !== 0) throw new Error(`ListOffsets for ${topic}-${partition} failed with error ${p?.errorCode ?? 'none'}`);
  return Number(p.offset);
}

/** Moves the partition's log start to `offset`; throws when the upstream refuses or cannot. */
export async function deleteRecordsBefore(client: UpstreamClient, topic: string, partition: number, offset: number): Promise<void> {
  const body = await client.request(ApiKey.DeleteRecords, client.version(ApiKey.DeleteRecords), {
    topics: [{ name: topic, partitions: [{ partitionIndex: partition, offset }] }],
    timeoutMs: TIMEOUT_MS,
  });
  const errorCode = body.topics?.[0]?.partitions?.[0]?.errorCode ?? -1;
  if (errorCode !== 0) throw new Error(`DeleteRecords for ${topic}-${partition} failed with error ${errorCode}`);
}
