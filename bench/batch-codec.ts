/*
 * Fetch hot path micro-benchmark: decode a batch, keep half its records, rebuild it. Prints MB/s
 * of batch bytes as they arrive on the wire (compressed for lz4), uncompressed and lz4 batches
 * (informative, not a test).
 *   node dist/bench/batch-codec.js [seconds-per-case]
 */
import { decodeRecordKeys, decodeRecords, encodeBatch, readBatchHeader, rebuildBatch, type RecordInput } from '../src/protocol/records/batch.js';
import { Compression } from '../src/protocol/records/compression.js';

const secondsPerCase = Number(process.argv[2] ?? 1.5);

/** JSON-like values of random hex tokens: lz4 shrinks them about 2x, like typical payloads. */
function makeRecords(count: number, valueSize: number): RecordInput[] {
  let seed = 42;
  const token = () => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed.toString(16).padStart(8, '0');
  };
  return Array.from({ length: count }, (_, i) => {
    let payload = '';
    while (payload.length < valueSize) payload += `"f${payload.length % 7}":"${token()}${token()}",`;
    return {
      timestampDelta: i,
      offsetDelta: i,
      key: Buffer.from(`user-${token()}`),
      value: Buffer.from(`{"id":${i},${payload.slice(0, valueSize)}}`),
      headers: i % 4 === 0 ? [{ key: Buffer.from('trace-id'), value: Buffer.from(`t-${i}`) }] : [],
    };
  });
}

async function measure(label: string, batch: Buffer, work: (batch: Buffer) => Promise<void>): Promise<void> {
  for (let i = 0; i < 20; i++) await work(batch); // warm-up
  const deadline = process.hrtime.bigint() + BigInt(Math.round(secondsPerCase * 1e9));
  const start = process.hrtime.bigint();
  let runs = 0;
  let now = start;
  while (now < deadline) {
    await work(batch);
    runs++;
    if (runs % 8 === 0) now = process.hrtime.bigint();
  }
  now = process.hrtime.bigint();
  const seconds = Number(now - start) / 1e9;
  const mb = (batch.length * runs) / 1e6;
  console.log(`${label.padEnd(58)} ${(mb / seconds).toFixed(1).padStart(8)} MB/s  ${((seconds / runs) * 1e6).toFixed(1).padStart(9)} µs/batch`);
}

async function decodeAndRebuild(batch: Buffer): Promise<void> {
  const header = readBatchHeader(batch, 0);
  const records = await decodeRecords(batch, header);
  await rebuildBatch(
    header,
    records[0]!.payload,
    records.filter((r) => r.offsetDelta % 2 === 0),
  );
}

async function keysAndRebuild(batch: Buffer): Promise<void> {
  const header = readBatchHeader(batch, 0);
  const keys = await decodeRecordKeys(batch, header);
  await rebuildBatch(
    header,
    keys[0]!.payload,
    keys.filter((k) => k.offsetDelta % 2 === 0),
  );
}

async function decodeOnly(batch: Buffer): Promise<void> {
  const header = readBatchHeader(batch, 0);
  await decodeRecords(batch, header);
}

const fields = {
  baseOffset: 1_000_000n,
  partitionLeaderEpoch: 1,
  attributes: 0,
  lastOffsetDelta: 0,
  baseTimestamp: 1_700_000_000_000n,
  maxTimestamp: 1_700_000_000_000n,
  producerId: -1n,
  producerEpoch: -1,
  baseSequence: -1,
};

for (const [count, valueSize] of [
  [1000, 200],
  [16, 200],
  [500, 2000],
] as const) {
  const records = makeRecords(count, valueSize);
  for (const codec of [Compression.None, Compression.Lz4]) {
    const batch = await encodeBatch({ ...fields, lastOffsetDelta: count - 1 }, records, codec);
    const name = `${codec === Compression.None ? 'none' : 'lz4'} ${count}x${valueSize}B (${(batch.length / 1024).toFixed(0)} KiB)`;
    await measure(`${name} decode`, batch, decodeOnly);
    await measure(`${name} decode + rebuild half`, batch, decodeAndRebuild);
    await measure(`${name} key scan + rebuild half`, batch, keysAndRebuild);
  }
}
