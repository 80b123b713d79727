/**
 * Record batches as real producers write them (Java, librdkafka, kafkajs, franz-go; every codec),
 * read back raw from a real Kafka 4.4: our decoder agrees with what was produced, re-encoding is
 * byte-identical, and batches our encoder writes are read by every client family.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ApiKey } from '../../src/protocol/messages.js';
import { UpstreamClient } from '../../src/upstream/client.js';
import { parseHostPort } from '../../src/common/host-port.js';
import { batchPayload, decodeRecords, encodeBatch, iterateBatches, rebuildBatch, verifyCrc, type BatchHeader } from '../../src/protocol/records/batch.js';
import {
  ckConsume,
  ckProduce,
  comparable,
  franzConsume,
  franzProduce,
  genRecord,
  javaToolOk,
  kafkajsConsume,
  kafkajsProduce,
  pollUntil,
  requirePeers,
  startKafka,
  type Compression,
  type RunningKafka,
} from '../support/index.js';

const CODECS: Compression[] = ['none', 'gzip', 'snappy', 'lz4', 'zstd'];
const CODEC_ID: Record<Compression, number> = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 };
const COUNT = 400;
const skip = requirePeers();

let kafka: RunningKafka;
let client: UpstreamClient;

before(async () => {
  if (skip) return;
  kafka = await startKafka({ compaction: 'off' });
  client = await UpstreamClient.connect(parseHostPort(kafka.bootstrap), { clientId: 'batch-test', maxFrameBytes: 1 << 28, requestTimeoutMs: 15_000 });
});

after(async () => {
  client?.close();
  await kafka?.stop();
});

interface RawBatch {
  buf: Buffer;
  header: BatchHeader;
}

/** Every batch of partition 0 of a topic, fetched raw from the broker. */
async function fetchBatches(topic: string): Promise<RawBatch[]> {
  const meta = await client.request(ApiKey.Metadata, 12, { topics: [{ name: topic }], allowAutoTopicCreation: false });
  const topicId = meta.topics[0].topicId as string;
  const version = client.version(ApiKey.Fetch);
  const out: RawBatch[] = [];
  let offset = 0n;
  for (let round = 0; round < 1000; round++) {
    const res = await client.request(ApiKey.Fetch, version, {
      replicaId: -1,
      maxWaitMs: 100,
      minBytes: 1,
      maxBytes: 1 << 20,
      isolationLevel: 0,
      sessionId: 0,
      sessionEpoch: -1,
      topics: [
        {
          topic,
          topicId,
          partitions: [{ partition: 0, currentLeaderEpoch: -1, fetchOffset: offset, lastFetchedEpoch: -1, logStartOffset: -1n, partitionMaxBytes: 1 << 20 }],
        },
      ],
      forgottenTopicsData: [],
      rackId: '',
    });
    const p = res.responses[0].partitions[0];
    assert.equal(p.errorCode, 0);
    const records = p.records as Buffer | null;
    if (!records || records.length === 0) break;
    const walk = iterateBatches(records);
    for (const header of walk.batches) {
      // Copy: the response buffer is reused by nobody, but keep batches independent of it.
      const buf = Buffer.from(records.subarray(header.start, header.end));
      out.push({ buf, header: { ...header, start: 0, end: buf.length, bytes: buf } });
      offset = header.baseOffset + BigInt(header.lastOffsetDelta) + 1n;
    }
    if (offset >= p.highWatermark) break;
  }
  return out;
}

/** Checks every batch against the producer's records and the codec, and re-encodes it. */
async function checkBatches(batches: RawBatch[], codec: Compression, expected: { key: Buffer | null; value: Buffer | null }[], what: string): Promise<void> {
  assert.ok(batches.length > 0, `${what}: batches present`);
  const seen: { key: Buffer | null; value: Buffer | null }[] = [];
  for (const { buf, header } of batches) {
    assert.ok(verifyCrc(buf, header), `${what}: CRC of batch at ${header.baseOffset}`);
    assert.equal(header.compression, CODEC_ID[codec], `${what}: codec of batch at ${header.baseOffset}`);
    const records = await decodeRecords(buf, header);
    assert.equal(records.length, header.recordCount, `${what}: record count`);
    assert.equal(records.at(-1)!.offsetDelta, header.lastOffsetDelta, `${what}: last offset delta`);
    for (const r of records) seen.push({ key: r.key && Buffer.from(r.key), value: r.value && Buffer.from(r.value) });

    // Re-encoding the decoded records gives the producer's bytes back: the whole batch when
    // uncompressed, the record bytes inside the compression otherwise.
    const fields = { ...header };
    const reencoded = await encodeBatch(fields, records, 0);
    const payload = await batchPayload(buf, header);
    assert.deepEqual(reencoded.subarray(61), payload, `${what}: records re-encode byte-identical`);
    if (codec === 'none') assert.deepEqual(reencoded, buf, `${what}: uncompressed batch re-encodes byte-identical`);

    // Untouched means the original bytes; filtering keeps the codec, offsets and a valid CRC.
    assert.equal(await rebuildBatch(header, payload, records), buf);
    const kept = records.filter((_, i) => i % 2 === 0);
    const rebuilt = await rebuildBatch(header, payload, kept);
    const {
      batches: [rh],
    } = iterateBatches(rebuilt);
    assert.ok(verifyCrc(rebuilt, rh!), `${what}: rebuilt CRC`);
    assert.equal(rh!.compression, header.compression);
    assert.equal(rh!.baseOffset, header.baseOffset);
    assert.equal(rh!.lastOffsetDelta, header.lastOffsetDelta);
    assert.deepEqual(
      (await decodeRecords(rebuilt, rh!)).map((r) => r.offsetDelta),
      kept.map((r) => r.offsetDelta),
    );
  }
  assert.deepEqual(seen, expected, `${what}: records as produced`);
}

