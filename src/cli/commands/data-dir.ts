/**
 * `status` and `inspect` of a proxy that is not running, from its data directory: every topic's
 * index file opened read-only (SQLite readonly; a proxy that may own the files is never written to),
 * reported in the shapes the management endpoint answers with. Only the files speak here: the
 * topics listed are those with an index (the compacted ones as of the proxy's last run), and the
 * dirty ratio is computed with Kafka's default min.compaction.lag.ms (0), since the topic's own
 * configs live with the running proxy.
 */
import fs from 'node:fs';
import { cleanableRange } from '../../engine/cleaner/cleanable-range.js';
import { BrokerDefaults } from '../../compaction/config/broker-defaults.js';
import { topicPolicy } from '../../compaction/config/effective-policy.js';
import { indexRoot, listTopicIndexes, topicIndexFile } from '../../engine/store/index-files.js';
import { PartitionStore } from '../../engine/store/partition-store.js';
import { IndexFileError, TopicIndex } from '../../engine/store/topic-index.js';
import { type PartitionDetail, type PartitionStatus } from '../../engine/api/engine-reports.js';
import { byTopicPartition, OFFLINE, partitionDetail, partitionStatus } from '../../engine/worker/engine-status.js';
import { summarizeTopics, type InspectReport, type StatusReport } from '../../ops/admin-reports.js';
import { CliError } from './cli-error.js';

const KAFKA_DEFAULTS = topicPolicy({}, new BrokerDefaults());

function indexedTopics(dataDir: string): string[] {
  if (!fs.existsSync(dataDir)) throw new CliError(`data directory ${dataDir} does not exist: give the proxy's --data-dir`);
  if (!fs.existsSync(indexRoot(dataDir)))
    throw new CliError(`data directory ${dataDir} holds no partition index (no ${indexRoot(dataDir)}): is it a kcompact data directory?`);
  return listTopicIndexes(dataDir).sort();
}

/** Opens a topic's file read-only for `use`, with an error that says what to do when it cannot be read. */
function withTopicIndex<T>(dataDir: string, topic: string, use: (index: TopicIndex) => T): T {
  const file = topicIndexFile(dataDir, topic);
  let index: TopicIndex;
  try {
    index = TopicIndex.openReadOnly(file, topic);
  } catch (err) {
    if (!(err instanceof IndexFileError)) throw err;
    throw new CliError(`cannot read the index of topic ${topic} (${file}): ${err.message}; a proxy rebuilds such a file from the upstream when it opens it`);
  }
  try {
    return use(index);
  } finally {
    index.close();
  }
}

/** `report` of each partition of the topic that `wanted` keeps, read from the topic's file. */
function readTopic<T>(dataDir: string, topic: string, wanted: (partitions: number[]) => number[], report: (store: PartitionStore, now: number) => T): T[] {
  return withTopicIndex(dataDir, topic, (index) => wanted(index.partitions()).map((partition) => report(PartitionStore.within(index, partition), Date.now())));
}

const rangeOf = (store: PartitionStore, now: number) => cleanableRange(store.segments, { ...store.checkpoint }, KAFKA_DEFAULTS, now);

export function statusFromDataDir(dataDir: string): StatusReport {
  const topics = indexedTopics(dataDir);
  const partitions: PartitionStatus[] = topics.flatMap((topic) =>
    readTopic(
      dataDir,
      topic,
      (all) => all,
      (store, now) => partitionStatus(store, rangeOf(store, now), OFFLINE),
    ),
  );
  partitions.sort(byTopicPartition);
  return { source: 'data-dir', dataDir, compactedTopics: summarizeTopics(topics, partitions), partitions };
}

export function inspectFromDataDir(dataDir: string, topic: string, partition: number | undefined): InspectReport {
  const topics = indexedTopics(dataDir);
  if (!topics.includes(topic)) {
    throw new CliError(
      `topic ${topic} has no index in ${dataDir}: it was not compacted when the proxy last ran; indexed topics: ${topics.length > 0 ? topics.join(', ') : 'none'}`,
    );
  }
  const pick = (all: number[]) => {
    if (partition === undefined) return all;
    if (all.includes(partition)) return [partition];
    throw new CliError(`topic ${topic} has no index of partition ${partition} in ${dataDir}; indexed partitions: ${all.join(', ')}`);
  };
  const partitions: PartitionDetail[] = readTopic(dataDir, topic, pick, (store, now) => partitionDetail(store, rangeOf(store, now), OFFLINE));
  partitions.sort(byTopicPartition);
  return { source: 'data-dir', topic, partitions };
}
