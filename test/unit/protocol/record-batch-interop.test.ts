import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { venvPython } from '../../support/paths.js';
import {
  decodeRecordKeys,
  decodeRecords,
  encodeBatch,
  iterateBatches,
  readBatchHeader,
  rebuildBatch,
  verifyCrc,
  type DecodedRecord,
} from '../../../src/protocol/records/batch.js';
import { Compression, compress, decompress } from '../../../src/protocol/records/compression.js';

const fixtures = new URL('../../../../test/fixtures/batches/', import.meta.url);
const fixture = (name: string) => readFileSync(new URL(name, fixtures));

interface ManifestRecord {
  offsetDelta: number;
  timestamp: number;
  key: string | null;
  value: string | null;
  headers: [string, string | null][];
}
interface Manifest {
  baseOffset: string;
  partitionLeaderEpoch: number;
  batches: Record<
    string,
    { file: string; producerId: string; producerEpoch: number; baseSequence: number; lastOffsetDelta: number; baseTimestamp: string; maxTimestamp: string }
  >;
  records: ManifestRecord[];
}
const manifest = JSON.parse(fixture('batches.json').toString()) as Manifest;
const CODEC_OF: Record<string, number> = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 };

const hex = (b: Buffer | null) => (b === null ? null : b.toString('hex'));

function assertRecordsMatch(records: DecodedRecord[], expected: ManifestRecord[], baseTimestamp: bigint): void {
  assert.equal(records.length, expected.length);
  records.forEach((r, i) => {
    const e = expected[i]!;
    assert.equal(r.offsetDelta, e.offsetDelta, `record ${i} offsetDelta`);
    assert.equal(Number(baseTimestamp) + r.timestampDelta, e.timestamp, `record ${i} timestamp`);
    assert.equal(hex(r.key), e.key, `record ${i} key`);
    assert.equal(hex(r.value), e.value, `record ${i} value`);
    assert.deepEqual(
      r.headers.map((h) => [hex(h.key), hex(h.value)]),
      e.headers,
      `record ${i} headers`,
    );
  });
}

describe('batches built by kafka-python (DefaultRecordBatchBuilder)', () => {
  for (const [name, meta] of Object.entries(manifest.batches)) {
    test(`${name}: header, CRC and every record`, async () => {
      const buf = fixture(meta.file);
      const walk = iterateBatches(buf);
      assert.equal(walk.batches.length, 1);
      const h = walk.batches[0]!;
      assert.equal(verifyCrc(buf, h), true);
      assert.equal(h.compression, CODEC_OF[name]);
      assert.equal(h.baseOffset, BigInt(manifest.baseOffset));
      assert.equal(h.partitionLeaderEpoch, manifest.partitionLeaderEpoch);
      assert.equal(h.producerId, BigInt(meta.producerId));
      assert.equal(h.producerEpoch, meta.producerEpoch);
      assert.equal(h.baseSequence, meta.baseSequence);
      assert.equal(h.lastOffsetDelta, meta.lastOffsetDelta);
      assert.equal(h.baseTimestamp, BigInt(meta.baseTimestamp));
      assert.equal(h.maxTimestamp, BigInt(meta.maxTimestamp));
      assert.equal(h.recordCount, manifest.records.length);
      assertRecordsMatch(await decodeRecords(buf, h), manifest.records, h.baseTimestamp);

      const keys = await decodeRecordKeys(buf, h);
      assert.deepEqual(
        keys.map((k) => [k.offsetDelta, k.timestamp, hex(k.key), k.valueIsNull]),
        manifest.records.map((r) => [r.offsetDelta, r.timestamp, r.key, r.value === null]),
      );
    });

    test(`${name}: our encoder writes the same batch`, async () => {
      const buf = fixture(meta.file);
      const h = readBatchHeader(buf, 0);
      const records = await decodeRecords(buf, h);
      const ours = await encodeBatch(h, records, h.compression);
      if (h.compression === Compression.None) {
        assert.ok(ours.equals(buf), "uncompressed: byte-identical to kafka-python's");
      } else {
        const payload = await decompress(h.compression, buf.subarray(61));
        const oursPayload = await decompress(h.compression, ours.subarray(61));
        assert.ok(oursPayload.equals(payload), 'same records, byte for byte, before compression');
      }
      // Every header field but batchLength and CRC (which depend on the compressed size).
      assert.ok(ours.subarray(0, 8).equals(buf.subarray(0, 8)));
      assert.ok(ours.subarray(12, 17).equals(buf.subarray(12, 17)));
      assert.ok(ours.subarray(21, 61).equals(buf.subarray(21, 61)));
      assert.equal(verifyCrc(ours, readBatchHeader(ours, 0)), true);
    });
  }
});

