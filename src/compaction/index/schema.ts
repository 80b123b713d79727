/**
 * The layout of one partition's index file. A file whose schema version differs is rebuilt
 * from the upstream rather than migrated: the index is a cache of the upstream log.
 *
 * records   one row per offset still held: key digest (NULL when keyless), RecordFlag bits,
 *           timestamp, bytes it takes in the log, producer id (transactional rows), first offset
 *           of the transaction (markers), delete horizon (tombstones and markers, once a clean
 *           has set it). The offset is the rowid, so range scans and appends are B-tree order.
 * keys      for the cleaned part of the log, the one offset each key kept (the cleaner's map
 *           of what a newer record in the dirty part supersedes).
 * segments  the virtual segments (segment-roller.ts).
 * open_txns per producer with a transaction in progress at the indexed end, its first offset.
 * checkpoint a single row: where indexing and cleaning stand, and the key identity the key
 *           digests were made with ('' until the first rows; key-identity/).
 */
export const SCHEMA_VERSION = 2;

export const CREATE_SCHEMA = `
CREATE TABLE checkpoint (
  id INTEGER PRIMARY KEY CHECK (id = 0),
  schema_version INTEGER NOT NULL,
  topic TEXT NOT NULL,
  partition INTEGER NOT NULL,
  topic_id TEXT NOT NULL,
  next_offset INTEGER NOT NULL,
  log_start INTEGER NOT NULL,
  last_stable INTEGER NOT NULL,
  high_watermark INTEGER NOT NULL,
  first_dirty INTEGER NOT NULL,
  clean_bytes INTEGER NOT NULL,
  last_clean_ms INTEGER NOT NULL,
  key_identity TEXT NOT NULL
);
CREATE TABLE records (
  offset INTEGER PRIMARY KEY,
  key BLOB,
  flags INTEGER NOT NULL,
  ts INTEGER NOT NULL,
  size INTEGER NOT NULL,
  pid INTEGER,
  txn_first INTEGER,
  horizon INTEGER
);
CREATE INDEX records_pending ON records(offset) WHERE flags & 3 <> 0;
CREATE TABLE keys (key BLOB PRIMARY KEY, offset INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE segments (
  base INTEGER PRIMARY KEY,
  rolling_ts INTEGER NOT NULL,
  max_ts INTEGER NOT NULL,
  bytes INTEGER NOT NULL
);
CREATE TABLE open_txns (pid INTEGER PRIMARY KEY, first_offset INTEGER NOT NULL);
`;

/** The partial index above, as a WHERE term: queries must repeat it word for word to use it. */
export const PENDING_TERM = 'flags & 3 <> 0';
