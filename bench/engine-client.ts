/**
 * The benchmarks' view of a running proxy's compaction engine: its management endpoint
 * (`GET /status`, `POST /compact`, as `kcompact status` and `kcompact compact` use them) and the
 * index files in its data directory.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { CleanReport } from '../src/compaction/cleaner/cleaner.js';
import { topicIndexDir } from '../src/compaction/index/index-files.js';
import type { EngineStatus, PartitionStatus } from '../src/compaction/worker/engine-status.js';
import { pollUntil } from '../test/support/index.js';

export async function engineStatus(management: string): Promise<EngineStatus> {
  const res = await fetch(`http://${management}/status`);
  if (!res.ok) throw new Error(`GET /status: ${res.status} ${await res.text()}`);
  return (await res.json()) as EngineStatus;
}

/** Cleans the topic now; resolves when the clean has run. */
export async function compactNow(management: string, topic: string): Promise<CleanReport> {
  const res = await fetch(`http://${management}/compact?topic=${encodeURIComponent(topic)}`, { method: 'POST' });
  if (!res.ok) throw new Error(`POST /compact: ${res.status} ${await res.text()}`);
  return (await res.json()) as CleanReport;
}

export function partitionsOf(status: EngineStatus, topic: string): PartitionStatus[] {
  return status.partitions.filter((p) => p.topic === topic);
}

/** Waits until the engine has indexed the topic's partition 0 up to `offset` (exclusive). */
export async function waitIndexed(management: string, topic: string, offset: number, deadlineMs: number, gone?: () => string | undefined): Promise<PartitionStatus> {
  return pollUntil(`${topic}-0 indexed up to ${offset}`, deadlineMs, async () => {
    const p = partitionsOf(await engineStatus(management), topic).find((s) => s.partition === 0);
    return p && p.nextOffset >= offset ? p : undefined;
  }, gone);
}

/**
 * Cleans the topic's partition 0 until the cleaner's first dirty offset reaches `offset` (the
 * start of the active segment after a roll); resolves with the seconds each clean took.
 */
export async function cleanUpTo(management: string, topic: string, offset: number, deadlineMs: number): Promise<number[]> {
  const calls: number[] = [];
  await pollUntil(`${topic}-0 cleaned up to ${offset}`, deadlineMs, async () => {
    const report = await compactNow(management, topic);
    calls.push(...report.cleaned.filter((c) => c.partition === 0).map((c) => c.durationMs / 1000));
    const p = partitionsOf(await engineStatus(management), topic).find((s) => s.partition === 0);
    return p && p.cleanedUpTo >= offset ? p : undefined;
  });
  return calls;
}

/** Bytes of the topic's index files on disk (SQLite database and WAL). */
export function indexBytes(dataDir: string, topic: string): number {
  const dir = topicIndexDir(dataDir, topic);
  if (!fs.existsSync(dir)) return 0;
  // The -shm file is a memory map the size of the WAL index, not data.
  return fs.readdirSync(dir).filter((f) => !f.endsWith('-shm')).reduce((n, f) => n + fs.statSync(path.join(dir, f)).size, 0);
}