// kafkajs's record batch writer and reader, used directly (no broker needed).
const require = createRequire(import.meta.url);
const Long = require('kafkajs/src/utils/long');
const KafkaRecord = require('kafkajs/src/protocol/recordBatch/record/v0');
const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0');
const decodeKafkajsBatch = require('kafkajs/src/protocol/recordBatch/v0/decoder');
const KafkajsDecoder = require('kafkajs/src/protocol/decoder');
const { Codecs, Types } = require('kafkajs/src/protocol/message/compression');

// kafkajs ships gzip only; others plug codecs into this table (what kafkajs-snappy & co. do).
for (const codec of [Compression.Snappy, Compression.Lz4, Compression.Zstd]) {
  Codecs[codec] = () => ({
    compress: (encoder: { buffer: Buffer }) => compress(codec, encoder.buffer),
    decompress: (buffer: Buffer) => decompress(codec, buffer),
  });
}
assert.equal(Types.GZIP, Compression.Gzip);

interface KafkajsRecord {
  offset: string;
  timestamp: string;
  key: Buffer | null;
  value: Buffer | null;
  headers: Record<string, Buffer>;
}

function kafkajsRecords(count: number) {
  return Array.from({ length: count }, (_, i) =>
    KafkaRecord({
      offsetDelta: i * 2,
      timestampDelta: i * 11,
      key: i % 7 === 3 ? null : Buffer.from(`key-${i % 5}`),
      value: i % 9 === 4 ? null : Buffer.from(`value ${i} `.repeat(1 + (i % 13))),
      headers: i % 4 === 0 ? { trace: Buffer.from(`t${i}`), kind: Buffer.from('x') } : {},
    }),
  );
}

async function kafkajsBatch(compression: number, count: number): Promise<Buffer> {
  const encoder = await RecordBatch({
    compression,
    firstOffset: Long.fromValue(123456789012n),
    firstTimestamp: 1_690_000_000_000,
    maxTimestamp: 1_690_000_000_000 + (count - 1) * 11,
    partitionLeaderEpoch: 3,
    lastOffsetDelta: (count - 1) * 2,
    transactional: true,
    producerId: Long.fromValue(555n),
    producerEpoch: 4,
    firstSequence: 100,
    records: kafkajsRecords(count),
  });
  return encoder.buffer as Buffer;
}

async function kafkajsDecode(buf: Buffer): Promise<{ records: KafkajsRecord[]; firstOffset: string; producerId: string }> {
  return decodeKafkajsBatch(new KafkajsDecoder(buf));
}

describe('kafkajs: batches it writes, read by us; batches we write, read by it', () => {
  for (const codec of [0, 1, 2, 3, 4]) {
    test(`codec ${codec}: kafkajs-written batch decodes, CRC valid`, async () => {
      const buf = await kafkajsBatch(codec, 40);
      const h = readBatchHeader(buf, 0);
      assert.equal(verifyCrc(buf, h), true);
      assert.equal(h.compression, codec);
      assert.equal(h.baseOffset, 123456789012n);
      assert.equal(h.isTransactional, true);
      assert.equal(h.producerId, 555n);
      assert.equal(h.baseSequence, 100);
      const ours = await decodeRecords(buf, h);
      const theirs = await kafkajsDecode(buf);
      assert.equal(ours.length, 40);
      ours.forEach((r, i) => {
        const t = theirs.records[i]!;
        assert.equal((h.baseOffset + BigInt(r.offsetDelta)).toString(), t.offset);
        assert.equal((h.baseTimestamp + BigInt(r.timestampDelta)).toString(), t.timestamp);
        assert.deepEqual(r.key, t.key);
        assert.deepEqual(r.value, t.value);
        assert.deepEqual(Object.fromEntries(r.headers.map((x) => [x.key.toString(), x.value])), t.headers);
      });
    });

    test(`codec ${codec}: kafkajs reads our rebuilt batch`, async () => {
      const buf = await kafkajsBatch(codec, 40);
      const h = readBatchHeader(buf, 0);
      const records = await decodeRecords(buf, h);
      const kept = records.filter((r) => r.offsetDelta % 3 !== 0);
      const rebuilt = await rebuildBatch(h, records[0]!.payload, kept);
      const theirs = await kafkajsDecode(rebuilt);
      assert.equal(theirs.firstOffset, '123456789012');
      assert.equal(theirs.producerId, '555');
      assert.deepEqual(
        theirs.records.map((r) => r.offset),
        kept.map((r) => (h.baseOffset + BigInt(r.offsetDelta)).toString()),
      );
      assert.deepEqual(
        theirs.records.map((r) => r.value),
        kept.map((r) => r.value),
      );
    });
  }
});

