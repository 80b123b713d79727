import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CONFIG_CACHE_FILE, ConfigCache } from '../../../../src/compaction/config/config-cache.js';
import { createLogger } from '../../../../src/common/log.js';

const log = createLogger();

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-config-cache-'));
}

test('changes and the read position survive a reopen; an older record does not overwrite a newer one', () => {
  const dir = tempDir();
  try {
    const cache = ConfigCache.open(dir, log);
    assert.deepEqual(cache.load(), { storeTopicId: null, nextOffset: null, entries: new Map() });
    cache.reset('STORE');
    cache.commit([{ topic: 'a', entry: { offset: 4, topicId: 'ID', configs: { 'cleanup.policy': 'compact' } } }], 5);
    cache.commit([{ topic: 'a', entry: { offset: 2, configs: { 'cleanup.policy': 'delete' } } }]);
    cache.commit([{ topic: 'b', entry: { offset: 7, configs: null } }]);
    cache.close();
    const again = ConfigCache.open(dir, log);
    const loaded = again.load();
    assert.equal(loaded.storeTopicId, 'STORE');
    assert.equal(loaded.nextOffset, 5);
    assert.deepEqual(loaded.entries.get('a'), { offset: 4, topicId: 'ID', configs: { 'cleanup.policy': 'compact' } });
    assert.deepEqual(loaded.entries.get('b'), { offset: 7, topicId: undefined, configs: null });
    again.reset('OTHER');
    assert.deepEqual(again.load(), { storeTopicId: 'OTHER', nextOffset: null, entries: new Map() });
    again.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a file SQLite cannot read is replaced by an empty cache', () => {
  const dir = tempDir();
  try {
    fs.writeFileSync(path.join(dir, CONFIG_CACHE_FILE), Buffer.alloc(8192, 0x5a));
    const cache = ConfigCache.open(dir, { ...log, warn: () => {} });
    assert.equal(cache.load().nextOffset, null);
    cache.close();
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a file the storage cannot open is kept, and the cache runs in memory for this run', () => {
  const dir = tempDir();
  try {
    // A directory where the file should be: SQLite cannot open it (SQLITE_CANTOPEN), as on a
    // full or failing disk.
    const where = path.join(dir, CONFIG_CACHE_FILE);
    fs.mkdirSync(where);
    const errors: unknown[] = [];
    const cache = ConfigCache.open(dir, { ...log, error: (_msg: string, fields?: object) => errors.push(fields) });
    cache.reset('STORE');
    assert.equal(cache.load().storeTopicId, 'STORE');
    cache.close();
    assert.equal(errors.length, 1);
    assert.match(String((errors[0] as { fix?: string }).fix), /check the filesystem/);
    assert.ok(fs.statSync(where).isDirectory(), 'nothing was deleted');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
