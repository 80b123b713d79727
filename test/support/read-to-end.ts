/**
 * A Java consumer's read of whole topics, start to end (test/peers/java/src/ReadToEnd.java): what
 * Kafka Connect sees when it reads its internal topics at start-up.
 */
import { javaArgs, javaBin } from './java.js';
import { runProcess, tail } from './processes.js';

export interface TopicRecord {
  offset: number;
  timestamp: number;
  key: string | null;
  value: string | null;
}

export interface TopicContents {
  topic: string;
  partitions: Record<string, { endOffset: number; records: TopicRecord[] }>;
}

/** Every record of each topic up to the end offsets it had when its read began (one JVM for all). */
export async function readTopics(bootstrap: string, topics: readonly string[], opts: { timeoutMs?: number } = {}): Promise<Map<string, TopicContents>> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const args = ['--bootstrap', bootstrap, ...topics.flatMap((t) => ['--topic', t]), '--timeout-ms', String(timeoutMs)];
  const r = await runProcess(javaBin(), javaArgs('ReadToEnd', args, 128), { timeoutMs: timeoutMs + 30_000 });
  if (r.code !== 0) throw new Error(`ReadToEnd ${topics.join(',')} at ${bootstrap} exited ${r.code}; stderr tail:\n${tail(r.stderr)}`);
  const read = r.stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as TopicContents);
  return new Map(read.map((c) => [c.topic, c]));
}

export async function readToEnd(bootstrap: string, topic: string, opts: { timeoutMs?: number } = {}): Promise<TopicContents> {
  return (await readTopics(bootstrap, [topic], opts)).get(topic)!;
}

/** All records of all partitions, partition by partition. */
export function allRecords(contents: TopicContents): (TopicRecord & { partition: number })[] {
  return Object.entries(contents.partitions).flatMap(([p, { records }]) => records.map((r) => ({ ...r, partition: Number(p) })));
}

/**
 * What a reader of a compacted topic should see of `raw` (the store's records of one partition)
 * once the cleaner has covered [0, cleanedUpTo): below it the latest record of each key
 * (tombstones too, until their delete horizon passes), from it on everything, all at their
 * original offsets.
 */
export function compactedView(raw: readonly TopicRecord[], cleanedUpTo: number): TopicRecord[] {
  const latest = new Map<string, number>();
  for (const r of raw) if (r.offset < cleanedUpTo && r.key !== null) latest.set(r.key, r.offset);
  return raw.filter((r) => r.offset >= cleanedUpTo || (r.key !== null && latest.get(r.key) === r.offset));
}