/*
 * The reverse direction with a foreign reader that checks CRCs and knows all four codecs:
 * kafka-python (with lz4, zstandard and python-snappy) reads batches we wrote. Runs where those
 * packages are importable: the test bed's venv has them (test/peers/install.sh); without it the
 * test skips, except under CI where the bed is always installed.
 */
const python = process.env.KCOMPACT_PYTHON ?? (existsSync(venvPython) ? venvPython : 'python3');
const probe = spawnSync(python, ['-c', 'import kafka, lz4.frame, zstandard, snappy'], { encoding: 'utf8' });
const pythonReady = probe.status === 0;
if (!pythonReady && process.env.CI) throw new Error(`kafka-python and its codecs are not importable by ${python}: run bash test/peers/install.sh`);

describe('kafka-python reads what we write', { skip: pythonReady ? false : 'kafka-python, lz4, zstandard, python-snappy not importable' }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'kcompact-batches-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  test('rebuilt, re-encoded and emptied batches for every codec', async () => {
    const expected: Record<string, number[]> = {};
    for (const [name, meta] of Object.entries(manifest.batches)) {
      const buf = fixture(meta.file);
      const h = readBatchHeader(buf, 0);
      const records = await decodeRecords(buf, h);
      const kept = records.filter((_, i) => i % 3 !== 1);
      writeFileSync(join(dir, `rebuilt-${name}.bin`), await rebuildBatch(h, records[0]!.payload, kept));
      writeFileSync(join(dir, `encoded-${name}.bin`), await encodeBatch(h, records, h.compression));
      writeFileSync(join(dir, `empty-${name}.bin`), await rebuildBatch(h, records[0]!.payload, []));
      expected[`rebuilt-${name}`] = kept.map((r) => r.offsetDelta);
      expected[`encoded-${name}`] = records.map((r) => r.offsetDelta);
      expected[`empty-${name}`] = [];
    }
    const script = [
      'import json, sys',
      'from kafka.record.default_records import DefaultRecordBatch',
      'out = {}',
      'for name in json.loads(sys.argv[2]):',
      "    b = DefaultRecordBatch(bytearray(open(sys.argv[1] + '/' + name + '.bin', 'rb').read()))",
      '    assert b.validate_crc(), name',
      '    out[name] = [r.offset - b.base_offset for r in b]',
      'print(json.dumps(out))',
    ].join('\n');
    const run = spawnSync(python, ['-c', script, dir, JSON.stringify(Object.keys(expected))], { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(JSON.parse(run.stdout), expected);
  });

  test("compressed payloads, by lz4.frame, zstandard and kafka-python's Xerial reader", async () => {
    const plain = fixture('payload.bin');
    for (const [codec, name] of [
      [Compression.Snappy, 'snappy'],
      [Compression.Lz4, 'lz4'],
      [Compression.Zstd, 'zstd'],
      [Compression.Gzip, 'gzip'],
    ] as const) {
      writeFileSync(join(dir, `payload.${name}`), await compress(codec, plain));
    }
    const script = [
      'import sys, gzip, lz4.frame, zstandard',
      'from kafka.codec import snappy_decode',
      'd = sys.argv[1]',
      "plain = open(sys.argv[2], 'rb').read()",
      "r = lambda n: open(d + '/payload.' + n, 'rb').read()",
      "assert snappy_decode(r('snappy')) == plain, 'snappy'",
      "assert lz4.frame.decompress(r('lz4')) == plain, 'lz4'",
      "assert zstandard.ZstdDecompressor().decompressobj().decompress(r('zstd')) == plain, 'zstd'",
      "assert gzip.decompress(r('gzip')) == plain, 'gzip'",
    ].join('\n');
    const run = spawnSync(python, ['-c', script, dir, fileURLToPath(new URL('payload.bin', fixtures))], { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
  });
});
