/**
 * One topic's index file (schema.ts): a SQLite file (WAL, synchronous=NORMAL) written only by
 * the compaction worker, holding every indexed partition of the topic. What its partitions
 * share lives here: the connection, its page cache and write-ahead log, and the statements every
 * ingest runs, prepared once with the partition as a parameter.
 *
 * Opening checks the file (PRAGMA quick_check, schema version, which topic it is for); a file
 * that fails is deleted and recreated empty, and the indexer fills it again from the upstream,
 * which is the source of truth. A failure of the storage under the file (full, read-only, I/O
 * error) is not the file's fault: it is thrown as it is and the file kept (storage-errors.ts).
 * Each partition's own rows are checked by PartitionStore.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { removeIndexFile } from './index-files.js';
import { KeyStage } from './key-stage.js';
import { RecordFlag } from './record-flags.js';
import { CREATE_SCHEMA, SCHEMA_VERSION } from './schema.js';
import { isStorageFailure } from '../../common/storage-errors.js';

/** Rows per INSERT statement: binding many rows per call amortises better-sqlite3's per-call cost (docs/performance.md). */
export const INSERT_CHUNK = 64;
/** partition, offset, key, flags, ts, size, pid, txn_first. */
export const INSERT_COLUMNS = 8;
const WAL_LIMIT_BYTES = 16 * 1024 * 1024;
/** Give free pages back once they are this share of the file (and at least this many). */
const VACUUM_FREE_SHARE = 0.25;
const VACUUM_MIN_PAGES = 256;

export class IndexFileError extends Error {
  override readonly name = 'IndexFileError';
}

function configure(db: Database.Database): void {
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma(`journal_size_limit = ${WAL_LIMIT_BYTES}`);
}

