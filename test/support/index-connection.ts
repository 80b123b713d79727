/**
 * The SQLite connection behind a partition's store, for the few tests that work on the index
 * file or the connection themselves rather than on what the index holds: a fault injected (a
 * dropped table, a file that may not grow, a commit that fails), SQLite's own settings read
 * back, the WAL written into the file before its bytes are measured or damaged. What the store's
 * operations can say (PartitionStore: rowsIn, keptKeys, offsetsBelowStats, checkpoint, ...), a
 * test asks them; only the store module writes SQL otherwise.
 */
import type Database from 'better-sqlite3';
import type { PartitionStore } from '../../src/engine/store/partition-store.js';

export function indexConnection(store: PartitionStore): Database.Database {
  return store.index.db;
}
