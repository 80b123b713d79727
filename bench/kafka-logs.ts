/**
 * What a Kafka broker of the test bed holds for a partition and what its cleaner did, for the
 * carrying benchmark: the partition's size on disk as DescribeLogDirs gives it, its log start
 * and end (ListOffsets), the bytes its segments still hold below the log start (read from the
 * segment files: a broker deletes whole segments only), topic and logger configs set over the
 * bare protocol (IncrementalAlterConfigs, which kafkajs lacks), and the statistics Kafka's log
 * cleaner prints for each clean.
 */
import fs from 'node:fs';
import path from 'node:path';
import { ApiKey } from '../src/protocol/messages.js';
import { askOnce } from '../test/support/raw-client.js';
import { pollUntil } from '../test/support/index.js';

const DESCRIBE_LOG_DIRS_VERSION = 4;
const LIST_OFFSETS_VERSION = 7;
const INCREMENTAL_ALTER_CONFIGS_VERSION = 1;
const RESOURCE_TOPIC = 2;
const RESOURCE_BROKER_LOGGER = 8;
const OP_SET = 0;
const EARLIEST = -2n;
const LATEST = -1n;

/** Bytes of the partition's log segments, as DescribeLogDirs reports them (what `kafka-log-dirs.sh` prints). */
export async function partitionSize(bootstrap: string, topic: string, partition = 0): Promise<number> {
  const res = (await askOnce(bootstrap, ApiKey.DescribeLogDirs, DESCRIBE_LOG_DIRS_VERSION, { topics: [{ topic, partitions: [partition] }] })) as {
    errorCode?: number;
    results: { errorCode: number; logDir: string; topics: { name: string; partitions: { partitionIndex: number; partitionSize: bigint }[] }[] }[];
  };
  if (res.errorCode) throw new Error(`DescribeLogDirs: error ${res.errorCode}`);
  let size: number | undefined;
  for (const dir of res.results) {
    if (dir.errorCode) throw new Error(`DescribeLogDirs ${dir.logDir}: error ${dir.errorCode}`);
    for (const t of dir.topics) {
      const p = t.name === topic ? t.partitions.find((x) => x.partitionIndex === partition) : undefined;
      if (p) size = (size ?? 0) + Number(p.partitionSize);
    }
  }
  if (size === undefined) throw new Error(`DescribeLogDirs: no ${topic}-${partition}`);
  return size;
}

async function listOffset(bootstrap: string, topic: string, timestamp: bigint, partition: number): Promise<number> {
  const body = { replicaId: -1, isolationLevel: 0, topics: [{ name: topic, partitions: [{ partitionIndex: partition, currentLeaderEpoch: -1, timestamp }] }] };
  const res = (await askOnce(bootstrap, ApiKey.ListOffsets, LIST_OFFSETS_VERSION, body)) as {
    topics: { partitions: { errorCode: number; offset: bigint }[] }[];
  };
  const p = res.topics[0]?.partitions[0];
  if (!p || p.errorCode) throw new Error(`ListOffsets ${topic}-${partition}: error ${p?.errorCode}`);
  return Number(p.offset);
}

/** The partition's log start and high watermark, asked of the broker itself (not through a proxy). */
export async function logRange(bootstrap: string, topic: string, partition = 0): Promise<{ start: number; end: number }> {
  return { start: await listOffset(bootstrap, topic, EARLIEST, partition), end: await listOffset(bootstrap, topic, LATEST, partition) };
}

async function incrementalAlter(bootstrap: string, resourceType: number, resourceName: string, configs: Record<string, string>): Promise<void> {
  const body = {
    validateOnly: false,
    resources: [{ resourceType, resourceName, configs: Object.entries(configs).map(([name, value]) => ({ name, configOperation: OP_SET, value })) }],
  };
  const res = (await askOnce(bootstrap, ApiKey.IncrementalAlterConfigs, INCREMENTAL_ALTER_CONFIGS_VERSION, body)) as {
    responses: { errorCode: number; errorMessage: string | null }[];
  };
  const bad = res.responses.find((r) => r.errorCode !== 0);
  if (bad) throw new Error(`IncrementalAlterConfigs ${resourceName}: error ${bad.errorCode} ${bad.errorMessage ?? ''}`);
}

/** Sets topic configs on the broker directly (not through a proxy). */
export function setTopicConfigs(bootstrap: string, topic: string, configs: Record<string, string>): Promise<void> {
  return incrementalAlter(bootstrap, RESOURCE_TOPIC, topic, configs);
}

