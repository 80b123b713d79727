/**
 * A partition's end offset at an isolation level, over the bare protocol, for the readers whose
 * client cannot ask it: kcat has no ListOffsets at an isolation level (-Q asks offsets for
 * timestamps), and kafkajs's admin asks at READ_COMMITTED only (its ListOffsets default).
 */
import { ApiKey } from '../../../src/protocol/messages.js';
import { ZERO_UUID } from '../../../src/protocol/wire/uuid.js';
import { askOnce } from '../raw-client.js';
import type { Isolation } from './types.js';

const METADATA_VERSION = 12;
const LIST_OFFSETS_VERSION = 7;
const LATEST = -1n;

/** ListOffsets LATEST of one partition, asked of its leader: the high watermark, or the last stable offset under read_committed. */
export async function endOffset(bootstrap: string, topic: string, partition: number, isolation: Isolation): Promise<number> {
  const metadata = await askOnce(bootstrap, ApiKey.Metadata, METADATA_VERSION, {
    topics: [{ topicId: ZERO_UUID, name: topic }],
    allowAutoTopicCreation: false,
    includeTopicAuthorizedOperations: false,
  });
  const t = metadata.topics.find((x: { name: string }) => x.name === topic);
  if (!t || t.errorCode !== 0) throw new Error(`Metadata of ${topic}: error ${t?.errorCode ?? 'no such topic'}`);
  const p = t.partitions.find((x: { partitionIndex: number }) => x.partitionIndex === partition);
  const leader = metadata.brokers.find((b: { nodeId: number }) => b.nodeId === p?.leaderId);
  if (!p || p.errorCode !== 0 || !leader) throw new Error(`Metadata of ${topic}-${partition}: no leader (error ${p?.errorCode ?? 'no such partition'})`);
  const listed = await askOnce(`${leader.host}:${leader.port}`, ApiKey.ListOffsets, LIST_OFFSETS_VERSION, {
    replicaId: -1,
    isolationLevel: isolation === 'read_committed' ? 1 : 0,
    topics: [{ name: topic, partitions: [{ partitionIndex: partition, currentLeaderEpoch: -1, timestamp: LATEST }] }],
  });
  const answer = listed.topics[0]?.partitions[0];
  if (!answer || answer.errorCode !== 0) throw new Error(`ListOffsets of ${topic}-${partition}: error ${answer?.errorCode ?? 'no answer'}`);
  return Number(answer.offset);
}
