/**
 * `status` and `inspect` of a proxy that is not running, from its data directory: every partition
 * index opened read-only (SQLite readonly; a proxy that may own the files is never written to),
 * reported in the shapes the management endpoint answers with. Only the files speak here: the
 * topics listed are those with an index (the compacted ones as of the proxy's last run), and the
 * dirty ratio is computed with Kafka's default min.compaction.lag.ms (0), since the topic's own
 * configs live with the running proxy.
 */
import fs from 'node:fs';
import { cleanableRange } from '../../compaction/cleaner/cleanable-range.js';
import { BrokerDefaults } from '../../compaction/config/broker-defaults.js';
import { topicPolicy } from '../../compaction/config/effective-policy.js';
import { indexRoot, listPartitionIndexes, partitionIndexFile } from '../../compaction/index/index-files.js';
import { IndexFileError, PartitionStore, type PartitionId } from '../../compaction/index/partition-store.js';
import { byTopicPartition, OFFLINE, partitionDetail, partitionStatus, type PartitionDetail, type PartitionStatus } from '../../compaction/worker/engine-status.js';
import { summarizeTopics, type InspectReport, type StatusReport } from '../../ops/admin-reports.js';
import { CliError } from './cli-error.js';

const KAFKA_DEFAULTS = topicPolicy({}, new BrokerDefaults());

function indexesIn(dataDir: string): PartitionId[] {
  if (!fs.existsSync(dataDir)) throw new CliError(`data directory ${dataDir} does not exist: give the proxy's --data-dir`);
  if (!fs.existsSync(indexRoot(dataDir))) throw new CliError(`data directory ${dataDir} holds no partition index (no ${indexRoot(dataDir)}): is it a kcompact data directory?`);
  return listPartitionIndexes(dataDir);
}

function read<T>(dataDir: string, id: PartitionId, report: (store: PartitionStore, now: number) => T): T {
  const file = partitionIndexFile(dataDir, id.topic, id.partition);
  let store: PartitionStore;
  try {
    store = PartitionStore.openReadOnly(file, id);
  } catch (err) {
    if (!(err instanceof IndexFileError)) throw err;
    throw new CliError(`cannot read the index of ${id.topic}-${id.partition} (${file}): ${err.message}; a proxy rebuilds such a file from the upstream when it opens it`);
  }
  try {
    return report(store, Date.now());
  } finally {
    store.close();
  }
}

const rangeOf = (store: PartitionStore, now: number) => cleanableRange(store.segments, { ...store.checkpoint }, KAFKA_DEFAULTS, now);

export function statusFromDataDir(dataDir: string): StatusReport {
  const ids = indexesIn(dataDir);
  const partitions: PartitionStatus[] = ids.map((id) => read(dataDir, id, (store, now) => partitionStatus(store, rangeOf(store, now), OFFLINE)));
  partitions.sort(byTopicPartition);
  return { source: 'data-dir', dataDir, compactedTopics: summarizeTopics([...new Set(ids.map((id) => id.topic))], partitions), partitions };
}

export function inspectFromDataDir(dataDir: string, topic: string, partition: number | undefined): InspectReport {
  const ids = indexesIn(dataDir);
  const mine = ids.filter((id) => id.topic === topic);
  if (mine.length === 0) {
    const topics = [...new Set(ids.map((id) => id.topic))].sort();
    throw new CliError(`topic ${topic} has no index in ${dataDir}: it was not compacted when the proxy last ran; indexed topics: ${topics.length > 0 ? topics.join(', ') : 'none'}`);
  }
  const wanted = partition === undefined ? mine : mine.filter((id) => id.partition === partition);
  if (wanted.length === 0) {
    throw new CliError(`topic ${topic} has no index of partition ${partition} in ${dataDir}; indexed partitions: ${mine.map((id) => id.partition).sort((a, b) => a - b).join(', ')}`);
  }
  const partitions: PartitionDetail[] = wanted.map((id) => read(dataDir, id, (store, now) => partitionDetail(store, rangeOf(store, now), OFFLINE)));
  partitions.sort(byTopicPartition);
  return { source: 'data-dir', topic, partitions };
}
