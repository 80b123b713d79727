/**
 * Checks for the fault tests (test/integration/faults-*.test.ts) on a compacted topic written by
 * FaultProducer (fault-clients.ts): the upstream log read directly, every acknowledged record in
 * it where the producer was told, the compacted view a proxy serves against what the records
 * imply, and one proxy's key index against another's, table by table.
 */
import assert from 'node:assert/strict';
// kafkajs is CommonJS: Node's ESM loader sees only its default export as a value.
import kafkajs from 'kafkajs';
import { topicIndexFile } from '../../src/engine/store/index-files.js';
import { PartitionStore } from '../../src/engine/store/partition-store.js';
import { TopicIndex } from '../../src/engine/store/topic-index.js';
import type { EngineStatus, PartitionStatus } from '../../src/engine/api/engine-reports.js';
import type { Ack } from './fault-clients.js';
import type { CliProxy } from './kcompact-cli.js';
import { pollUntil } from './processes.js';
import { franzConsume } from './runners.js';
import { genRecord, type RecordView } from './summary.js';

export interface UpstreamLog {
  /** High watermark per partition. */
  highWatermarks: number[];
  records: RecordView[];
}

/** Every record of the topic as the upstream holds it, read straight from the upstream. */
export async function readUpstream(bootstrap: string, topic: string): Promise<UpstreamLog> {
  const admin = new kafkajs.Kafka({ clientId: 'fault-checks', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  let highWatermarks: number[];
  try {
    const offsets = await admin.fetchTopicOffsets(topic);
    highWatermarks = offsets.sort((a, b) => a.partition - b.partition).map((o) => Number(o.high));
    assert.ok(
      offsets.every((o) => Number(o.low) === 0),
      `the upstream kept the whole log: ${JSON.stringify(offsets)}`,
    );
  } finally {
    await admin.disconnect();
  }
  const count = highWatermarks.reduce((a, b) => a + b, 0);
  const records = count === 0 ? [] : (await franzConsume(bootstrap, { topic, count, records: true, timeoutMs: 60_000 })).records!;
  return { highWatermarks, records };
}

/** The index I of the bed's value "value-I-...", or undefined for a tombstone. */
function valueIndex(value: string | null): number | undefined {
  return value === null ? undefined : Number(/^value-(\d+)-/.exec(value)![1]);
}

/**
 * Every acknowledged record is in the upstream log at the offset its acknowledgement gave, with
 * its key and value; no record of the idempotent producer is there twice, and each partition
 * holds them in the order they were sent.
 */
export function assertAcknowledgedInOrder(log: UpstreamLog, acks: readonly Ack[], gen: { keys: number; valueSize: number; tombstoneEvery: number }): void {
  const at = new Map(log.records.map((r) => [`${r.partition}/${r.offset}`, r]));
  for (const ack of acks) {
    const { key, value } = genRecord(ack.index, gen.keys, gen.valueSize, gen.tombstoneEvery);
    const found = at.get(`${ack.partition}/${ack.offset}`);
    assert.ok(found, `acknowledged record ${ack.index} (partition ${ack.partition}, offset ${ack.offset}) is missing upstream`);
    assert.deepEqual([found.key, found.value], [key!.toString(), value?.toString() ?? null], `record ${ack.index} at ${ack.partition}/${ack.offset}`);
  }
  const seen = new Set<number>();
  const last = new Map<number, number>();
  for (const r of log.records) {
    const index = valueIndex(r.value);
    if (index === undefined) continue;
    assert.ok(!seen.has(index), `record ${index} is in the upstream twice (the second at ${r.partition}/${r.offset})`);
    seen.add(index);
    assert.ok((last.get(r.partition) ?? -1) < index, `partition ${r.partition}: record ${index} at offset ${r.offset} after record ${last.get(r.partition)}`);
    last.set(r.partition, index);
  }
}

/**
 * Whether the tombstones a clean kept are gone by the time of a check (delete.retention.ms 0: the
 * second clean that covers one removes it) or still there (a delete.retention.ms longer than the
 * test).
 */
export type Tombstones = 'expired' | 'kept';

/**
 * What Kafka's cleaner leaves of the log once it has cleaned up to `cleanedUpTo` (per partition):
 * below it the latest record of each key (tombstones as `tombstones` says), from it on everything.
 */
export function compactedModel(log: UpstreamLog, cleanedUpTo: readonly number[], tombstones: Tombstones): RecordView[] {
  const latest = new Map<string, RecordView>();
  for (const r of log.records) if (r.offset < cleanedUpTo[r.partition]! && r.key !== null) latest.set(`${r.partition}/${r.key}`, r);
  const kept = new Set([...latest.values()].filter((r) => r.value !== null || tombstones === 'kept'));
  return log.records.filter((r) => r.offset >= cleanedUpTo[r.partition]! || kept.has(r));
}

/** What a reader of the topic through the proxy gets, from offset 0 to the end, franz-go checking every batch. */
export async function readThrough(proxy: CliProxy, topic: string, count: number): Promise<RecordView[]> {
  return count === 0 ? [] : (await franzConsume(proxy.bootstrap, { topic, count, records: true, timeoutMs: 60_000 })).records!;
}

/** The topic's partitions as the proxy's engine reports them, in partition order. */
export async function partitionsOf(proxy: CliProxy, topic: string): Promise<PartitionStatus[]> {
  const res = await proxy.http('/status');
  assert.equal(res.status, 200, `GET /status: ${res.body}`);
  return (JSON.parse(res.body) as EngineStatus).partitions.filter((p) => p.topic === topic).sort((a, b) => a.partition - b.partition);
}

/** Waits until the proxy has indexed every partition up to the given high watermarks. */
export async function indexedTo(proxy: CliProxy, topic: string, highWatermarks: readonly number[], deadlineMs = 60_000): Promise<void> {
  await pollUntil(`${proxy.bootstrap} indexes ${topic} to ${highWatermarks.join(',')}`, deadlineMs, async () => {
    const parts = await partitionsOf(proxy, topic);
    return parts.length === highWatermarks.length && parts.every((p) => p.nextOffset === highWatermarks[p.partition]) ? true : undefined;
  });
}

/**
 * Cleans the topic twice through the management API: the first clean covers everything up to
 * the active segment and starts the tombstones' delete horizons, the second removes those that
 * have passed (all of them with delete.retention.ms 0). Returns how far each partition is cleaned.
 */
export async function cleanFully(proxy: CliProxy, topic: string): Promise<number[]> {
  for (let i = 0; i < 2; i++) {
    const res = await proxy.http(`/compact?topic=${encodeURIComponent(topic)}`, 'POST');
    assert.equal(res.status, 200, `POST /compact: ${res.body}`);
  }
  return (await partitionsOf(proxy, topic)).map((p) => p.cleanedUpTo);
}

interface IndexDump {
  checkpoint: unknown;
  records: unknown[][];
  keys: unknown[][];
  segments: unknown[][];
  openTransactions: unknown[][];
}

/**
 * One partition's index, read-only from its topic's file (the proxy may be running: SQLite's
 * WAL lets a reader in; opening it checks its schema version and topic). Everything but the
 * topic id and the times of cleaning: when each delete horizon started differs between two
 * proxies, only whether it did must not.
 */
export function dumpIndex(dataDir: string, topic: string, partition: number): IndexDump {
  const index = TopicIndex.openReadOnly(topicIndexFile(dataDir, topic), topic);
  try {
    const store = PartitionStore.within(index, partition);
    const { topicId: _topicId, lastCleanMs: _lastCleanMs, ...checkpoint } = store.checkpoint;
    return {
      checkpoint: { topic: index.topic, partition, ...checkpoint, keyIdentity: store.keyIdentity },
      records: store
        .rowsIn(0, Infinity)
        .map((r) => [r.offset, r.key?.toString('hex') ?? null, r.flags, r.timestamp, r.size, r.producerId, r.txnFirst, r.horizon !== null]),
      keys: store.keptKeys().map((k) => [k.key.toString('hex'), k.offset]),
      segments: store.segments.map((g) => [g.base, g.rollingTimestamp, g.maxTimestamp, g.bytes]),
      openTransactions: [...store.openTransactions].sort(([a], [b]) => a - b),
    };
  } finally {
    index.close();
  }
}

function assertSameRows(what: string, actual: unknown[][], expected: unknown[][]): void {
  const i = actual.findIndex((row, n) => JSON.stringify(row) !== JSON.stringify(expected[n]));
  assert.ok(
    i < 0 && actual.length === expected.length,
    `${what}: ${actual.length} rows, want ${expected.length}; first difference at row ${i}: ${JSON.stringify(actual[i])}, want ${JSON.stringify(expected[i])}`,
  );
}

/** Two partition indexes hold the same rows in every table, and the same checkpoint. */
export function assertSameIndex(what: string, actual: IndexDump, expected: IndexDump): void {
  assert.deepEqual(actual.checkpoint, expected.checkpoint, `${what}: checkpoint`);
  assertSameRows(`${what}: records`, actual.records, expected.records);
  assertSameRows(`${what}: keys`, actual.keys, expected.keys);
  assertSameRows(`${what}: segments`, actual.segments, expected.segments);
  assertSameRows(`${what}: open transactions`, actual.openTransactions, expected.openTransactions);
}

/**
 * With the producer paused: `proxy` and `reference` have indexed everything the upstream holds
 * and cleaned all of it, to the same horizon; their indexes are identical, each holds below
 * that horizon exactly the records the log implies, and a reader through either proxy gets
 * exactly those records and everything past the horizon.
 */
export async function assertSameCompaction(topic: string, log: UpstreamLog, proxy: CliProxy, reference: CliProxy, tombstones: Tombstones): Promise<number[]> {
  await Promise.all([indexedTo(proxy, topic, log.highWatermarks), indexedTo(reference, topic, log.highWatermarks)]);
  const [cleaned, referenceCleaned] = await Promise.all([cleanFully(proxy, topic), cleanFully(reference, topic)]);
  assert.deepEqual(cleaned, referenceCleaned, 'both proxies cleaned up to the same offsets');
  const model = compactedModel(log, cleaned, tombstones);
  for (let p = 0; p < log.highWatermarks.length; p++) {
    const dump = dumpIndex(proxy.dataDir, topic, p);
    assertSameIndex(`partition ${p}`, dump, dumpIndex(reference.dataDir, topic, p));
    const survivors = dump.records.filter((r) => (r[0] as number) < cleaned[p]!).map((r) => r[0]);
    assert.deepEqual(
      survivors,
      model.filter((r) => r.partition === p && r.offset < cleaned[p]!).map((r) => r.offset),
      `partition ${p}: survivors`,
    );
  }
  const [through, throughReference] = await Promise.all([readThrough(proxy, topic, model.length), readThrough(reference, topic, model.length)]);
  assert.deepEqual(through, model, 'the view through the proxy');
  assert.deepEqual(throughReference, model, 'the view through the reference proxy');
  return cleaned;
}