/**
 * The logger Kafka 4.4's cleaner threads print their statistics with, at INFO. The test bed's
 * brokers log warnings only, to stderr; raising this one logger at run time puts each clean's
 * figures in the broker's stderr.log.
 */
export const CLEANER_LOGGER = 'org.apache.kafka.storage.internals.log.LogCleaner$CleanerThread';

export function setBrokerLogLevel(bootstrap: string, brokerId: number, logger: string, level: string): Promise<void> {
  return incrementalAlter(bootstrap, RESOURCE_BROKER_LOGGER, String(brokerId), { [logger]: level });
}

export interface KafkaClean {
  /** The dirty section [from, to). */
  from: number;
  to: number;
  /** What the clean read and wrote (Kafka prints MB to one decimal: bytes are within 0.05 MiB). */
  bytesRead: number;
  bytesWritten: number;
  recordsRead: number;
  recordsWritten: number;
  seconds: number;
}

const num = (s: string) => Number(s.replace(/,/g, ''));

/**
 * The cleans of topic-partition that Kafka's cleaner logged (at INFO, CLEANER_LOGGER) in a
 * broker's log: "cleaned log T-P (dirty section = [a, b])", "X MB of log processed in S seconds",
 * "Start size: X MB (N messages)", "End size: Y MB (M messages)".
 */
export function kafkaCleans(brokerLog: string, topic: string, partition = 0): KafkaClean[] {
  const text = fs.existsSync(brokerLog) ? fs.readFileSync(brokerLog, 'utf8') : '';
  const name = `${topic}-${partition}`.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const re = new RegExp(
    `cleaned log ${name} \\(dirty section = \\[(\\d+), (\\d+)\\]\\)\\s+[\\d,.]+ MB of log processed in ([\\d,.]+) seconds[\\s\\S]*?` +
      `Start size: ([\\d,.]+) MB \\(([\\d,]+) messages\\)\\s+End size: ([\\d,.]+) MB \\(([\\d,]+) messages\\)`,
    'g',
  );
  const mb = 1024 * 1024;
  return [...text.matchAll(re)].map((m) => ({
    from: num(m[1]!),
    to: num(m[2]!),
    seconds: num(m[3]!),
    bytesRead: num(m[4]!) * mb,
    recordsRead: num(m[5]!),
    bytesWritten: num(m[6]!) * mb,
    recordsWritten: num(m[7]!),
  }));
}

/** The directory of topic-partition under a broker's log dir. */
export function partitionDir(logDir: string, topic: string, partition = 0): string {
  return path.join(logDir, `${topic}-${partition}`);
}

/** Base offsets of the partition's segments, ascending. */
export function segmentBases(dir: string): number[] {
  return fs
    .readdirSync(dir)
    .filter((f) => /^\d{20}\.log$/.test(f))
    .map((f) => Number(f.slice(0, 20)))
    .sort((a, b) => a - b);
}

/**
 * Bytes of whole batches below `logStart` still in the partition's segment files: the part of
 * the first segment a broker keeps although its log start moved past it (it deletes whole
 * segments only, once the next segment starts at or below the log start).
 */
export function bytesBelowLogStart(dir: string, logStart: number): number {
  let below = 0;
  for (const base of segmentBases(dir)) {
    if (base >= logStart) break;
    const buf = fs.readFileSync(path.join(dir, `${String(base).padStart(20, '0')}.log`));
    // A batch: base offset (8), length (4), leader epoch (4), magic (1), CRC (4), attributes (2), last offset delta (4), ...
    for (let pos = 0; pos + 27 <= buf.length;) {
      const size = 12 + buf.readInt32BE(pos + 8);
      if (Number(buf.readBigInt64BE(pos)) + buf.readInt32BE(pos + 23) >= logStart) return below;
      below += size;
      pos += size;
    }
  }
  return below;
}

/**
 * Waits until the partition's size has not changed for `quietMs` (segments below a moved log
 * start, or replaced by a clean, are deleted a moment later); resolves with that size.
 */
export async function settledSize(bootstrap: string, topic: string, deadlineMs: number, quietMs = 3000): Promise<number> {
  let last = -1;
  let since = performance.now();
  return pollUntil(`the size of ${topic}-0 on ${bootstrap} to settle`, deadlineMs, async () => {
    const size = await partitionSize(bootstrap, topic);
    if (size !== last) {
      last = size;
      since = performance.now();
      return undefined;
    }
    return performance.now() - since >= quietMs ? size : undefined;
  });
}
