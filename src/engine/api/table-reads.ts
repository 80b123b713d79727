/**
 * What the table API (src/tables/) asks of the key index: the latest record of a key, the verdict
 * on a conditional record, and a partition's changes, each answered by the worker from the index
 * every replica already keeps (docs/tables.md). Keys are the bytes a producer writes; the worker
 * compares them as the topic's key identity does (key-identity/).
 *
 * Conditional records (docs/tables.md, "Compare-and-set") carry their condition in a header, and
 * the index judges each one from the log's own order, the same way on every replica: a record whose
 * condition fails is void, which the index, the cleaner, the fetch view and the carrier all treat
 * as if it had never been written.
 */

export { IF_MATCH_HEADER, IF_NONE_MATCH_HEADER } from '../../protocol/carry/condition-headers.js';

export interface TableHeader {
  key: string;
  value: Buffer | null;
}

/** A record of a compacted topic as the table API answers it. */
export interface TableRecord {
  partition: number;
  offset: number;
  /** Epoch ms, the record's own (a carried record keeps its original's). */
  timestamp: number;
  key: Buffer;
  /** null for a tombstone. */
  value: Buffer | null;
  headers: TableHeader[];
}

/** The index had not read up to the offset asked for within the time given. */
export interface Behind {
  behind: true;
  /** The next offset the index reads. */
  indexedTo: number;
}

export interface LatestAnswer {
  behind?: false;
  /** The key's latest record; null when it has none or the latest is a tombstone. */
  record: TableRecord | null;
  indexedTo: number;
}

/** What the index decided of a conditional record: won (it is the key's latest, or was), or void. */
export type ConditionVerdict = 'won' | 'void' | 'unconditional';

export interface VerdictAnswer {
  behind?: false;
  verdict: ConditionVerdict;
}

export interface ChangesAnswer {
  behind?: false;
  /**
   * In offset order, from the offset asked for: what a Kafka consumer through kcompact reads
   * there (the cleaned part's survivors, then every record), keyless records and void ones left
   * out, tombstones in with a null value.
   */
  records: TableRecord[];
  /** Where to ask next: after the last record given, or the index's end when it gave all it holds. */
  next: number;
}

/**
 * A conditional record the table API has just appended: its key's bytes and its condition. The
 * worker may judge it before its index reads it back (PartitionStore.foresee).
 */
export interface WrittenRecord {
  key: Buffer;
  condition: { ifMatch: number } | { ifNoneMatch: true };
}

/** A key as the request gives it: its bytes, or for a topic whose keys are compared through the schema registry, its JSON. */
export type TableKey = { bytes: Buffer } | { json: unknown };

export interface TableReads {
  /**
   * The latest record of `key` in the partition, once the index has read up to `atLeast` (0: as
   * it is now), waiting up to timeoutMs for that. Rejects with TableError when the topic is not
   * compacted or the partition does not exist.
   */
  latest(topic: string, partition: number, key: TableKey, atLeast: number, timeoutMs: number): Promise<LatestAnswer | Behind>;
  /**
   * A conditional record is about to be appended to the partition: the replica may foresee its
   * verdict from here on, wherever the index ends (PartitionStore.foresee), so that verdict()
   * with the same `written` answers as soon as the store says where the record went. Returns
   * what to call once the write is answered or failed.
   */
  expect(topic: string, partition: number, written: WrittenRecord): () => void;
  /**
   * The verdict on the record at `offset`, once the index has read it (waiting up to timeoutMs);
   * with `written`, the record as it was appended, as soon as the index ends at it.
   */
  verdict(topic: string, partition: number, offset: number, timeoutMs: number, written?: WrittenRecord): Promise<VerdictAnswer | Behind>;
  /**
   * Up to `limit` records from `from` on (see ChangesAnswer), of one key when `key` is given;
   * waits up to waitMs for the first one when the index holds none yet.
   */
  changes(topic: string, partition: number, from: number, key: TableKey | null, limit: number, waitMs: number): Promise<ChangesAnswer>;
}

/** A table request the index cannot answer as asked: the HTTP status it maps to and what to do. */
export class TableError extends Error {
  constructor(
    readonly status: 400 | 404 | 409 | 503,
    message: string,
  ) {
    super(message);
    this.name = 'TableError';
  }
}

/** A Buffer again: a record's bytes cross the thread boundary as plain Uint8Arrays. */
function buffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The record with its bytes as Buffers again, after crossing from the worker. */
export function restoreRecord(r: TableRecord): TableRecord {
  r.key = buffer(r.key);
  if (r.value !== null) r.value = buffer(r.value);
  for (const h of r.headers) if (h.value !== null) h.value = buffer(h.value);
  return r;
}
