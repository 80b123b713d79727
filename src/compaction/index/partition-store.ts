/**
 * One partition's key index: a SQLite file (WAL, synchronous=NORMAL) written only by the
 * compaction worker. It holds what the indexer has read of the upstream log, the virtual
 * segments, and the checkpoint that lets a restart resume where it stopped.
 *
 * Opening checks the file (PRAGMA quick_check, schema version, which partition it is for, and
 * that its tables agree with each other); a file that fails is deleted and recreated empty, and
 * the indexer fills it again from the upstream, which is the source of truth. A failure of the
 * storage under the file (full, read-only, I/O error) is not the file's fault: it is thrown as
 * it is and the file kept (storage-errors.ts).
 *
 * The checkpoint, segments, open transactions and row count are mirrored in memory. Every write
 * goes through write(): when its transaction fails (a full disk fails the commit itself), the
 * mirror is read back from the file, so it always says what was committed.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { KEY_DIGEST_BYTES } from './key-digest.js';
import { RecordFlag } from './record-flags.js';
import type { RowBuffer } from './row-buffer.js';
import { CREATE_SCHEMA, SCHEMA_VERSION } from './schema.js';
import { appendToSegment, type RollPolicy, type Segment } from './segment-roller.js';
import { isStorageFailure } from './storage-errors.js';

export interface PartitionId {
  topic: string;
  partition: number;
}

export interface Checkpoint {
  /** The upstream topic id this index was built from ('' until known). */
  topicId: string;
  /** The next offset to index: everything below it that the upstream still holds is indexed. */
  nextOffset: number;
  /** The upstream's log start offset, last seen. */
  logStartOffset: number;
  lastStableOffset: number;
  highWatermark: number;
  /** The cleaner's first dirty offset: the index view's cleanedUpTo(). */
  firstDirty: number;
  /** Bytes of the records kept below firstDirty. */
  cleanBytes: number;
  /** When the last clean ran (epoch ms, 0: never). */
  lastCleanMs: number;
}

/** What a fetch told the indexer about the partition. */
export interface UpstreamPosition {
  nextOffset: number;
  logStartOffset: number;
  lastStableOffset: number;
  highWatermark: number;
}

/** Rows per INSERT statement: binding many rows per call amortises better-sqlite3's per-call cost (~2x). */
const INSERT_CHUNK = 64;
const COLUMNS = 7;
const WAL_LIMIT_BYTES = 16 * 1024 * 1024;
/** Give free pages back once they are this share of the file (and at least this many). */
const VACUUM_FREE_SHARE = 0.25;
const VACUUM_MIN_PAGES = 256;

export class IndexFileError extends Error {
  override readonly name = 'IndexFileError';
}

function removeFiles(file: string): void {
  for (const f of [file, `${file}-wal`, `${file}-shm`]) fs.rmSync(f, { force: true });
}

function configure(db: Database.Database): void {
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.pragma(`journal_size_limit = ${WAL_LIMIT_BYTES}`);
}

