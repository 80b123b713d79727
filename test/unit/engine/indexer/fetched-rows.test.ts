import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { collectRows } from '../../../../src/engine/indexer/fetched-rows.js';
import { keyDigest, KEY_DIGEST_BYTES } from '../../../../src/engine/store/key-digest.js';
import { RecordFlag } from '../../../../src/engine/store/record-flags.js';
import { RowBuffer } from '../../../../src/engine/store/row-buffer.js';
import { dataBatch, markerBatch } from './batch-builder.js';

const fixtures = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../../test/fixtures/batches');

interface FixtureRecord {
  offsetDelta: number;
  timestamp: number;
  key: string | null;
  value: string | null;
}

function keyOf(rows: RowBuffer, i: number): string | null {
  return rows.hasKey[i] ? rows.keys.subarray(i * KEY_DIGEST_BYTES, (i + 1) * KEY_DIGEST_BYTES).toString('hex') : null;
}

describe('collectRows', () => {
  const meta = JSON.parse(fs.readFileSync(path.join(fixtures, 'batches.json'), 'utf8')) as {
    baseOffset: string;
    batches: Record<string, { file: string; maxTimestamp: string }>;
    records: FixtureRecord[];
  };

  for (const [codec, batch] of Object.entries(meta.batches)) {
    it(`indexes every record of a real ${codec} batch: offsets, key digests, tombstones, timestamps, sizes`, async () => {
      const bytes = fs.readFileSync(path.join(fixtures, batch.file));
      const rows = new RowBuffer(4);
      const open = new Map<number, number>();
      const base = Number(meta.baseOffset);
      const result = await collectRows(bytes, [], base, -1, open, rows);
      assert.equal(rows.length, meta.records.length);
      assert.equal(rows.batchCount, 1);
      assert.equal(rows.batchBytes[0], bytes.length);
      assert.equal(rows.batchMaxTimestamp[0], Number(batch.maxTimestamp));
      const lastDelta = bytes.readInt32BE(23);
      assert.equal(result.nextOffset, base + lastDelta + 1);
      let sizes = 0;
      meta.records.forEach((r, i) => {
        assert.equal(rows.offsets[i], base + r.offsetDelta, `offset of record ${i}`);
        assert.equal(rows.timestamps[i], r.timestamp, `timestamp of record ${i}`);
        assert.equal(keyOf(rows, i), r.key === null ? null : keyDigest(Buffer.from(r.key, 'hex')).toString('hex'));
        const tombstone = r.key !== null && r.value === null;
        assert.equal(rows.flags[i], tombstone ? RecordFlag.Tombstone : 0, `flags of record ${i}`);
        assert.equal(rows.producerIds[i], -1);
        sizes += rows.sizes[i]!;
      });
      assert.equal(sizes, bytes.length, 'record sizes add up to the batch');
      assert.equal(result.transactionsChanged, false);
    });
  }

  it('skips records below the next offset and stops before the last stable offset', async () => {
    const data = Buffer.concat([
      await dataBatch({ baseOffset: 10 }, [
        { key: 'a', value: '1' },
        { key: 'b', value: '2' },
        { key: 'c', value: '3' },
      ]),
      await dataBatch({ baseOffset: 13 }, [{ key: 'd', value: '4' }]),
      await dataBatch({ baseOffset: 14 }, [{ key: 'e', value: '5' }]),
    ]);
    const rows = new RowBuffer(2);
    const result = await collectRows(data, [], 11, 14, new Map(), rows);
    assert.deepEqual([...rows.offsets.subarray(0, rows.length)], [11, 12, 13]);
    assert.equal(result.nextOffset, 14);
    assert.deepEqual(rows.batchFirst.slice(0, rows.batchCount), [11, 13]);
  });

  it('a batch failing its CRC stops the index before it (the fetch view rebuilds only batches checked here)', async () => {
    const good = await dataBatch({ baseOffset: 0 }, [{ key: 'a', value: '1' }]);
    const bad = Buffer.from(await dataBatch({ baseOffset: 1 }, [{ key: 'b', value: 'value' }]));
    // A value byte: the records still parse, only the CRC can tell.
    bad[bad.length - 3]! ^= 0xff;
    const rows = new RowBuffer();
    await assert.rejects(collectRows(Buffer.concat([good, bad]), [], 0, -1, new Map(), rows), /record batch at offset 1 fails its CRC check/);
    const alone = new RowBuffer();
    assert.equal((await collectRows(good, [], 0, -1, new Map(), alone)).nextOffset, 1);
  });

  it('flags aborted data as a READ_COMMITTED consumer does and indexes markers with their transaction start', async () => {
    // Producer 7 commits [0, 1] (marker 4); producer 8 aborts [2, 3] (marker 5); then producer 8
    // commits [6] (marker 7): the abort marker must end producer 8's aborted state.
    const data = Buffer.concat([
      await dataBatch({ baseOffset: 0, producerId: 7, transactional: true }, [
        { key: 'a', value: '1' },
        { key: 'b', value: null },
      ]),
      await dataBatch({ baseOffset: 2, producerId: 8, transactional: true }, [
        { key: 'a', value: 'x' },
        { key: null, value: 'y' },
      ]),
      await markerBatch({ baseOffset: 4, producerId: 7 }, true),
      await markerBatch({ baseOffset: 5, producerId: 8 }, false),
      await dataBatch({ baseOffset: 6, producerId: 8, transactional: true }, [{ key: 'c', value: '3' }]),
      await markerBatch({ baseOffset: 7, producerId: 8 }, true),
    ]);
    const rows = new RowBuffer();
    const open = new Map<number, number>();
    const result = await collectRows(data, [{ producerId: 8n, firstOffset: 2n }], 0, -1, open, rows);
    const T = RecordFlag.Transactional;
    assert.deepEqual(
      [...rows.flags.subarray(0, rows.length)],
      [
        T,
        T | RecordFlag.Tombstone,
        T | RecordFlag.Aborted,
        T | RecordFlag.Aborted,
        T | RecordFlag.Control | RecordFlag.Commit,
        T | RecordFlag.Control,
        T,
        T | RecordFlag.Control | RecordFlag.Commit,
      ],
    );
    assert.deepEqual([...rows.producerIds.subarray(0, rows.length)], [7, 7, 8, 8, 7, 8, 8, 8]);
    assert.deepEqual([...rows.txnFirsts.subarray(0, rows.length)], [-1, -1, -1, -1, 0, 2, -1, 6]);
    assert.equal(keyOf(rows, 3), null);
    assert.equal(open.size, 0);
    assert.equal(result.transactionsChanged, true);
    assert.equal(result.nextOffset, 8);
  });

  it('carries an open transaction over to the fetch that brings its marker', async () => {
    const open = new Map<number, number>();
    const rows = new RowBuffer();
    await collectRows(await dataBatch({ baseOffset: 3, producerId: 9, transactional: true }, [{ key: 'k', value: 'v' }]), [], 3, -1, open, rows);
    assert.deepEqual([...open], [[9, 3]]);
    rows.clear();
    const second = Buffer.concat([
      await dataBatch({ baseOffset: 4, producerId: 9, transactional: true }, [{ key: 'k', value: 'w' }]),
      await markerBatch({ baseOffset: 5, producerId: 9 }, true),
    ]);
    const result = await collectRows(second, [], 4, -1, open, rows);
    assert.equal(rows.txnFirsts[1], 3);
    assert.equal(open.size, 0);
    assert.equal(result.transactionsChanged, true);
  });

  it('reads a marker by its key alone, as Java does (kfake writes markers without a value)', async () => {
    const open = new Map([[4, 0]]);
    const rows = new RowBuffer();
    await collectRows(await markerBatch({ baseOffset: 1, producerId: 4 }, false, false), [], 1, -1, open, rows);
    assert.equal(rows.flags[0], RecordFlag.Control | RecordFlag.Transactional);
    assert.equal(rows.txnFirsts[0], 0);
  });

  it('leaves a batch cut short by the byte limit for the next fetch', async () => {
    const full = await dataBatch({ baseOffset: 0 }, [{ key: 'a', value: '1' }]);
    const cut = (await dataBatch({ baseOffset: 1 }, [{ key: 'b', value: '2' }])).subarray(0, 30);
    const rows = new RowBuffer();
    const result = await collectRows(Buffer.concat([full, cut]), [], 0, -1, new Map(), rows);
    assert.equal(rows.length, 1);
    assert.equal(result.nextOffset, 1);
  });
});
