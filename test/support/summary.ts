/**
 * The bed's shared record generator and summary format (test/peers/README.md). franzclient
 * (Go), ck.py (Python) and the TypeScript clients here all produce the same bytes for the same
 * record index and summarize what they read the same way, so a run through the proxy can be
 * compared with a direct run with deepEqual.
 */
import { createHash } from 'node:crypto';

export type Compression = 'none' | 'gzip' | 'snappy' | 'lz4' | 'zstd';

export interface ProduceSpec {
  topic: string;
  /** Records to produce (default 100). */
  count?: number;
  /** Index of the first record; a later round with a higher start overwrites keys (default 0). */
  start?: number;
  /** Distinct keys, cycled; 0 makes keyless records (default 10). */
  keys?: number;
  /** Value bytes (default 32). */
  valueSize?: number;
  /** Every Nth record gets a null value (default 0: never). */
  tombstoneEvery?: number;
  compression?: Compression;
  /** Create the topic with this many partitions first (TOPIC_ALREADY_EXISTS is fine). */
  createPartitions?: number;
  /** Topic configs for createPartitions. */
  topicConfigs?: Record<string, string>;
  timeoutMs?: number;
}

export interface ConsumeSpec {
  topic: string;
  /** Records expected; fewer by the deadline, or more, is an error. */
  count: number;
  /** Consumer group (clients that always need one make up a fresh one when absent). */
  group?: string;
  isolation?: 'read_uncommitted' | 'read_committed';
  /** Also list every record. */
  records?: boolean;
  timeoutMs?: number;
  /** The bed's command-line clients: once a record has been read, also stop after this long without another. */
  idleMs?: number;
}

export interface ProducedPartition {
  count: number;
  firstOffset: number;
  lastOffset: number;
}

export interface ProduceSummary {
  count: number;
  partitions: Record<string, ProducedPartition>;
  errors: string[];
  client: Record<string, unknown>;
}

export interface PartitionRecords {
  count: number;
  firstOffset: number;
  lastOffset: number;
  offsets: number[];
  /** SHA-256 over (offset, key, value) of each record in offset order, lengths included. */
  digest: string;
}

export interface RecordView {
  partition: number;
  offset: number;
  /** UTF-8 text, or "hex:..." for bytes that are not; null for a null key or value. */
  key: string | null;
  value: string | null;
}

export interface ConsumeSummary {
  count: number;
  partitions: Record<string, PartitionRecords>;
  errors: string[];
  client: Record<string, unknown>;
  records?: RecordView[];
  transactions?: { committed: number; aborted: number };
}

export interface ConsumedRecord {
  partition: number;
  offset: number;
  key: Buffer | null;
  value: Buffer | null;
}

/** Record `i` of a produce run, byte for byte what franzclient and ck.py produce. */
export function genRecord(i: number, keys: number, valueSize: number, tombstoneEvery: number): { key: Buffer | null; value: Buffer | null } {
  const key = keys > 0 ? Buffer.from(`key-${String(i % keys).padStart(6, '0')}`) : null;
  if (tombstoneEvery > 0 && (i + 1) % tombstoneEvery === 0) return { key, value: null };
  const prefix = Buffer.from(`value-${i}-`);
  const value = Buffer.alloc(Math.max(prefix.length, valueSize));
  prefix.copy(value);
  for (let j = prefix.length; j < valueSize; j++) value[j] = 0x61 + ((i + j) % 26);
  return { key, value: value.subarray(0, valueSize) };
}

function lengthPrefixed(b: Buffer | null): Buffer[] {
  const len = Buffer.alloc(4);
  len.writeInt32BE(b === null ? -1 : b.length);
  return b === null ? [len] : [len, b];
}

function text(b: Buffer | null): string | null {
  if (b === null) return null;
  const s = b.toString('utf8');
  return Buffer.from(s, 'utf8').equals(b) ? s : `hex:${b.toString('hex')}`;
}

