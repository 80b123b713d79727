/**
 * What the store prepares once per index file's connection (a topic's partitions share it) and
 * lets go with it: statements, and the temp tables a clean uses.
 */
import type Database from 'better-sqlite3';

/** `build` run once per connection, its result kept as long as the connection is. */
export function perConnection<T>(build: (db: Database.Database) => T): (db: Database.Database) => T {
  const made = new WeakMap<Database.Database, T>();
  return (db) => {
    let known = made.get(db);
    if (known === undefined) made.set(db, (known = build(db)));
    return known;
  };
}
