import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { checkKeys } from '../../../src/compaction/produce-guard/keyless-records.js';
import { CorruptRecordError, decodeRecordKeys, decodeRecords, iterateBatches } from '../../../src/protocol/records/batch.js';
import { DEFAULT_MAX_DECOMPRESSED_BYTES } from '../../../src/protocol/records/compression.js';
import { gzipBomb, lz4Bomb, runCodecFuzz, snappyBomb, zstdBomb } from './codec-fuzzer.js';

test('a fuzz round of 20,000 frames finds nothing and reaches every decoder', async () => {
  // No hangMs: no call's duration is judged. A decoder stuck in a loop never ends the round,
  // which the runner's timeout (make's --test-timeout) fails.
  const report = await runCodecFuzz({ seed: 424242, frames: 20_000, bombRate: 1 / 2000 });
  assert.deepEqual(
    report.findings.map((f) => `${f.kind} in ${f.decoder} at frame ${f.frame} (${f.target}): ${f.detail}\nhex: ${f.hex.slice(0, 2000)}`),
    [],
  );
  assert.equal(report.frames, 20_000);
  for (const decoder of [
    'requestHeader',
    'decodeRequest',
    'responseHeader',
    'decodeResponse',
    'iterateBatches',
    'batchPayload',
    'decodeRecords',
    'scanRecordKeys',
    'rebuildBatch',
  ]) {
    const s = report.byDecoder[decoder];
    assert.ok(s && s.ok > 0 && s.calls > s.ok, `${decoder} both decoded and rejected frames: ${JSON.stringify(s)}`);
  }
  // The produce guard never throws: what it cannot read it leaves to the upstream.
  assert.ok(report.byDecoder['produceGuard.checkKeys']!.calls > 0);
  assert.ok((report.byFrameKind['bomb batch'] ?? 0) > 0, 'bomb batches were tried');
});

describe('a record batch that decompresses past the cap is refused', () => {
  const bombs = { zstd: zstdBomb, lz4: lz4Bomb, snappy: snappyBomb, gzip: gzipBomb };
  for (const [codec, make] of Object.entries(bombs)) {
    test(`${codec}: decodeRecords and decodeRecordKeys throw CorruptRecordError; the produce guard leaves it to the upstream`, async () => {
      const batch = make();
      const [header] = iterateBatches(batch).batches;
      assert.ok(header, 'the bomb is one complete batch');
      assert.ok(batch.length < DEFAULT_MAX_DECOMPRESSED_BYTES / 100, `${batch.length} bytes on the wire`);
      const tooLarge = (err: unknown) => err instanceof CorruptRecordError && /decompresses to .*allowed/.test(err.message);
      await assert.rejects(decodeRecords(batch, header), tooLarge);
      await assert.rejects(decodeRecordKeys(batch, header), tooLarge);
      assert.deepEqual(await checkKeys(batch, 9), { judge: 'upstream' });
    });
  }

  test('lz4, zstd and snappy bombs are refused from their declared sizes, before any output is allocated', async () => {
    for (const make of [zstdBomb, lz4Bomb, snappyBomb]) {
      const batch = make();
      const [header] = iterateBatches(batch).batches;
      const before = process.memoryUsage().arrayBuffers;
      await assert.rejects(decodeRecords(batch, header!), CorruptRecordError);
      const grew = process.memoryUsage().arrayBuffers - before;
      assert.ok(grew < 16 * 1024 * 1024, `array buffers grew by ${grew} bytes`);
    }
  });
});
