/**
 * Index ingest rate: how many records per second one core turns from fetched record batches
 * into key-index rows (parse, key digests, SQLite inserts and checkpoints), for a partition of
 * 1M records over 10k keys in batches of ~500, uncompressed and lz4; per wall-clock second and
 * per CPU second (the machine may be shared). With --kafka, also end to end: a Kafka 4.4 broker
 * (compaction off) gets the partition from kbench, then the compaction worker indexes it from
 * offset 0; --upstream HOST:PORT --topic T does the same against a partition already there.
 * Prints figures; asserts nothing.
 *
 *   node dist/bench/index-ingest.js [--records 1000000] [--kafka | --upstream HOST:PORT --topic T]
 */
import { DEFAULT_POLICY } from '../test/support/default-policy.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { collectRows } from '../src/engine/indexer/fetched-rows.js';
import { PartitionStore } from '../src/engine/store/partition-store.js';
import { RowBuffer } from '../src/engine/store/row-buffer.js';
import { startCompactionEngine } from '../src/compaction/engine-client/compaction-engine.js';
import { engineOptions } from '../src/engine/api/engine-options.js';
import { encodeBatch, type RecordInput } from '../src/protocol/records/batch.js';
import { Compression } from '../src/protocol/records/compression.js';
import { createLogger } from '../src/common/log.js';
import kafkajs from 'kafkajs';
import { binDir } from '../test/support/paths.js';
import { missingPeers, runProcess, startKafka } from '../test/support/index.js';
import { printHelpAndExit } from './bench-help.js';
import { numberFlags } from './number-flag.js';

const OPTIONS = {
  records: { type: 'string', default: '1000000' },
  keys: { type: 'string', default: '10000' },
  batch: { type: 'string', default: '500' },
  'value-size': { type: 'string', default: '100' },
  upstream: { type: 'string' },
  topic: { type: 'string' },
  kafka: { type: 'boolean', default: false },
  table: { type: 'boolean', default: false },
  help: { type: 'boolean', default: false },
} as const;

const HELP: Record<keyof typeof OPTIONS, string> = {
  records: 'records of the partition indexed',
  keys: 'distinct keys, drawn at random',
  batch: 'records per batch',
  'value-size': 'value bytes',
  upstream: 'also index --topic from this upstream (HOST:PORT), end to end',
  topic: 'the topic --upstream holds (every partition is indexed)',
  kafka: 'also end to end: a Kafka 4.4 broker gets the partition from kbench, then the worker indexes it',
  table: 'also index it as a partition the table API reads (its latest record per key kept in memory), side by side',
  help: 'print the flags',
};

const { values } = parseArgs({ options: OPTIONS });
if (values.help) printHelpAndExit('node dist/bench/index-ingest.js [flags]', OPTIONS, HELP);
if ((values.upstream === undefined) !== (values.topic === undefined)) throw new Error('--upstream and --topic go together');
const number = numberFlags(values);
const RECORDS = number('records');
const KEYS = number('keys');
const PER_BATCH = number('batch');
const VALUE_SIZE = number('value-size');
const FETCH_BYTES = 8 * 1024 * 1024;

/** The partition as fetch answers of ~8 MiB, like the indexer receives them. */
async function fetchAnswers(codec: number): Promise<Buffer[]> {
  const answers: Buffer[] = [];
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  const value = Buffer.alloc(VALUE_SIZE, 0x61);
  for (let base = 0; base < RECORDS; base += PER_BATCH) {
    const records: RecordInput[] = [];
    for (let i = 0; i < Math.min(PER_BATCH, RECORDS - base); i++) {
      const k = Math.floor(Math.random() * KEYS);
      records.push({ timestampDelta: i, offsetDelta: i, key: Buffer.from(`key-${k}`), value });
    }
    const batch = await encodeBatch(
      {
        baseOffset: BigInt(base),
        partitionLeaderEpoch: 0,
        attributes: 0,
        lastOffsetDelta: records.length - 1,
        baseTimestamp: 1_700_000_000_000n,
        maxTimestamp: 1_700_000_000_000n + BigInt(records.length - 1),
        producerId: -1n,
        producerEpoch: -1,
        baseSequence: -1,
      },
      records,
      codec,
    );
    pending.push(batch);
    pendingBytes += batch.length;
    if (pendingBytes >= FETCH_BYTES) {
      answers.push(Buffer.concat(pending));
      pending = [];
      pendingBytes = 0;
    }
  }
  if (pending.length) answers.push(Buffer.concat(pending));
  return answers;
}

function rate(records: number, seconds: number): string {
  return Math.round(records / seconds).toLocaleString('en');
}

