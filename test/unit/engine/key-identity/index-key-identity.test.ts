import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { PartitionStore } from '../../../../src/engine/store/partition-store.js';
import { SCHEMA_VERSION } from '../../../../src/engine/store/schema.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-key-identity-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
const ID = { topic: 'orders', partition: 0 };

describe('the key identity an index was made with', () => {
  it('is empty in a new index, and kept across a reopen once set', () => {
    const file = path.join(dir, 'kept.sqlite');
    const { store } = PartitionStore.open(file, ID);
    assert.equal(store.keyIdentity, '');
    store.setKeyIdentity('registry');
    store.setTopicId('AAAAAAAAAAAAAAAAAAAAAQ');
    store.close();
    const reopened = PartitionStore.open(file, ID);
    assert.equal(reopened.rebuiltBecause, undefined);
    assert.equal(reopened.store.keyIdentity, 'registry');
    assert.equal(reopened.store.checkpoint.topicId, 'AAAAAAAAAAAAAAAAAAAAAQ', 'the checkpoint row is otherwise unchanged');
    reopened.store.close();
  });

  it('an index from before the key identity was recorded is rebuilt from the upstream', () => {
    const file = path.join(dir, 'old.sqlite');
    PartitionStore.open(file, ID).store.close();
    // The file as an earlier version of the schema left it: SQL of its own, the store never writes it so.
    const db = new Database(file);
    db.prepare('UPDATE meta SET schema_version = ?').run(SCHEMA_VERSION - 1);
    db.close();
    const { store, rebuiltBecause } = PartitionStore.open(file, ID);
    assert.match(rebuiltBecause ?? '', new RegExp(`schema version ${SCHEMA_VERSION - 1}, want ${SCHEMA_VERSION}`));
    assert.equal(store.keyIdentity, '');
    store.close();
  });
});