const generated = (count: number) => Array.from({ length: count }, (_, i) => genRecord(i, 50, 100, 7));

for (const codec of CODECS) {
  test(`batches written by franz-go, librdkafka and kafkajs with ${codec}`, { skip }, async () => {
    const spec = { count: COUNT, keys: 50, valueSize: 100, tombstoneEvery: 7, compression: codec, createPartitions: 1 };
    await franzProduce(kafka.bootstrap, { ...spec, topic: `franz-${codec}` });
    await ckProduce(kafka.bootstrap, { ...spec, topic: `ck-${codec}` });
    await kafkajsProduce(kafka.bootstrap, { ...spec, topic: `kafkajs-${codec}` });
    for (const producer of ['franz', 'ck', 'kafkajs']) {
      await checkBatches(await fetchBatches(`${producer}-${codec}`), codec, generated(COUNT), `${producer} ${codec}`);
    }
  });

  test(`batches written by the Java producer with ${codec}`, { skip }, async () => {
    const topic = `java-${codec}`;
    await javaToolOk('topics', ['--bootstrap-server', kafka.bootstrap, '--create', '--topic', topic, '--partitions', '1', '--replication-factor', '1']);
    const lines = Array.from({ length: COUNT }, (_, i) => `k${i % 31}|v${i}-${'x'.repeat(i % 90)}`);
    await javaToolOk(
      'console-producer',
      [
        '--bootstrap-server',
        kafka.bootstrap,
        '--topic',
        topic,
        '--reader-property',
        'parse.key=true',
        '--reader-property',
        'key.separator=|',
        // The console producer's own --compression-codec overrides compression.type properties.
        '--compression-codec',
        codec,
        '--command-property',
        'linger.ms=50',
        '--command-property',
        'batch.size=16384',
      ],
      { input: lines.join('\n') + '\n' },
    );
    const expected = lines.map((l) => {
      const [k, v] = l.split('|');
      return { key: Buffer.from(k!), value: Buffer.from(v!) };
    });
    await checkBatches(await fetchBatches(topic), codec, expected, `java ${codec}`);
  });

  test(`every client reads batches our encoder wrote with ${codec}`, { skip }, async () => {
    const topic = `ours-${codec}`;
    await client.request(ApiKey.CreateTopics, 7, {
      topics: [{ name: topic, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
      timeoutMs: 10_000,
    });
    await pollUntil(`leader of ${topic}`, 15_000, async () => {
      const meta = await client.request(ApiKey.Metadata, 12, { topics: [{ name: topic }], allowAutoTopicCreation: false });
      return meta.topics[0].partitions[0]?.leaderId >= 0 ? true : undefined;
    });
    const records = generated(COUNT);
    // Timestamps of now: the broker's retention check (every 5 minutes, retention.ms 7 days) would
    // delete a log of old timestamps between one consumer and the next.
    const baseTimestamp = BigInt(Date.now());
    for (let from = 0; from < COUNT; from += 100) {
      const slice = records.slice(from, from + 100);
      const batch = await encodeBatch(
        {
          baseOffset: 0n,
          partitionLeaderEpoch: -1,
          attributes: CODEC_ID[codec],
          lastOffsetDelta: slice.length - 1,
          baseTimestamp,
          maxTimestamp: baseTimestamp + BigInt(slice.length - 1),
          producerId: -1n,
          producerEpoch: -1,
          baseSequence: -1,
        },
        slice.map((r, i) => ({
          timestampDelta: i,
          offsetDelta: i,
          key: r.key,
          value: r.value,
          headers: i % 10 === 0 ? [{ key: Buffer.from('h'), value: Buffer.from(String(i)) }] : [],
        })),
        CODEC_ID[codec],
      );
      const res = await client.request(ApiKey.Produce, 9, {
        transactionalId: null,
        acks: -1,
        timeoutMs: 10_000,
        topicData: [{ name: topic, partitionData: [{ index: 0, records: batch }] }],
      });
      assert.equal(res.responses[0].partitionResponses[0].errorCode, 0, `produce ${codec} batch at ${from}`);
    }
    const reference = comparable(await franzConsume(kafka.bootstrap, { topic, count: COUNT, records: true }));
    assert.equal(reference.count, COUNT);
    assert.deepEqual(comparable(await ckConsume(kafka.bootstrap, { topic, count: COUNT, records: true })), reference, 'librdkafka');
    assert.deepEqual(comparable(await kafkajsConsume(kafka.bootstrap, { topic, count: COUNT, records: true })), reference, 'kafkajs');
    // The partition read directly (no group to join) and an idle timeout far past a slow start: the
    // consumer exits as soon as it has every record, so the bound only matters when records are missing.
    const java = await javaToolOk(
      'console-consumer',
      [
        '--bootstrap-server',
        kafka.bootstrap,
        '--topic',
        topic,
        '--partition',
        '0',
        '--offset',
        'earliest',
        '--max-messages',
        String(COUNT),
        '--timeout-ms',
        '240000',
      ],
      { timeoutMs: 300_000 },
    );
    assert.match(java.stderr, new RegExp(`Processed a total of ${COUNT} messages`), `Java console consumer: ${java.stderr}`);
  });
}
