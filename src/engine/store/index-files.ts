/**
 * Where the indexes live: <dataDir>/index/<topic>.sqlite, one file per topic holding all of its
 * partitions (schema.ts), so that deleting a topic's index is deleting a file. Kafka topic
 * names are [A-Za-z0-9._-]; anything else a store allows is percent-encoded so that a name can
 * never leave the directory.
 */
import fs from 'node:fs';
import path from 'node:path';

const SUFFIX = '.sqlite';

function topicFileName(topic: string): string {
  return topic.replace(/[^A-Za-z0-9._-]/g, (c) => encodeURIComponent(c).replace(/[!'()*]/g, (x) => `%${x.charCodeAt(0).toString(16)}`)) + SUFFIX;
}

export function indexRoot(dataDir: string): string {
  return path.join(dataDir, 'index');
}

export function topicIndexFile(dataDir: string, topic: string): string {
  return path.join(indexRoot(dataDir), topicFileName(topic));
}

/** The topics with an index file on disk. */
export function listTopicIndexes(dataDir: string): string[] {
  const root = indexRoot(dataDir);
  if (!fs.existsSync(root)) return [];
  const found: string[] = [];
  for (const entry of fs.readdirSync(root, { withFileTypes: true })) {
    if (entry.isFile() && entry.name.endsWith(SUFFIX)) found.push(decodeURIComponent(entry.name.slice(0, -SUFFIX.length)));
  }
  return found;
}

const EARLIER_PARTITION_FILE = /^\d+\.sqlite(-wal|-shm)?$/;

/**
 * Removes what earlier versions kept under the index root (a directory of partition files per
 * topic) and returns the directories removed. Anything else is left alone.
 */
export function removeEarlierLayouts(dataDir: string): string[] {
  const root = indexRoot(dataDir);
  if (!fs.existsSync(root)) return [];
  const removed: string[] = [];
  for (const entry of fs.readdirSync(root, { withFileTypes: true })) {
    if (!entry.isDirectory() || /(\.sqlite|-wal|-shm)$/.test(entry.name)) continue;
    const dir = path.join(root, entry.name);
    if (!fs.readdirSync(dir).every((f) => EARLIER_PARTITION_FILE.test(f))) continue;
    fs.rmSync(dir, { recursive: true, force: true });
    removed.push(dir);
  }
  return removed;
}

/** Removes an index file and its WAL once it is closed. */
export function removeIndexFile(file: string): void {
  for (const f of [file, `${file}-wal`, `${file}-shm`]) fs.rmSync(f, { force: true });
}
