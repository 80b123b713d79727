/**
 * Per-record flag bits in the index. Control batches hold one record each: the transaction
 * marker, indexed as a row of its own so the cleaner can decide when it goes (Kafka removes
 * markers on the tombstone schedule once their transaction's data is gone).
 */
export const RecordFlag = {
  /** A keyed record with a null value. */
  Tombstone: 1,
  /** A transaction marker (control batch). */
  Control: 2,
  /** With Control: a COMMIT marker; without it an ABORT marker. */
  Commit: 4,
  /** From a transactional batch (data or marker); the row carries the producer id. */
  Transactional: 8,
  /** Data of an aborted transaction: gone at the first clean that covers it. */
  Aborted: 16,
  /**
   * A conditional record whose condition failed (condition.ts): never a key's latest, gone at the
   * first clean that covers it, never shown (schema.ts VOID_TERM repeats the bit).
   */
  Void: 32,
} as const;

/** Rows the cleaner revisits on every pass: tombstones and markers (a partial index covers them). */
export const PENDING_FLAGS = RecordFlag.Tombstone | RecordFlag.Control;

/** Rows that are never a key's latest record: markers, aborted data, void records. */
export const NOT_A_VALUE = RecordFlag.Control | RecordFlag.Aborted | RecordFlag.Void;