function createFile(file: string, id: PartitionId): Database.Database {
  removeFiles(file);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const db = new Database(file);
  try {
    // Must precede the first table: auto_vacuum cannot be switched on later without a VACUUM.
    db.pragma('auto_vacuum = INCREMENTAL');
    configure(db);
    db.exec(CREATE_SCHEMA);
    db.prepare(
      `INSERT INTO checkpoint VALUES (0, ?, ?, ?, '', 0, 0, 0, 0, 0, 0, 0, '')`,
    ).run(SCHEMA_VERSION, id.topic, id.partition);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

/**
 * Opens an existing file and checks it; throws IndexFileError saying why it cannot be used, or
 * the storage failure that kept it from being read.
 */
function openExisting(file: string, id: PartitionId): Database.Database {
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
    checkIdentity(db, id);
    checkConsistency(db);
    return db;
  } catch (err) {
    db.close();
    if (err instanceof IndexFileError || isStorageFailure(err)) throw err;
    throw new IndexFileError((err as Error).message);
  }
}

/**
 * Throws IndexFileError unless the tables agree with the checkpoint and with each other: nothing
 * indexed at or past next_offset, and below first_dirty as many kept records as entries in
 * `keys` (the cleaner keeps one record per key there). quick_check only sees the b-trees; a file
 * that lost pages of one table while keeping a well-formed shape (a WAL deleted in the middle of
 * a checkpoint writing it back) fails here instead of answering for records it no longer holds.
 * Counts, not a join: they cost ~0.1 s per million keys at startup, a join ~1.5 s.
 */
function checkConsistency(db: Database.Database): void {
  const cp = db.prepare('SELECT next_offset, log_start, first_dirty FROM checkpoint WHERE id = 0').get() as { next_offset: number; log_start: number; first_dirty: number };
  if (cp.log_start > cp.next_offset || cp.first_dirty > cp.next_offset) {
    throw new IndexFileError(`checkpoint out of order: log start ${cp.log_start}, cleaned up to ${cp.first_dirty}, indexed up to ${cp.next_offset}`);
  }
  const last = db.prepare('SELECT MAX(offset) FROM records').pluck().get() as number | null;
  if (last !== null && last >= cp.next_offset) throw new IndexFileError(`records up to offset ${last} but indexed up to ${cp.next_offset} only`);
  const keys = db.prepare('SELECT COUNT(*) FROM keys').pluck().get() as number;
  const kept = db.prepare(`SELECT COUNT(*) FROM records WHERE offset < ? AND flags & ${RecordFlag.Control} = 0`).pluck().get(cp.first_dirty) as number;
  if (keys !== kept) throw new IndexFileError(`the cleaned part does not agree with itself: ${kept} records kept for ${keys} keys`);
}

/** Throws IndexFileError unless the file is an index of this schema version for this partition. */
function checkIdentity(db: Database.Database, id: PartitionId): void {
  const row = db.prepare('SELECT schema_version, topic, partition FROM checkpoint WHERE id = 0').get() as
    | { schema_version: number; topic: string; partition: number }
    | undefined;
  if (!row) throw new IndexFileError('checkpoint missing');
  if (row.schema_version !== SCHEMA_VERSION) throw new IndexFileError(`schema version ${row.schema_version}, want ${SCHEMA_VERSION}`);
  if (row.topic !== id.topic || row.partition !== id.partition) {
    throw new IndexFileError(`file belongs to ${row.topic}-${row.partition}`);
  }
}

export interface OpenResult {
  store: PartitionStore;
  /** Why an existing file was discarded and recreated empty; undefined when it was usable or new. */
  rebuiltBecause?: string;
}

export class PartitionStore {
  private cp: Checkpoint;
  private identity: string;
  private readonly segmentList: Segment[];
  /** Producer id → first offset of its transaction still open at nextOffset. */
  readonly openTransactions: Map<number, number>;
  private rows: number;
  private readonly insertChunk: Database.Statement;
  private readonly insertOne: Database.Statement;
  private readonly chunkParams: unknown[] = new Array(INSERT_CHUNK * COLUMNS);
  private readonly oneParams: unknown[] = new Array(COLUMNS);
  private readonly keyStage = Buffer.alloc(INSERT_CHUNK * KEY_DIGEST_BYTES);
  private readonly keyViews: Buffer[] = [];
  private readonly saveCheckpoint: Database.Statement;
  private readonly upsertSegment: Database.Statement;

  private constructor(
    readonly db: Database.Database,
    readonly file: string,
    readonly id: PartitionId,
  ) {
    this.segmentList = [];
    this.openTransactions = new Map();
    const { cp, identity, rows } = this.load();
    this.cp = cp;
    this.identity = identity;
    this.rows = rows;
    const tuple = `(${new Array(COLUMNS).fill('?').join(',')})`;
    const insert = 'INSERT INTO records (offset, key, flags, ts, size, pid, txn_first) VALUES ';
    this.insertChunk = db.prepare(insert + new Array(INSERT_CHUNK).fill(tuple).join(','));
    this.insertOne = db.prepare(insert + tuple);
    for (let i = 0; i < INSERT_CHUNK; i++) this.keyViews.push(this.keyStage.subarray(i * KEY_DIGEST_BYTES, (i + 1) * KEY_DIGEST_BYTES));
    this.saveCheckpoint = db.prepare(
      `UPDATE checkpoint SET topic_id = ?, next_offset = ?, log_start = ?, last_stable = ?, high_watermark = ?,
         first_dirty = ?, clean_bytes = ?, last_clean_ms = ? WHERE id = 0`,
    );
    this.upsertSegment = db.prepare(
      `INSERT INTO segments (base, rolling_ts, max_ts, bytes) VALUES (?, ?, ?, ?)
       ON CONFLICT (base) DO UPDATE SET rolling_ts = excluded.rolling_ts, max_ts = excluded.max_ts, bytes = excluded.bytes`,
    );
  }

  /** Reads the mirrored state from the file: what was committed. */
  private load(): { cp: Checkpoint; identity: string; rows: number } {
    const row = this.db.prepare('SELECT * FROM checkpoint WHERE id = 0').get() as Record<string, number | string>;
    const cp: Checkpoint = {
      topicId: row.topic_id as string,
      nextOffset: row.next_offset as number,
      logStartOffset: row.log_start as number,
      lastStableOffset: row.last_stable as number,
      highWatermark: row.high_watermark as number,
      firstDirty: row.first_dirty as number,
      cleanBytes: row.clean_bytes as number,
      lastCleanMs: row.last_clean_ms as number,
    };
    const segments = (this.db.prepare('SELECT base, rolling_ts, max_ts, bytes FROM segments ORDER BY base').raw().all() as number[][]).map(
      ([base, rollingTimestamp, maxTimestamp, bytes]) => ({ base: base!, rollingTimestamp: rollingTimestamp!, maxTimestamp: maxTimestamp!, bytes: bytes! }),
    );
    this.segmentList.splice(0, this.segmentList.length, ...segments);
    this.openTransactions.clear();
    for (const [pid, first] of this.db.prepare('SELECT pid, first_offset FROM open_txns').raw().all() as [number, number][]) this.openTransactions.set(pid, first);
    return { cp, identity: row.key_identity as string, rows: this.db.prepare('SELECT COUNT(*) FROM records').pluck().get() as number };
  }

  /**
   * Runs `work` in one transaction. When it fails, the in-memory mirror is read back from the
   * file (or, if even that fails, the file is closed, so that its next user reopens it) and the
   * error is rethrown.
   */
  write<T>(work: () => T): T {
    try {
      return this.db.transaction(work)();
    } catch (err) {
      try {
        const { cp, identity, rows } = this.load();
        this.cp = cp;
        this.identity = identity;
        this.rows = rows;
      } catch {
        this.close();
      }
      throw err;
    }
  }

  /** Opens (or creates) the index file of a partition, recreating it when it is unusable. */
  static open(file: string, id: PartitionId): OpenResult {
    if (fs.existsSync(file)) {
      try {
        return { store: new PartitionStore(openExisting(file, id), file, id) };
      } catch (err) {
        if (!(err instanceof IndexFileError)) throw err;
        return { store: new PartitionStore(createFile(file, id), file, id), rebuiltBecause: err.message };
      }
    }
    return { store: new PartitionStore(createFile(file, id), file, id) };
  }

  /**
   * Opens an existing index file read-only, for an operator's look at a data directory that a
   * proxy may own: nothing is written, nothing rebuilt. Throws IndexFileError when it is unusable.
   */
  static openReadOnly(file: string, id: PartitionId): PartitionStore {
    let db: Database.Database;
    try {
      db = new Database(file, { readonly: true, fileMustExist: true });
    } catch (err) {
      throw new IndexFileError(`cannot open: ${(err as Error).message}`);
    }
    try {
      checkIdentity(db, id);
      return new PartitionStore(db, file, id);
    } catch (err) {
      db.close();
      throw err instanceof IndexFileError ? err : new IndexFileError((err as Error).message);
    }
  }

  get checkpoint(): Readonly<Checkpoint> {
    return this.cp;
  }

  /** The virtual segments in offset order; the last one is the active segment. */
  get segments(): readonly Segment[] {
    return this.segmentList;
  }

  get rowCount(): number {
    return this.rows;
  }

  /** Adjusts the row count after statements that deleted rows outside this class. */
  rowsDeleted(n: number): void {
    this.rows -= n;
  }

  setTopicId(topicId: string): void {
    this.updateCheckpoint({ topicId });
  }

  /** The key identity mode the key digests were made with; '' before any were. */
  get keyIdentity(): string {
    return this.identity;
  }

  setKeyIdentity(mode: string): void {
    this.db.prepare('UPDATE checkpoint SET key_identity = ? WHERE id = 0').run(mode);
    this.identity = mode;
  }

  /** Writes checkpoint fields (in the caller's transaction, if any). */
  updateCheckpoint(change: Partial<Checkpoint>): void {
    const next = { ...this.cp, ...change };
    this.saveCheckpoint.run(
      next.topicId,
      next.nextOffset,
      next.logStartOffset,
      next.lastStableOffset,
      next.highWatermark,
      next.firstDirty,
      next.cleanBytes,
      next.lastCleanMs,
    );
    this.cp = next;
  }

  /**
   * Stores the rows of one fetch and the position it reached, in one transaction. The rows must
   * start at or after nextOffset and be in offset order; their batches extend or roll segments.
   */
  ingest(rows: RowBuffer, position: UpstreamPosition, roll: RollPolicy, transactionsChanged: boolean): void {
    this.write(() => {
      this.insertRows(rows);
      this.rollSegments(rows, roll);
      if (transactionsChanged) this.saveOpenTransactions();
      this.updateCheckpoint(position);
    });
  }

  private insertRows(rows: RowBuffer): void {
    const n = rows.length;
    let i = 0;
    for (; i + INSERT_CHUNK <= n; i += INSERT_CHUNK) {
      rows.keys.copy(this.keyStage, 0, i * KEY_DIGEST_BYTES, (i + INSERT_CHUNK) * KEY_DIGEST_BYTES);
      for (let j = 0; j < INSERT_CHUNK; j++) this.fillRow(this.chunkParams, j * COLUMNS, rows, i + j, this.keyViews[j]!);
      this.insertChunk.run(this.chunkParams);
    }
    for (; i < n; i++) {
      rows.keys.copy(this.keyStage, 0, i * KEY_DIGEST_BYTES, (i + 1) * KEY_DIGEST_BYTES);
      this.fillRow(this.oneParams, 0, rows, i, this.keyViews[0]!);
      this.insertOne.run(this.oneParams);
    }
    this.rows += n;
  }

  private fillRow(params: unknown[], at: number, rows: RowBuffer, i: number, key: Buffer): void {
    const pid = rows.producerIds[i]!;
    const txnFirst = rows.txnFirsts[i]!;
    params[at] = rows.offsets[i];
    params[at + 1] = rows.hasKey[i] ? key : null;
    params[at + 2] = rows.flags[i];
    params[at + 3] = rows.timestamps[i];
    params[at + 4] = rows.sizes[i];
    params[at + 5] = pid < 0 ? null : pid;
    params[at + 6] = txnFirst < 0 ? null : txnFirst;
  }

  private rollSegments(rows: RowBuffer, roll: RollPolicy): void {
    let open = this.segmentList.at(-1);
    let touched: Segment | undefined;
    for (let b = 0; b < rows.batchCount; b++) {
      const seg = appendToSegment(open, rows.batchFirst[b]!, rows.batchLast[b]!, rows.batchBytes[b]!, rows.batchMaxTimestamp[b]!, roll);
      if (seg !== open) {
        if (touched) this.writeSegment(touched);
        this.segmentList.push(seg);
        open = seg;
      }
      touched = seg;
    }
    if (touched) this.writeSegment(touched);
  }

  private writeSegment(s: Segment): void {
    this.upsertSegment.run(s.base, s.rollingTimestamp, s.maxTimestamp, s.bytes);
  }

  private saveOpenTransactions(): void {
    this.db.prepare('DELETE FROM open_txns').run();
    const insert = this.db.prepare('INSERT INTO open_txns (pid, first_offset) VALUES (?, ?)');
    for (const [pid, first] of this.openTransactions) insert.run(pid, first);
  }

  /**
   * The upstream's log start moved to `start`: forget everything below it. Segments that end at
   * or before it go; the one it falls in stays (Kafka's log start may sit inside a segment).
   * Returns whether rows in the cleaned part went, which changes the survivors.
   */
  dropBelow(start: number): boolean {
    if (start <= this.cp.logStartOffset) return false;
    const before = this.cp.firstDirty;
    let cleanedChanged = false;
    this.write(() => {
      cleanedChanged =
        start > before ||
        (this.db.prepare('SELECT EXISTS (SELECT 1 FROM records WHERE offset < ?)').pluck().get(Math.min(start, before)) as number) === 1;
      // By key (the primary key), for the keys of the rows going only: no scan of every key.
      this.db.prepare('DELETE FROM keys WHERE key IN (SELECT key FROM records WHERE offset < ? AND key IS NOT NULL) AND offset < ?').run(start, start);
      this.rows -= this.db.prepare('DELETE FROM records WHERE offset < ?').run(start).changes;
      let gone = 0;
      while (gone + 1 < this.segmentList.length && this.segmentList[gone + 1]!.base <= start) gone++;
      if (gone > 0) {
        this.db.prepare('DELETE FROM segments WHERE base < ?').run(this.segmentList[gone]!.base);
        this.segmentList.splice(0, gone);
      }
      for (const [pid, first] of this.openTransactions) if (first < start) this.openTransactions.set(pid, start);
      this.saveOpenTransactions();
      const firstDirty = Math.max(before, start);
      this.updateCheckpoint({
        logStartOffset: start,
        nextOffset: Math.max(this.cp.nextOffset, start),
        firstDirty,
        cleanBytes: this.bytesBelow(firstDirty),
      });
    });
    this.vacuumIfWorthIt();
    return cleanedChanged;
  }

  /** Bytes of the rows below `end`. */
  bytesBelow(end: number): number {
    return this.db.prepare('SELECT COALESCE(SUM(size), 0) FROM records WHERE offset < ?').pluck().get(end) as number;
  }

  /** Bytes of the rows in [from, to). */
  bytesIn(from: number, to: number): number {
    return this.db.prepare('SELECT COALESCE(SUM(size), 0) FROM records WHERE offset >= ? AND offset < ?').pluck().get(from, to) as number;
  }

  /** How many offsets are held below `end`, and the smallest and largest of them. */
  offsetsBelowStats(end: number): { count: number; min: number; max: number } {
    const [count, min, max] = this.db.prepare('SELECT COUNT(*), MIN(offset), MAX(offset) FROM records WHERE offset < ?').raw().get(end) as [number, number | null, number | null];
    return { count, min: min ?? 0, max: max ?? 0 };
  }

  /** Visits the offsets held below `end`, ascending, without collecting them. */
  eachOffsetBelow(end: number, visit: (offset: number) => void): void {
    for (const offset of this.db.prepare('SELECT offset FROM records WHERE offset < ? ORDER BY offset').pluck().iterate(end) as IterableIterator<number>) visit(offset);
  }

  /** Tombstones still held in the cleaned part, waiting for their delete horizon. */
  tombstonesPending(): number {
    return this.db
      .prepare(`SELECT COUNT(*) FROM records WHERE flags & 3 <> 0 AND flags & ${RecordFlag.Control} = 0 AND offset < ?`)
      .pluck()
      .get(this.cp.firstDirty) as number;
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

  /** Sets the page cache of this file (KiB); the worker shares one budget among all partitions. */
  setCacheKiB(kib: number): void {
    this.db.pragma(`cache_size = -${Math.max(64, Math.floor(kib))}`);
  }

  /**
   * Sets how much write-ahead log this file gathers before a checkpoint writes it back (KiB),
   * which is also the size its WAL file is cut back to; the worker shares one disk budget
   * among all partitions.
   */
  setWalKiB(kib: number): void {
    const pageSize = this.db.pragma('page_size', { simple: true }) as number;
    this.db.pragma(`wal_autocheckpoint = ${Math.max(16, Math.floor((kib * 1024) / pageSize))}`);
    this.db.pragma(`journal_size_limit = ${Math.floor(kib) * 1024}`);
  }

  close(): void {
    if (this.db.open) this.db.close();
  }

  /** Closes the file and deletes it (and its WAL). */
  destroy(): void {
    this.close();
    removeFiles(this.file);
  }
}
