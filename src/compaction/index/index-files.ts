/**
 * Where partition indexes live: <dataDir>/index/<topic>/<partition>.sqlite, one file per
 * partition so that partitions never contend for a write lock, and deleting a topic's index is
 * deleting a directory. Kafka topic names are [A-Za-z0-9._-]; anything else a store allows is
 * percent-encoded so that a name can never leave the directory.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { PartitionId } from './partition-store.js';

const SUFFIX = '.sqlite';

function topicDirName(topic: string): string {
  const safe = topic.replace(/[^A-Za-z0-9._-]/g, (c) => encodeURIComponent(c).replace(/[!'()*]/g, (x) => `%${x.charCodeAt(0).toString(16)}`));
  return safe === '.' || safe === '..' ? safe.replace(/\./g, '%2E') : safe;
}

export function indexRoot(dataDir: string): string {
  return path.join(dataDir, 'index');
}

export function topicIndexDir(dataDir: string, topic: string): string {
  return path.join(indexRoot(dataDir), topicDirName(topic));
}

export function partitionIndexFile(dataDir: string, topic: string, partition: number): string {
  return path.join(topicIndexDir(dataDir, topic), `${partition}${SUFFIX}`);
}

/** The partition index files present on disk. */
export function listPartitionIndexes(dataDir: string): PartitionId[] {
  const root = indexRoot(dataDir);
  if (!fs.existsSync(root)) return [];
  const found: PartitionId[] = [];
  for (const dir of fs.readdirSync(root, { withFileTypes: true })) {
    if (!dir.isDirectory()) continue;
    const topic = decodeURIComponent(dir.name);
    for (const f of fs.readdirSync(path.join(root, dir.name))) {
      const m = /^(\d+)\.sqlite$/.exec(f);
      if (m) found.push({ topic, partition: Number(m[1]) });
    }
  }
  return found;
}

/** Removes a topic's index directory once its partitions are closed. */
export function removeTopicIndex(dataDir: string, topic: string): void {
  fs.rmSync(topicIndexDir(dataDir, topic), { recursive: true, force: true });
}
