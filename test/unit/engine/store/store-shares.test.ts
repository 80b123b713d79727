import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { StoreRegistry } from '../../../../src/engine/store/store-registry.js';
import { createLogger } from '../../../../src/common/log.js';
import { indexConnection } from '../../../support/index-connection.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-shares-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

/**
 * A file's page cache (KiB) and how much WAL it gathers before a checkpoint (KiB), as SQLite has
 * them: read back from the connection, not from what the registry asked for.
 */
function shares(registry: StoreRegistry, topic: string): { cacheKiB: number; walKiB: number; walLimitKiB: number } {
  const db = indexConnection(registry.get(topic, 0)!);
  const pageKiB = (db.pragma('page_size', { simple: true }) as number) / 1024;
  return {
    cacheKiB: -(db.pragma('cache_size', { simple: true }) as number),
    walKiB: (db.pragma('wal_autocheckpoint', { simple: true }) as number) * pageKiB,
    walLimitKiB: (db.pragma('journal_size_limit', { simple: true }) as number) / 1024,
  };
}

test('topic files share one page-cache budget and one WAL budget, down to a floor each', () => {
  const registry = new StoreRegistry(path.join(dir, 'data'), createLogger(), () => {});
  registry.ensure('t0', 0);
  registry.ensure('t0', 1);
  // Alone, a file gets the most of each: a 16 MiB cache and SQLite's own 1000-page WAL.
  assert.deepEqual(shares(registry, 't0'), { cacheKiB: 16 * 1024, walKiB: 4 * 1024, walLimitKiB: 4 * 1024 });
  for (let t = 1; t < 8; t++) registry.ensure(`t${t}`, 0);
  // Eight share 32 MiB of cache (slices move only by a quarter or more, so within a quarter of
  // it); the WAL slice (512 MiB / 8) is still past its ceiling.
  for (let t = 0; t < 8; t++) {
    const s = shares(registry, `t${t}`);
    assert.ok(s.cacheKiB >= 4 * 1024 && s.cacheKiB <= 5 * 1024, `cache of file ${t}: ${s.cacheKiB} KiB`);
    assert.deepEqual([s.walKiB, s.walLimitKiB], [4 * 1024, 4 * 1024]);
  }
  for (let t = 8; t < 1024; t++) registry.ensure(`t${t}`, 0);
  // A thousand topics and more: near the floors, 64 KiB of cache and 512 KiB of WAL each, old files and new alike.
  for (const t of [0, 500, 1023]) {
    const s = shares(registry, `t${t}`);
    assert.ok(s.cacheKiB >= 64 && s.cacheKiB <= 80, `cache of file ${t}: ${s.cacheKiB} KiB`);
    assert.ok(s.walKiB >= 512 && s.walKiB <= 640, `WAL of file ${t}: ${s.walKiB} KiB`);
    assert.equal(s.walLimitKiB, s.walKiB);
  }
  registry.closeAll();
});
