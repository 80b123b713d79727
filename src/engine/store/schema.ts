/**
 * The layout of a topic's index file: every partition of the topic indexed in one SQLite file,
 * the partition first in every key, so that one connection, one page cache and one set of
 * prepared statements serve them all (each file holds SQLite memory of its own, which a file
 * per partition multiplied by the partitions; docs/performance.md). A file whose schema version
 * differs is rebuilt from the upstream rather than migrated: the index is a cache of the
 * upstream log.
 *
 * meta       a single row: the schema version and the topic the file is for.
 * checkpoint one row per partition: where indexing and cleaning stand, and the key identity
 *            the key digests were made with ('' until the first rows; key-identity/).
 * records    one row per offset still held: key digest (NULL when keyless), RecordFlag bits,
 *            timestamp, bytes it takes in the log, producer id (transactional rows), first
 *            offset of the transaction (markers), delete horizon (tombstones and markers, once a
 *            clean has set it), and where the record's bytes are in the store: NULL at its own
 *            offset, else the offset of its latest carried copy (docs/carrying.md). Keyed by
 *            (partition, offset), so range scans and appends are B-tree order.
 * keys       for the cleaned part of each partition, the one offset each key kept (the
 *            cleaner's map of what a newer record in the dirty part supersedes); none at all
 *            while a new index's first pass owes them (carried-rows.ts KeyEntries).
 * segments   the virtual segments (segment-roller.ts).
 * open_txns  per producer with a transaction in progress at the indexed end, its first offset.
 * carry      one row per partition: what the carry passes seen in the store said (PartitionStore.carry).
 * carry_releases one row per release record still in the store: the pass, where the store's log
 *            start is to go, and the share groups it names (a JSON array).
 * conditions one row per partition that has met a conditional record or may (docs/tables.md):
 *            whether it has, and while the index lacks records below the offset it started reading
 *            at (a replica new to a carried store), that offset, else 0 (condition-judge.ts).
 * conditional every conditional record the store still holds: its condition, and the verdict
 *            (1 won, 0 void), NULL while the index lacked records before it (judged once it has
 *            them). Kept after the cleaner removed the record, so a writer asking late still learns
 *            whether it won.
 *
 * records_void indexes the void records, few, which the fetch view hides wherever they are.
 */
export const SCHEMA_VERSION = 7;

export const CREATE_SCHEMA = `
CREATE TABLE meta (
  id INTEGER PRIMARY KEY CHECK (id = 0),
  schema_version INTEGER NOT NULL,
  topic TEXT NOT NULL
);
CREATE TABLE checkpoint (
  partition INTEGER PRIMARY KEY,
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
  partition INTEGER NOT NULL,
  offset INTEGER NOT NULL,
  key BLOB,
  flags INTEGER NOT NULL,
  ts INTEGER NOT NULL,
  size INTEGER NOT NULL,
  pid INTEGER,
  txn_first INTEGER,
  horizon INTEGER,
  phys INTEGER,
  PRIMARY KEY (partition, offset)
) WITHOUT ROWID;
CREATE INDEX records_pending ON records(partition, offset) WHERE flags & 3 <> 0;
CREATE INDEX records_void ON records(partition, offset) WHERE flags & 32 <> 0;
CREATE TABLE keys (partition INTEGER NOT NULL, key BLOB NOT NULL, offset INTEGER NOT NULL, PRIMARY KEY (partition, key)) WITHOUT ROWID;
CREATE TABLE segments (
  partition INTEGER NOT NULL,
  base INTEGER NOT NULL,
  rolling_ts INTEGER NOT NULL,
  max_ts INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  PRIMARY KEY (partition, base)
) WITHOUT ROWID;
CREATE TABLE open_txns (partition INTEGER NOT NULL, pid INTEGER NOT NULL, first_offset INTEGER NOT NULL, PRIMARY KEY (partition, pid)) WITHOUT ROWID;
CREATE TABLE carry (
  partition INTEGER PRIMARY KEY,
  topic_start INTEGER NOT NULL,
  open_pass INTEGER NOT NULL,
  open_release INTEGER NOT NULL,
  pass INTEGER NOT NULL,
  pass_end INTEGER NOT NULL,
  pass_release INTEGER NOT NULL,
  open_time INTEGER NOT NULL,
  pass_time INTEGER NOT NULL
);
CREATE TABLE carry_releases (
  partition INTEGER NOT NULL,
  at INTEGER NOT NULL,
  pass INTEGER NOT NULL,
  released_end INTEGER NOT NULL,
  groups TEXT NOT NULL,
  PRIMARY KEY (partition, at)
) WITHOUT ROWID;
CREATE TABLE conditions (partition INTEGER PRIMARY KEY, seen INTEGER NOT NULL, gap_below INTEGER NOT NULL);
CREATE TABLE conditional (partition INTEGER NOT NULL, offset INTEGER NOT NULL, condition INTEGER NOT NULL, won INTEGER, PRIMARY KEY (partition, offset)) WITHOUT ROWID;
CREATE INDEX conditional_pending ON conditional(partition, offset) WHERE won IS NULL;
`;

/** The partial index above, as a WHERE term: queries must repeat it word for word to use it. */
export const PENDING_TERM = 'flags & 3 <> 0';

/**
 * The records table read through that partial index (the WHERE must hold PENDING_TERM): the
 * planner would otherwise take the primary key, which leads with the partition too, and go
 * through every record of the partition for the few tombstones and markers.
 */
export const PENDING_RECORDS = 'records INDEXED BY records_pending';

/** The void records' partial index, as a WHERE term and a table reference (as PENDING_* above). */
export const VOID_TERM = 'flags & 32 <> 0';
export const VOID_RECORDS = 'records INDEXED BY records_void';
