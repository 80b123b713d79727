/**
 * Rows written straight into a topic's index file, around PartitionStore: for
 * bench/index-fill.ts, which measures how the file's pages fill as keys are rewritten and needs
 * millions of rows in the cleaner's shapes fast (a record appended, the row it supersedes
 * deleted, the key's entry set), without ingest's batches, segments and checkpoints. The engine
 * never writes this way; the SQL stays here, in the store module, with the schema.
 */
import type Database from 'better-sqlite3';
import type { TopicIndex } from './topic-index.js';

export interface PageCounts {
  pageSize: number;
  /** Pages of the file. */
  pages: number;
  /** Of them, free (on the freelist). */
  free: number;
}

export class DirectRows {
  private readonly db: Database.Database;
  private readonly insertRecord: Database.Statement;
  private readonly deleteRecord: Database.Statement;
  private readonly putKey: Database.Statement;

  constructor(index: TopicIndex) {
    this.db = index.db;
    this.insertRecord = this.db.prepare('INSERT INTO records (partition, offset, key, flags, ts, size, pid, txn_first) VALUES (?, ?, ?, 0, ?, 60, NULL, NULL)');
    this.deleteRecord = this.db.prepare('DELETE FROM records WHERE partition = ? AND offset = ?');
    this.putKey = this.db.prepare('INSERT OR REPLACE INTO keys (partition, key, offset) VALUES (?, ?, ?)');
  }

  /** Adds a keyed data record of 60 bytes at `offset`. */
  addRecord(partition: number, offset: number, key: Buffer, timestamp: number): void {
    this.insertRecord.run(partition, offset, key, timestamp);
  }

  deleteRecordAt(partition: number, offset: number): void {
    this.deleteRecord.run(partition, offset);
  }

  /** Sets the key's entry in the cleaned part's key map. */
  setKey(partition: number, key: Buffer, offset: number): void {
    this.putKey.run(partition, key, offset);
  }

  /** Runs `work` in one transaction. */
  transaction(work: () => void): void {
    this.db.transaction(work)();
  }

  pageCounts(): PageCounts {
    const pragma = (name: string) => this.db.pragma(name, { simple: true }) as number;
    return { pageSize: pragma('page_size'), pages: pragma('page_count'), free: pragma('freelist_count') };
  }

  /** Rewrites the file as compact as its rows allow (VACUUM). */
  vacuum(): void {
    this.db.exec('VACUUM');
  }
}