function createFile(file: string, topic: string): Database.Database {
  removeIndexFile(file);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  try {
    // Must precede the first table: auto_vacuum cannot be switched on later without a VACUUM.
    db.pragma('auto_vacuum = INCREMENTAL');
    // Made without waiting for the disk, so that a new replica's first request for a topic does
    // not wait for a dozen fsyncs: a file left half made by a crash fails its identity check at
    // the next open and is made again, as any unusable index is (it is a cache of the store).
    db.pragma('synchronous = OFF');
    db.pragma('journal_mode = WAL');
    db.transaction(() => {
      db.exec(CREATE_SCHEMA);
      db.prepare('INSERT INTO meta VALUES (0, ?, ?)').run(SCHEMA_VERSION, topic);
    })();
    configure(db);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

/** Throws IndexFileError unless the file is an index of this schema version for this topic. */
function checkIdentity(db: Database.Database, topic: string): void {
  let row: { schema_version: number; topic: string } | undefined;
  try {
    row = db.prepare('SELECT schema_version, topic FROM meta WHERE id = 0').get() as typeof row;
  } catch (err) {
    if (isStorageFailure(err)) throw err;
    // An index of an earlier layout (a file per partition) has no meta table.
    throw new IndexFileError(`not a topic index of schema version ${SCHEMA_VERSION}: ${(err as Error).message}`);
  }
  if (!row) throw new IndexFileError('meta row missing');
  if (row.schema_version !== SCHEMA_VERSION) throw new IndexFileError(`schema version ${row.schema_version}, want ${SCHEMA_VERSION}`);
  if (row.topic !== topic) throw new IndexFileError(`file belongs to topic ${row.topic}`);
}

/**
 * Opens an existing file and checks it; throws IndexFileError saying why it cannot be used, or
 * the storage failure that kept it from being read.
 */
function openExisting(file: string, topic: string): Database.Database {
  let db: Database.Database;
  try {
    db = new Database(file, { fileMustExist: true });
  } catch (err) {
    if (isStorageFailure(err)) throw err;
    throw new IndexFileError(`cannot open: ${(err as Error).message}`);
  }
  try {
    configure(db);
    const check = db.pragma('quick_check', { simple: true });
    if (check !== 'ok') throw new IndexFileError(`quick_check failed: ${String(check)}`);
    checkIdentity(db, topic);
    return db;
  } catch (err) {
    db.close();
    if (err instanceof IndexFileError || isStorageFailure(err)) throw err;
    throw new IndexFileError((err as Error).message);
  }
}

export interface OpenedIndex {
  index: TopicIndex;
  /** Why an existing file was discarded and recreated empty; undefined when it was usable or new. */
  rebuiltBecause?: string;
}

export class TopicIndex {
  /** Ingest's statements and their parameter arrays, shared by the partitions (one thread writes). */
  readonly insertChunk: Database.Statement;
  readonly insertOne: Database.Statement;
  readonly chunkParams: unknown[] = new Array(INSERT_CHUNK * INSERT_COLUMNS);
  readonly oneParams: unknown[] = new Array(INSERT_COLUMNS);
  readonly keyStage = new KeyStage(INSERT_CHUNK);
  readonly saveCheckpoint: Database.Statement;
  readonly upsertSegment: Database.Statement;
  /** Where a row's bytes are, its timestamp and flags (the table API's reads). */
  readonly rowAt: Database.Statement;
  /** The last record a client sees (every ingest publishes it). */
  readonly lastVisible: Database.Statement;

  private constructor(
    /**
     * The connection: for the store module (src/engine/store/) only. Nothing else touches
     * SQLite: the cleaner, the carrier and the worker ask PartitionStore for its operations.
     */
    readonly db: Database.Database,
    readonly file: string,
    readonly topic: string,
  ) {
    const tuple = `(${new Array(INSERT_COLUMNS).fill('?').join(',')})`;
    const insert = 'INSERT INTO records (partition, offset, key, flags, ts, size, pid, txn_first) VALUES ';
    this.insertChunk = db.prepare(insert + new Array(INSERT_CHUNK).fill(tuple).join(','));
    this.insertOne = db.prepare(insert + tuple);
    this.saveCheckpoint = db.prepare(
      `UPDATE checkpoint SET topic_id = ?, next_offset = ?, log_start = ?, last_stable = ?, high_watermark = ?,
         first_dirty = ?, clean_bytes = ?, last_clean_ms = ? WHERE partition = ?`,
    );
    this.upsertSegment = db.prepare(
      `INSERT INTO segments (partition, base, rolling_ts, max_ts, bytes) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (partition, base) DO UPDATE SET rolling_ts = excluded.rolling_ts, max_ts = excluded.max_ts, bytes = excluded.bytes`,
    );
    this.rowAt = db.prepare('SELECT phys, ts, flags FROM records WHERE partition = ? AND offset = ?').raw();
    this.lastVisible = db.prepare(`SELECT offset FROM records WHERE partition = ? AND flags & ${RecordFlag.Void} = 0 ORDER BY offset DESC LIMIT 1`).pluck();
  }

  /** Opens (or creates) a topic's index file, recreating it when it is unusable. */
  static open(file: string, topic: string): OpenedIndex {
    if (fs.existsSync(file)) {
      try {
        return { index: new TopicIndex(openExisting(file, topic), file, topic) };
      } catch (err) {
        if (!(err instanceof IndexFileError)) throw err;
        return { index: new TopicIndex(createFile(file, topic), file, topic), rebuiltBecause: err.message };
      }
    }
    return { index: new TopicIndex(createFile(file, topic), file, topic) };
  }

  /**
   * Opens an existing file read-only, for an operator's look at a data directory that a proxy
   * may own: nothing is written, nothing rebuilt. Throws IndexFileError when it is unusable.
   */
  static openReadOnly(file: string, topic: string): TopicIndex {
    let db: Database.Database;
    try {
      db = new Database(file, { readonly: true, fileMustExist: true });
    } catch (err) {
      throw new IndexFileError(`cannot open: ${(err as Error).message}`);
    }
    try {
      checkIdentity(db, topic);
      return new TopicIndex(db, file, topic);
    } catch (err) {
      db.close();
      throw err instanceof IndexFileError ? err : new IndexFileError((err as Error).message);
    }
  }

  get open(): boolean {
    return this.db.open;
  }

  /** The partitions the file has a checkpoint for, ascending. */
  partitions(): number[] {
    return this.db.prepare('SELECT partition FROM checkpoint ORDER BY partition').pluck().all() as number[];
  }

  /**
   * Gives free pages back to the filesystem once enough have piled up (reaping leaves many). It
   * only saves space: when the storage fails it, the pages stay free in the file for the next try.
   */
  vacuumIfWorthIt(): void {
    try {
      const free = this.db.pragma('freelist_count', { simple: true }) as number;
      const pages = this.db.pragma('page_count', { simple: true }) as number;
      if (free >= VACUUM_MIN_PAGES && free >= pages * VACUUM_FREE_SHARE) {
        this.db.pragma('incremental_vacuum');
        this.db.pragma('wal_checkpoint(TRUNCATE)');
      }
    } catch (err) {
      if (!isStorageFailure(err)) throw err;
    }
  }

  /** Sets the page cache of this file (KiB); the worker shares one budget among all files. */
  setCacheKiB(kib: number): void {
    this.db.pragma(`cache_size = -${Math.max(64, Math.floor(kib))}`);
  }

  /**
   * Sets how much write-ahead log this file gathers before a checkpoint writes it back (KiB),
   * which is also the size its WAL file is cut back to; the worker shares one disk budget
   * among all files.
   */
  setWalKiB(kib: number): void {
    const pageSize = this.db.pragma('page_size', { simple: true }) as number;
    this.db.pragma(`wal_autocheckpoint = ${Math.max(16, Math.floor((kib * 1024) / pageSize))}`);
    this.db.pragma(`journal_size_limit = ${Math.floor(kib) * 1024}`);
  }

  /**
   * Gives back the memory SQLite holds for this connection that it can (cached pages that are
   * not dirty): after a clean, which reads much of a partition that ingest rarely reads again.
   */
  shrinkMemory(): void {
    this.db.pragma('shrink_memory');
  }

  close(): void {
    if (this.db.open) this.db.close();
  }
}
