/**
 * Topics for the compaction benchmark: created with their configs (through the proxy, which
 * makes a topic compacted, or directly on Kafka), the record that rolls a partition's active
 * segment, and how far Kafka's own cleaner has got.
 */
import fs from 'node:fs';
import path from 'node:path';
import kafkajs from 'kafkajs';
import { kworkloadPath } from '../test/support/differential.js';
import { pollUntil, runProcess, tail } from '../test/support/index.js';

export interface TopicSpec {
  topic: string;
  partitions: number;
  configs?: Record<string, string>;
}

export async function createTopics(bootstrap: string, topics: TopicSpec[]): Promise<void> {
  const admin = new kafkajs.Kafka({ clientId: 'kcompact-bench', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    await admin.createTopics({
      waitForLeaders: true,
      topics: topics.map((t) => ({
        topic: t.topic,
        numPartitions: t.partitions,
        configEntries: Object.entries(t.configs ?? {}).map(([name, value]) => ({ name, value })),
      })),
    });
  } finally {
    await admin.disconnect();
  }
}

/**
 * Sets topics' configs (through the proxy for owned ones). kafkajs has only the whole-state
 * AlterConfigs: every config the topic should keep must be listed, cleanup.policy included.
 */
export async function alterTopicConfigs(bootstrap: string, topics: string[], configs: Record<string, string>): Promise<void> {
  const admin = new kafkajs.Kafka({ clientId: 'kcompact-bench', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    await admin.alterConfigs({
      validateOnly: false,
      resources: topics.map((name) => ({
        type: kafkajs.ConfigResourceTypes.TOPIC,
        name,
        configEntries: Object.entries(configs).map(([n, value]) => ({ name: n, value })),
      })),
    });
  } finally {
    await admin.disconnect();
  }
}

/** Deletes topics (through the proxy, a compacted topic's configs go with it). */
export async function deleteTopics(bootstrap: string, topics: string[]): Promise<void> {
  const admin = new kafkajs.Kafka({ clientId: 'kcompact-bench', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    await admin.deleteTopics({ topics });
  } finally {
    await admin.disconnect();
  }
}

/**
 * Appends one keyed record to partition 0 and returns its offset. Past segment.ms since the
 * segment's first record, it rolls the active segment (Kafka's, and kcompact's virtual one), so
 * that everything before it can be cleaned; it is the latest of its key, so it survives.
 */
export async function appendRecord(bootstrap: string, topic: string, key: string): Promise<number> {
  const args = ['append', '--brokers', bootstrap, '--topic', topic, '--key', key, '--value-bytes', '100'];
  const r = await runProcess(kworkloadPath(), args, { timeoutMs: 60_000 });
  const line = r.stdout.trimEnd().split('\n').pop() ?? '';
  if (r.code !== 0 || !line.startsWith('{')) throw new Error(`kworkload ${args.join(' ')} exited ${r.code ?? r.signal}\nstderr: ${tail(r.stderr)}`);
  return (JSON.parse(line) as { offset: number }).offset;
}

/**
 * Appends one keyed record (`<keyPrefix>-<partition>`, 100 B value) to each of the first
 * `partitions` partitions, in one produce, and returns their offsets by partition: the roll
 * records of appendRecord for many partitions at once.
 */
export async function appendToEachPartition(bootstrap: string, topic: string, partitions: number, keyPrefix: string): Promise<number[]> {
  const producer = new kafkajs.Kafka({ clientId: 'kcompact-bench', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING }).producer();
  await producer.connect();
  try {
    const value = Buffer.alloc(100, 'r');
    const meta = await producer.send({
      topic,
      acks: -1,
      messages: Array.from({ length: partitions }, (_, p) => ({ partition: p, key: `${keyPrefix}-${p}`, value })),
    });
    const offsets = new Array<number>(partitions).fill(-1);
    for (const m of meta) offsets[m.partition] = Number(m.baseOffset);
    if (offsets.includes(-1)) throw new Error(`appending to ${topic}: no offset for partition ${offsets.indexOf(-1)}`);
    return offsets;
  } finally {
    await producer.disconnect();
  }
}

/** Kafka's cleaner checkpoint for a partition (the first offset its next clean starts from), if any. */
function kafkaCleanerCheckpoint(kafkaDataDir: string, topic: string, partition: number): number | undefined {
  const file = path.join(kafkaDataDir, 'cleaner-offset-checkpoint');
  if (!fs.existsSync(file)) return undefined;
  for (const line of fs.readFileSync(file, 'utf8').split('\n').slice(2)) {
    const [t, p, o] = line.trim().split(' ');
    if (t === topic && p === String(partition)) return Number(o);
  }
  return undefined;
}

/** Waits until Kafka's cleaner has cleaned topic-partition up to `offset`; resolves with the seconds it took. */
export async function waitKafkaCleaned(kafkaDataDir: string, topic: string, offset: number, deadlineMs: number, partition = 0): Promise<number> {
  const started = performance.now();
  await pollUntil(`Kafka's cleaner to pass offset ${offset} of ${topic}-${partition}`, deadlineMs, async () => {
    const at = kafkaCleanerCheckpoint(kafkaDataDir, topic, partition);
    return at !== undefined && at >= offset ? at : undefined;
  });
  return (performance.now() - started) / 1000;
}