async function inProcess(codec: number, name: string, table = false): Promise<void> {
  const answers = await fetchAnswers(codec);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-ingest-'));
  try {
    const { store } = PartitionStore.open(path.join(dir, 'p.sqlite'), { topic: 'bench', partition: 0 });
    const rows = new RowBuffer(4096);
    // A table read before the first ingest: from then on ingest keeps each key's latest record.
    if (table) store.latestOf(Buffer.alloc(16));
    const roll = { segmentBytes: DEFAULT_POLICY.segmentBytes, maxSegmentMs: DEFAULT_POLICY.segmentMs };
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    for (const answer of answers) {
      rows.clear();
      const r = await collectRows(answer, [], store.checkpoint.nextOffset, -1, store.openTransactions, rows);
      store.ingest(rows, { nextOffset: r.nextOffset, logStartOffset: 0, lastStableOffset: r.nextOffset, highWatermark: RECORDS }, roll, false);
    }
    const seconds = (performance.now() - started) / 1000;
    const cpu = process.cpuUsage(cpuBefore);
    const bytes = answers.reduce((n, a) => n + a.length, 0);
    const cpuSeconds = (cpu.user + cpu.system) / 1e6;
    console.log(
      `${name.padEnd(14)} ${RECORDS} records (${(bytes / 2 ** 20).toFixed(0)} MiB) in ${seconds.toFixed(2)} s: ` +
        `${rate(RECORDS, seconds)} records/s, ${rate(RECORDS, cpuSeconds)} records per CPU second, ` +
        `index file ${(fs.statSync(path.join(dir, 'p.sqlite')).size / 2 ** 20).toFixed(0)} MiB`,
    );
    store.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function endToEnd(upstream: string, topic: string): Promise<void> {
  const [host, port] = upstream.split(':');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-ingest-e2e-'));
  const engine = await startCompactionEngine(
    engineOptions({
      connection: { upstream: [{ host: host!, port: Number(port) }] },
      dataDir,
      // Every compacted partition, not only those a client uses: the records are written around the engine.
      indexing: { onDemand: false },
      cleaner: { backoffMs: 3_600_000 },
    }),
    createLogger({ component: 'bench' }),
  );
  try {
    const started = performance.now();
    engine.setPolicies(new Map([[topic, DEFAULT_POLICY]]));
    let indexed = 0;
    for (;;) {
      await new Promise((r) => setTimeout(r, 50));
      const partitions = (await engine.status()).partitions;
      indexed = partitions.reduce((n, p) => n + p.nextOffset, 0);
      if (partitions.length > 0 && partitions.every((p) => p.highWatermark > 0 && p.nextOffset === p.highWatermark)) break;
    }
    const seconds = (performance.now() - started) / 1000;
    console.log(`worker e2e     ${indexed} records from ${upstream} in ${seconds.toFixed(2)} s: ${rate(indexed, seconds)} records/s`);
  } finally {
    await engine.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

/** A Kafka 4.4 broker (compaction off) holding the partition, written by kbench. */
async function withKafka(run: (bootstrap: string, topic: string) => Promise<void>): Promise<void> {
  const missing = missingPeers();
  if (missing.length) throw new Error(`--kafka needs the test bed (${missing.join(', ')}): run bash test/peers/install.sh`);
  const kafka = await startKafka({ compaction: 'off' });
  const topic = 'ingest';
  try {
    const admin = new kafkajs.Kafka({ clientId: 'bench', brokers: [kafka.bootstrap], logLevel: kafkajs.logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
    await admin.disconnect();
    const batchBytes = PER_BATCH * (VALUE_SIZE + 30);
    const args = ['produce', '--brokers', kafka.bootstrap, '--topic', topic, '--count', String(RECORDS), '--keys', String(KEYS)];
    args.push('--value-size', String(VALUE_SIZE), '--batch-bytes', String(batchBytes), '--linger', '50ms');
    const produced = await runProcess(path.join(binDir, 'kbench'), args, { timeoutMs: 600_000 });
    if (produced.code !== 0) throw new Error(`kbench produce failed: ${produced.stderr}`);
    await run(kafka.bootstrap, topic);
  } finally {
    await kafka.stop();
  }
}

console.log(`index ingest: ${RECORDS} records, ${KEYS} keys, ${PER_BATCH} per batch, ${VALUE_SIZE}-byte values, one core`);
await inProcess(Compression.None, 'uncompressed');
if (values.table) await inProcess(Compression.None, 'table');
await inProcess(Compression.Lz4, 'lz4');
if (values.table) await inProcess(Compression.Lz4, 'table lz4');
if (values.kafka) await withKafka(endToEnd);
else if (values.upstream && values.topic) await endToEnd(values.upstream, values.topic);