/** Builds the consume summary the Go and Python clients print, from records read in TypeScript. */
export function summarize(
  recs: ConsumedRecord[],
  client: Record<string, unknown>,
  opts: { expected: number; records?: boolean; errors?: string[] },
): ConsumeSummary {
  const errors = [...(opts.errors ?? [])];
  const byPartition = new Map<number, ConsumedRecord[]>();
  for (const r of recs) {
    const list = byPartition.get(r.partition) ?? [];
    list.push(r);
    byPartition.set(r.partition, list);
  }
  const partitions: Record<string, PartitionRecords> = {};
  for (const [p, list] of byPartition) {
    list.sort((a, b) => a.offset - b.offset);
    const h = createHash('sha256');
    list.forEach((r, idx) => {
      if (idx > 0 && list[idx - 1]!.offset === r.offset) errors.push(`partition ${p}: offset ${r.offset} delivered twice`);
      const off = Buffer.alloc(8);
      off.writeBigInt64BE(BigInt(r.offset));
      h.update(off);
      for (const part of [...lengthPrefixed(r.key), ...lengthPrefixed(r.value)]) h.update(part);
    });
    partitions[String(p)] = {
      count: list.length,
      firstOffset: list[0]!.offset,
      lastOffset: list[list.length - 1]!.offset,
      offsets: list.map((r) => r.offset),
      digest: h.digest('hex'),
    };
  }
  if (errors.length === 0 && recs.length < opts.expected) errors.push(`saw ${recs.length} of ${opts.expected} records before the deadline`);
  if (recs.length > opts.expected) errors.push(`saw ${recs.length} records, expected ${opts.expected}`);
  const out: ConsumeSummary = { count: recs.length, partitions, errors: errors.sort(), client };
  if (opts.records) {
    out.records = [...recs]
      .sort((a, b) => a.partition - b.partition || a.offset - b.offset)
      .map((r) => ({ partition: r.partition, offset: r.offset, key: text(r.key), value: text(r.value) }));
  }
  return out;
}

/** What two runs must agree on to count as identical: the records, not the client's details. */
export function comparable(s: ConsumeSummary): Pick<ConsumeSummary, 'count' | 'partitions' | 'records'> {
  return s.records ? { count: s.count, partitions: s.partitions, records: s.records } : { count: s.count, partitions: s.partitions };
}

/** Flags shared by every producing subcommand of franzclient and ck.py, after brokers and topic. */
export function generatorFlags(spec: Omit<ProduceSpec, 'topic' | 'count' | 'tombstoneEvery'>): string[] {
  const flags: string[] = [];
  if (spec.start !== undefined) flags.push('--start', String(spec.start));
  if (spec.keys !== undefined) flags.push('--keys', String(spec.keys));
  if (spec.valueSize !== undefined) flags.push('--value-size', String(spec.valueSize));
  if (spec.compression !== undefined) flags.push('--compression', spec.compression);
  if (spec.createPartitions !== undefined) flags.push('--create-partitions', String(spec.createPartitions));
  for (const [k, v] of Object.entries(spec.topicConfigs ?? {})) flags.push('--topic-config', `${k}=${v}`);
  if (spec.timeoutMs !== undefined) flags.push('--timeout-ms', String(spec.timeoutMs));
  return flags;
}

/** The shared command-line flags of `franzclient produce` and `ck.py produce`. */
export function produceFlags(bootstrap: string, spec: ProduceSpec): string[] {
  const flags = ['--brokers', bootstrap, '--topic', spec.topic, '--count', String(spec.count ?? 100)];
  if (spec.tombstoneEvery !== undefined) flags.push('--tombstone-every', String(spec.tombstoneEvery));
  return [...flags, ...generatorFlags(spec)];
}

/** The shared command-line flags of `franzclient consume` and `ck.py consume`. */
export function consumeFlags(bootstrap: string, spec: ConsumeSpec): string[] {
  const flags = ['--brokers', bootstrap, '--topic', spec.topic, '--count', String(spec.count)];
  if (spec.group !== undefined) flags.push('--group', spec.group);
  if (spec.isolation !== undefined) flags.push('--isolation', spec.isolation);
  if (spec.records) flags.push('--records');
  if (spec.timeoutMs !== undefined) flags.push('--timeout-ms', String(spec.timeoutMs));
  if (spec.idleMs !== undefined) flags.push('--idle-ms', String(spec.idleMs));
  return flags;
}
