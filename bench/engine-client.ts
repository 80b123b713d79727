/**
 * The benchmarks' view of a running proxy's compaction engine: its admin listener
 * (`GET /status`, `GET /inspect`, `POST /compact`, as the `kcompact` admin verbs use them) and the
 * index files in its data directory.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { CleanReport, EngineStatus, PartitionDetail, PartitionStatus } from '../src/engine/api/engine-reports.js';
import { indexRoot, topicIndexFile } from '../src/engine/store/index-files.js';
import { pollUntil } from '../test/support/index.js';

export async function engineStatus(admin: string): Promise<EngineStatus> {
  const res = await fetch(`http://${admin}/status`);
  if (!res.ok) throw new Error(`GET /status: ${res.status} ${await res.text()}`);
  return (await res.json()) as EngineStatus;
}

/** Cleans the topic now; resolves when the clean has run. */
export async function compactNow(admin: string, topic: string): Promise<CleanReport> {
  const res = await fetch(`http://${admin}/compact?topic=${encodeURIComponent(topic)}`, { method: 'POST' });
  if (!res.ok) throw new Error(`POST /compact: ${res.status} ${await res.text()}`);
  return (await res.json()) as CleanReport;
}

/** The topic's indexed partitions in detail (GET /inspect, as `kcompact inspect` asks). */
export async function inspectTopic(admin: string, topic: string): Promise<PartitionDetail[]> {
  const res = await fetch(`http://${admin}/inspect?topic=${encodeURIComponent(topic)}`);
  if (!res.ok) throw new Error(`GET /inspect: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { partitions: PartitionDetail[] }).partitions;
}

export function partitionsOf(status: EngineStatus, topic: string): PartitionStatus[] {
  return status.partitions.filter((p) => p.topic === topic);
}

/** Waits until the engine has indexed the topic's partition 0 up to `offset` (exclusive). */
export async function waitIndexed(admin: string, topic: string, offset: number, deadlineMs: number, gone?: () => string | undefined): Promise<PartitionStatus> {
  return (await waitIndexedAll(admin, topic, [offset], deadlineMs, gone))[0]!;
}

/** Waits until the engine has indexed each partition p of the topic up to offsets[p] (exclusive). */
export async function waitIndexedAll(
  admin: string,
  topic: string,
  offsets: number[],
  deadlineMs: number,
  gone?: () => string | undefined,
): Promise<PartitionStatus[]> {
  const what = offsets.length === 1 ? `${topic}-0 indexed up to ${offsets[0]}` : `${offsets.length} partitions of ${topic} indexed`;
  return pollUntil(
    what,
    deadlineMs,
    async () => {
      const ps = partitionsOf(await engineStatus(admin), topic);
      const at = offsets.map((o, p) => ps.find((s) => s.partition === p && s.nextOffset >= o));
      return at.every((s) => s !== undefined) ? (at as PartitionStatus[]) : undefined;
    },
    gone,
  );
}

/**
 * Cleans the topic's partition 0 until the cleaner's first dirty offset reaches `offset` (the
 * start of the active segment after a roll); resolves with the seconds each clean-now call spent on it.
 */
export async function cleanUpTo(admin: string, topic: string, offset: number, deadlineMs: number): Promise<number[]> {
  return cleanUpToAll(admin, topic, [offset], deadlineMs);
}

/**
 * Cleans the topic until each partition p's first dirty offset reaches offsets[p]; resolves with
 * the seconds each clean-now call spent cleaning those partitions.
 */
export async function cleanUpToAll(admin: string, topic: string, offsets: number[], deadlineMs: number): Promise<number[]> {
  const calls: number[] = [];
  const what = offsets.length === 1 ? `${topic}-0 cleaned up to ${offsets[0]}` : `${offsets.length} partitions of ${topic} cleaned`;
  await pollUntil(what, deadlineMs, async () => {
    const report = await compactNow(admin, topic);
    calls.push(report.cleaned.filter((c) => c.partition < offsets.length).reduce((n, c) => n + c.durationMs / 1000, 0));
    const ps = partitionsOf(await engineStatus(admin), topic);
    return offsets.every((o, p) => ps.some((s) => s.partition === p && s.cleanedUpTo >= o)) ? true : undefined;
  });
  return calls;
}

/** Bytes of the topic's index file on disk (SQLite database and WAL). */
export function indexBytes(dataDir: string, topic: string): number {
  const file = topicIndexFile(dataDir, topic);
  // The -shm file is a memory map the size of the WAL index, not data.
  return [file, `${file}-wal`].reduce((n, f) => n + (fs.existsSync(f) ? fs.statSync(f).size : 0), 0);
}

export interface IndexFiles {
  /** Index files (one per topic). */
  files: number;
  /** Bytes of the SQLite databases, of their write-ahead logs, of their shared-memory (-shm) maps. */
  db: number;
  wal: number;
  shm: number;
}

/** The sizes of every index file under the data directory. */
export function indexFiles(dataDir: string): IndexFiles {
  const out: IndexFiles = { files: 0, db: 0, wal: 0, shm: 0 };
  const root = indexRoot(dataDir);
  if (!fs.existsSync(root)) return out;
  // Files may go between listing and stat (a topic's index dropped).
  const list = (dir: string) => {
    try {
      return fs.readdirSync(dir);
    } catch {
      return [];
    }
  };
  for (const f of list(root)) {
    let size: number;
    try {
      size = fs.statSync(path.join(root, f)).size;
    } catch {
      continue;
    }
    if (f.endsWith('-wal')) out.wal += size;
    else if (f.endsWith('-shm')) out.shm += size;
    else {
      out.db += size;
      out.files++;
    }
  }
  return out;
}
