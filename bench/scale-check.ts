/**
 * The scale benchmark's invariants once everything is loaded and cleaned: every partition is
 * indexed up to its roll record, the index holds exactly one row per live key (the latest of
 * each key, plus each partition's roll record), and reading each topic from offset 0 through
 * the proxy returns exactly one record per live key. The reads are also the figure of a
 * compacted read of everything.
 */
import { engineStatus } from './engine-client.js';
import { kbench, type KbenchResult } from './kbench.js';
import type { RunningProxyProcess } from './proxy-process.js';
import type { ScaleTopic } from './scale-load.js';

export interface TopicRead {
  topic: string;
  /** Live keys: the topic's keys and one roll record per partition. */
  expected: number;
  result: KbenchResult;
}

export interface Invariants {
  partitions: number;
  /** Partitions indexed at least up to their roll record. */
  indexedPartitions: number;
  /** Index rows over every partition, and what one row per live key makes. */
  indexRows: number;
  expectedRows: number;
  reads: TopicRead[];
  /** What failed; empty when every invariant holds. */
  problems: string[];
}

export async function checkInvariants(
  proxy: RunningProxyProcess,
  topics: ScaleTopic[],
  rollOffsets: Record<string, number[]>,
  log: (s: string) => void,
): Promise<Invariants> {
  const problems: string[] = [];
  const status = await engineStatus(proxy.admin);
  let partitions = 0;
  let indexedPartitions = 0;
  let indexRows = 0;
  for (const t of topics) {
    const rolls = rollOffsets[t.name]!;
    for (const p of status.partitions.filter((s) => s.topic === t.name)) {
      indexRows += p.indexedRecords;
      if (p.nextOffset > rolls[p.partition]!) indexedPartitions++;
    }
    partitions += t.partitions;
  }
  const expectedRows = topics.reduce((n, t) => n + t.keys + t.partitions, 0);
  if (indexedPartitions !== partitions) problems.push(`${partitions - indexedPartitions} of ${partitions} partitions are not indexed up to their roll record`);
  if (indexRows !== expectedRows) problems.push(`the index holds ${indexRows} rows, want ${expectedRows} (one per live key)`);

  const reads: TopicRead[] = [];
  for (const t of topics) {
    const expected = t.keys + t.partitions;
    log(`check: reading ${t.name} from offset 0 through the proxy (${expected} live keys)`);
    const result = await kbench('consume', proxy.bootstrap, t.name, ['--to-end', '--count-keys', '--timeout', '60m'], 3_600_000);
    reads.push({ topic: t.name, expected, result });
    if (result.records !== expected) problems.push(`reading ${t.name} returned ${result.records} records, want ${expected}`);
    if (result.distinctKeys !== result.records) problems.push(`reading ${t.name} returned ${result.records} records but ${result.distinctKeys} distinct keys`);
  }
  return { partitions, indexedPartitions, indexRows, expectedRows, reads, problems };
}
