/**
 * The local copy of the configs topic in SQLite, so a restarted proxy serves its topic configs at
 * once and resumes reading the topic from its checkpoint instead of from the start. It is only a
 * cache: the configs topic in the upstream is the truth, and an unreadable file is replaced.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import type { Logger } from '../../common/log.js';
import { isStorageFailure, storageFix } from '../../common/storage-errors.js';
import type { StoredEntry } from './topic-config-state.js';

export const CONFIG_CACHE_FILE = 'topic-configs.sqlite';

export interface CachedConfigs {
  /** The id of the configs topic the cache was filled from; null for an empty cache. */
  storeTopicId: string | null;
  /** The next offset of the configs topic to read; null when nothing was ever read. */
  nextOffset: number | null;
  entries: Map<string, StoredEntry>;
}

export interface CachedChange {
  topic: string;
  entry: StoredEntry;
}

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS topics (
    name TEXT PRIMARY KEY,
    record_offset INTEGER NOT NULL,
    topic_id TEXT,
    configs TEXT
  ) WITHOUT ROWID;
`;

function openDb(file: string): Database.Database {
  const db = new Database(file);
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = NORMAL');
    db.exec(SCHEMA);
    db.prepare('SELECT count(*) FROM topics').get();
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

export class ConfigCache {
  private readonly upsert: Database.Statement;
  private readonly setMeta: Database.Statement;

  private constructor(private readonly db: Database.Database) {
    this.upsert = db.prepare(
      `INSERT INTO topics (name, record_offset, topic_id, configs) VALUES (?, ?, ?, ?)
       ON CONFLICT(name) DO UPDATE SET record_offset = excluded.record_offset, topic_id = excluded.topic_id, configs = excluded.configs
       WHERE excluded.record_offset > topics.record_offset`,
    );
    this.setMeta = db.prepare('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value');
  }

  /** Opens (or creates) the cache in dataDir; a file SQLite cannot read is set aside and started afresh. */
  static open(dataDir: string, log: Logger): ConfigCache {
    fs.mkdirSync(dataDir, { recursive: true });
    const file = path.join(dataDir, CONFIG_CACHE_FILE);
    try {
      return new ConfigCache(openDb(file));
    } catch (err) {
      // A full or failing disk says nothing about the file: it stays, and this run keeps the
      // configs in memory (they are in the upstream; the cache only spares a full read at start).
      if (isStorageFailure(err)) {
        log.error('topic config cache cannot be opened: its storage failed; configs are kept in memory for this run and read again from the upstream', {
          file,
          err,
          fix: storageFix(err, file),
        });
        return new ConfigCache(openDb(':memory:'));
      }
      log.warn('topic config cache is unreadable; starting a new one (configs are read again from the upstream)', { file, err });
      for (const suffix of ['', '-wal', '-shm']) fs.rmSync(file + suffix, { force: true });
      return new ConfigCache(openDb(file));
    }
  }

  load(): CachedConfigs {
    const meta = new Map((this.db.prepare('SELECT key, value FROM meta').all() as { key: string; value: string }[]).map((r) => [r.key, r.value]));
    const entries = new Map<string, StoredEntry>();
    const rows = this.db.prepare('SELECT name, record_offset, topic_id, configs FROM topics').all() as {
      name: string;
      record_offset: number;
      topic_id: string | null;
      configs: string | null;
    }[];
    for (const r of rows) {
      entries.set(r.name, { offset: r.record_offset, topicId: r.topic_id ?? undefined, configs: r.configs === null ? null : JSON.parse(r.configs) });
    }
    const next = meta.get('next_offset');
    return { storeTopicId: meta.get('store_topic_id') ?? null, nextOffset: next === undefined ? null : Number(next), entries };
  }

  /** Records changes in one transaction, with the new read position when the tail moved it. */
  commit(changes: readonly CachedChange[], nextOffset?: number): void {
    this.db.transaction(() => {
      for (const { topic, entry } of changes) {
        this.upsert.run(topic, entry.offset, entry.topicId ?? null, entry.configs === null ? null : JSON.stringify(entry.configs));
      }
      if (nextOffset !== undefined) this.setMeta.run('next_offset', String(nextOffset));
    })();
  }

  /** Empties the cache for a different configs topic (a new upstream, or the topic re-created). */
  reset(storeTopicId: string | null): void {
    this.db.transaction(() => {
      this.db.prepare('DELETE FROM topics').run();
      this.db.prepare('DELETE FROM meta').run();
      if (storeTopicId !== null) this.setMeta.run('store_topic_id', storeTopicId);
    })();
  }

  close(): void {
    this.db.close();
  }
}
