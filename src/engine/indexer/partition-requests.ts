/**
 * The worker's requests about partitions, other than Fetch: where the upstream log starts and
 * ends (ListOffsets), and moving its start for compact,delete retention (DeleteRecords).
 */
import { ErrorCode } from '../../protocol/errors.js';
import { ApiKey, type ListOffsetsResponsePartitionResponse } from '../../protocol/messages.js';
import type { UpstreamClient } from '../../upstream/client.js';
import { UpstreamError } from '../../upstream/error-class.js';
import { ZERO_UUID } from '../../protocol/wire/uuid.js';
import { partitionKey } from '../api/partition-key.js';

/** What these requests need of a connection: a carry pass sends them through its pacing (carry/carry-pacing.ts). */
export type PartitionRequests = Pick<UpstreamClient, 'version' | 'request'>;

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
    const p = body.topics[0]?.partitions[0];
    if (!p || p.errorCode !== ErrorCode.NONE) throw new UpstreamError(`ListOffsets for ${topic}-${partition}`, p?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR);
    return Number(p.offset);
  };
  return [await ask(EARLIEST_TIMESTAMP), await ask(LATEST_TIMESTAMP)];
}

export interface PartitionOffset {
  topic: string;
  partition: number;
  /** NONE when the offset is known. */
  errorCode: number;
  offset: number;
}

/**
 * The last stable offsets now (ListOffsets LATEST at READ_COMMITTED) of partitions the client's
 * broker leads, in one request: a broker answers a connection's requests in order, and the
 * indexer's Fetch on it long-polls, so one request per partition would wait that out each time
 * (minutes for a thousand partitions). A partition left out of the answer comes back with
 * UNKNOWN_SERVER_ERROR.
 */
export async function lastStableOffsets(client: UpstreamClient, partitions: readonly { topic: string; partition: number }[]): Promise<PartitionOffset[]> {
  const byTopic = new Map<string, number[]>();
  for (const p of partitions) byTopic.set(p.topic, [...(byTopic.get(p.topic) ?? []), p.partition]);
  const body = await client.request(ApiKey.ListOffsets, client.version(ApiKey.ListOffsets), {
    replicaId: -1,
    isolationLevel: 1,
    topics: [...byTopic].map(([name, ps]) => ({
      name,
      partitions: ps.map((partitionIndex) => ({ partitionIndex, currentLeaderEpoch: -1, timestamp: LATEST_TIMESTAMP })),
    })),
    timeoutMs: TIMEOUT_MS,
  });
  const answered = new Map<string, ListOffsetsResponsePartitionResponse>();
  for (const t of body.topics) for (const p of t.partitions) answered.set(partitionKey(t.name, p.partitionIndex), p);
  return partitions.map(({ topic, partition }) => {
    const p = answered.get(partitionKey(topic, partition));
    return {
      topic,
      partition,
      errorCode: p ? p.errorCode : ErrorCode.UNKNOWN_SERVER_ERROR,
      offset: p && p.errorCode === ErrorCode.NONE ? Number(p.offset) : -1,
    };
  });
}

/** Moves the partition's log start to `offset`; throws when the upstream refuses or cannot. */
export async function deleteRecordsBefore(client: PartitionRequests, topic: string, partition: number, offset: number): Promise<void> {
  const body = await client.request(ApiKey.DeleteRecords, client.version(ApiKey.DeleteRecords), {
    topics: [{ name: topic, partitions: [{ partitionIndex: partition, offset }] }],
    timeoutMs: TIMEOUT_MS,
  });
  const errorCode = body.topics[0]?.partitions[0]?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR;
  if (errorCode !== ErrorCode.NONE) throw new UpstreamError(`DeleteRecords for ${topic}-${partition}`, errorCode);
}

/** Fetch v13 names topics by id only. */
const FETCH_TOPIC_IDS_VERSION = 13;
/** Produce v13 names topics by id only. */
const PRODUCE_TOPIC_IDS_VERSION = 13;

/**
 * The records of a partition from `offset` (read_uncommitted, at most `maxBytes`), for a carry
 * pass: null when the store has nothing there.
 */
export async function fetchRecords(
  client: PartitionRequests,
  target: { topic: string; topicId: string; partition: number },
  offset: number,
  maxBytes: number,
): Promise<Buffer | null> {
  const version = Math.min(client.version(ApiKey.Fetch), target.topicId !== '' ? Infinity : FETCH_TOPIC_IDS_VERSION - 1);
  const body = await client.request(ApiKey.Fetch, version, {
    replicaId: -1,
    maxWaitMs: 0,
    minBytes: 0,
    maxBytes,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [
      {
        topic: target.topic,
        topicId: target.topicId || ZERO_UUID,
        partitions: [
          { partition: target.partition, currentLeaderEpoch: -1, fetchOffset: offset, lastFetchedEpoch: -1, logStartOffset: -1, partitionMaxBytes: maxBytes },
        ],
      },
    ],
    forgottenTopicsData: [],
    rackId: '',
  });
  if (body.errorCode) throw new UpstreamError(`Fetch of ${target.topic}-${target.partition}`, body.errorCode);
  const p = body.responses[0]?.partitions[0];
  if (!p) throw new UpstreamError(`Fetch of ${target.topic}-${target.partition}`, ErrorCode.UNKNOWN_SERVER_ERROR);
  if (p.errorCode !== ErrorCode.NONE) throw new UpstreamError(`Fetch of ${target.topic}-${target.partition} at offset ${offset}`, p.errorCode);
  return p.records && p.records.length > 0 ? p.records : null;
}

/** Appends one batch to a partition with acks=all; returns the offset the store gave its first record. */
export async function produceBatch(client: PartitionRequests, topic: string, partition: number, batch: Buffer): Promise<number> {
  const version = Math.min(client.version(ApiKey.Produce), PRODUCE_TOPIC_IDS_VERSION - 1);
  const body = await client.request(ApiKey.Produce, version, {
    transactionalId: null,
    acks: -1,
    timeoutMs: TIMEOUT_MS,
    topicData: [{ name: topic, partitionData: [{ index: partition, records: batch }] }],
  });
  const p = body.responses[0]?.partitionResponses[0];
  if (!p) throw new UpstreamError(`Produce to ${topic}-${partition}`, ErrorCode.UNKNOWN_SERVER_ERROR);
  if (p.errorCode !== ErrorCode.NONE) throw new UpstreamError(`Produce to ${topic}-${partition}${p.errorMessage ? ` (${p.errorMessage})` : ''}`, p.errorCode);
  return Number(p.baseOffset);
}
