import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { topicIndexFile } from '../../../../src/compaction/index/index-files.js';
import type { PartitionId } from '../../../../src/compaction/index/partition-store.js';
import { StoreRegistry } from '../../../../src/compaction/index/store-registry.js';
import { createLogger } from '../../../../src/ops/log.js';

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
    assert.deepEqual(published, [{ topic: 't', partition: 0 }, { topic: 't', partition: 1 }], 'the other topic serves at once');
    assert.equal(registry.get('u', 0), undefined);
    assert.ok(fs.statSync(blocked).isDirectory(), 'nothing deleted');
    assert.ok(fs.existsSync(topicIndexFile(dataDir, 'u')), 'nothing deleted');
    assert.equal(logged.length, 1);
    assert.match(logged[0]!.msg, /served unfiltered/);
    assert.equal(logged[0]!.fields?.topic, 'u');
    assert.match(String(logged[0]!.fields?.fix), /check the filesystem holding/);
    registry.closeAll();
  });
});
