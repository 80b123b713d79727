import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { topicIndexFile } from '../../../../src/engine/store/index-files.js';
import type { PartitionId } from '../../../../src/engine/store/partition-store.js';
import { StoreRegistry } from '../../../../src/engine/store/store-registry.js';
import { RowBuffer } from '../../../../src/engine/store/row-buffer.js';
import type { SurvivorSnapshot } from '../../../../src/engine/api/survivor-set.js';
import { createLogger } from '../../../../src/common/log.js';

/** `n` keyless rows from offset 0, in one batch. */
function rows(n: number): RowBuffer {
  const out = new RowBuffer(8);
  out.pushBatch(0, n - 1, 10 * n, 1000);
  for (let o = 0; o < n; o++) out.push(o, 1000 + o, 10, 0);
  return out;
}

const ROLL = { segmentBytes: 1e9, maxSegmentMs: 1e12 };

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-registry-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('StoreRegistry', () => {
  it('opens the indexes it can at startup and leaves one the storage refuses as it is, saying what to do', () => {
    const dataDir = path.join(dir, 'data');
    const seed = new StoreRegistry(dataDir, createLogger(), () => {});
    seed.ensure('t', 0);
    seed.ensure('t', 1);
    seed.ensure('u', 0);
    seed.closeAll();
    // Topic u's file cannot be read (SQLITE_CANTOPEN: its WAL cannot be opened), as when the
    // filesystem refuses it.
    const blocked = `${topicIndexFile(dataDir, 'u')}-wal`;
    fs.rmSync(blocked, { force: true });
    fs.mkdirSync(blocked);

    const logged: { msg: string; fields?: Record<string, unknown> }[] = [];
    const log = { ...createLogger(), error: (msg: string, fields?: Record<string, unknown>) => void logged.push({ msg, fields }) };
    const published: PartitionId[] = [];
    const registry = new StoreRegistry(dataDir, log, (id) => published.push(id));
    registry.openExisting();
    assert.deepEqual(
      published,
      [
        { topic: 't', partition: 0 },
        { topic: 't', partition: 1 },
      ],
      'the other topic serves at once',
    );
    assert.equal(registry.get('u', 0), undefined);
    assert.ok(fs.statSync(blocked).isDirectory(), 'nothing deleted');
    assert.ok(fs.existsSync(topicIndexFile(dataDir, 'u')), 'nothing deleted');
    assert.equal(logged.length, 1);
    assert.match(logged[0]!.msg, /served unfiltered/);
    assert.equal(logged[0]!.fields?.topic, 'u');
    assert.match(String(logged[0]!.fields?.fix), /check the filesystem holding/);
    registry.closeAll();
  });

  it('rebuilds a damaged topic file with every partition in it, served unfiltered meanwhile; a stale store changes nothing', () => {
    const dataDir = path.join(dir, 'rebuild');
    const published: [number, SurvivorSnapshot | null][] = [];
    const registry = new StoreRegistry(dataDir, createLogger(), (id, snapshot) => void published.push([id.partition, snapshot]));
    for (const p of [0, 1])
      registry.ensure('t', p).ingest(rows(20), { nextOffset: 20, logStartOffset: 0, lastStableOffset: 20, highWatermark: 20 }, ROLL, false);
    const damaged = registry.get('t', 0)!;
    published.length = 0;
    const fresh = registry.rebuildFile(damaged, 'SQLITE_CORRUPT: test');
    assert.deepEqual(
      published.map(([p, s]) => [p, s === null]),
      [
        [0, true],
        [1, true],
        [1, false],
        [0, false],
      ],
      'unfiltered, then the empty indexes',
    );
    assert.deepEqual([fresh.rowCount, registry.get('t', 1)!.rowCount], [0, 0]);
    assert.equal(damaged.isOpen, false);

    published.length = 0;
    assert.equal(registry.rebuildFile(damaged, 'seen again by a stale store'), fresh, 'a second report of the same damage rebuilds nothing');
    assert.equal(registry.reopen(damaged), fresh);
    assert.equal(published.length, 0, 'and unpublishes nothing');

    fresh.close();
    const reopened = registry.reopen(fresh);
    assert.notEqual(reopened, fresh);
    assert.ok(reopened.isOpen && registry.get('t', 1)!.isOpen, 'a closed file is opened again for all its partitions');
    assert.ok(
      published.every(([, s]) => s !== null),
      'whose survivors stay published meanwhile',
    );
    registry.closeAll();
  });
});
