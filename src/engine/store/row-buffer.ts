import { Condition } from './condition.js';
import { KEY_DIGEST_BYTES } from './key-digest.js';

/** A carry pass's marker met in the log (docs/carrying.md): its own offset and what it says. */
export type CarryEvent =
  | { kind: 'start'; at: number; releaseEnd: number; topicStart: number; time: number }
  | { kind: 'end'; at: number; pass: number; copies: number; releaseEnd: number; time: number }
  | { kind: 'release'; at: number; pass: number; releasedEnd: number; groups: string[] };

/**
 * The rows of one ingest, column by column, so that tailing a partition allocates per fetch
 * rather than per record, and the batches they came in (the unit of virtual segment rolling).
 * Numbers are exact below 2^53 (offsets, timestamps, producer ids).
 */
export class RowBuffer {
  length = 0;
  batchCount = 0;
  /** Per batch: the first offset it adds, its size in the log, its largest timestamp, its last offset. */
  batchFirst: number[] = [];
  batchBytes: number[] = [];
  batchMaxTimestamp: number[] = [];
  batchLast: number[] = [];
  offsets: Float64Array;
  timestamps: Float64Array;
  sizes: Float64Array;
  flags: Uint8Array;
  /** 1 when the row has a key; its digest is at keys[row * 16, row * 16 + 16). */
  hasKey: Uint8Array;
  keys: Buffer;
  /** Producer id of transactional rows; -1 otherwise. */
  producerIds: Float64Array;
  /** For markers: the first offset of the transaction they end; -1 otherwise. */
  txnFirsts: Float64Array;
  /**
   * For a carried copy: where the copy is in the store (the row's offset is its original's);
   * -1 for a record read at its own offset.
   */
  phys: Float64Array;
  /** A copied tombstone's delete horizon; -1 otherwise. */
  horizons: Float64Array;
  /** A conditional record's condition (condition.ts); Condition.None otherwise. */
  conditions: Float64Array;
  /** How many rows have a condition. */
  conditional = 0;
  /** How many rows are carried copies. */
  copies = 0;
  /** Carry pass markers, in log order. */
  readonly events: CarryEvent[] = [];

  constructor(capacity = 1024) {
    this.offsets = new Float64Array(capacity);
    this.timestamps = new Float64Array(capacity);
    this.sizes = new Float64Array(capacity);
    this.flags = new Uint8Array(capacity);
    this.hasKey = new Uint8Array(capacity);
    this.keys = Buffer.alloc(capacity * KEY_DIGEST_BYTES);
    this.producerIds = new Float64Array(capacity);
    this.txnFirsts = new Float64Array(capacity);
    this.phys = new Float64Array(capacity);
    this.horizons = new Float64Array(capacity);
    this.conditions = new Float64Array(capacity);
  }

  clear(): void {
    this.length = 0;
    this.batchCount = 0;
    this.copies = 0;
    this.conditional = 0;
    this.events.length = 0;
  }

  pushBatch(first: number, last: number, bytes: number, maxTimestamp: number): void {
    const i = this.batchCount++;
    this.batchFirst[i] = first;
    this.batchLast[i] = last;
    this.batchBytes[i] = bytes;
    this.batchMaxTimestamp[i] = maxTimestamp;
  }

  /** Appends a row without a key or producer and returns its index; callers fill in the rest. */
  push(offset: number, timestamp: number, size: number, flags: number): number {
    if (this.length === this.offsets.length) this.grow();
    const i = this.length++;
    this.offsets[i] = offset;
    this.timestamps[i] = timestamp;
    this.sizes[i] = size;
    this.flags[i] = flags;
    this.hasKey[i] = 0;
    this.producerIds[i] = -1;
    this.txnFirsts[i] = -1;
    this.phys[i] = -1;
    this.horizons[i] = -1;
    this.conditions[i] = Condition.None;
    return i;
  }

  /** Gives row i a condition (condition.ts). */
  setCondition(i: number, condition: number): void {
    this.conditions[i] = condition;
    this.conditional++;
  }

  /** Appends the row of a carried copy at `phys` of a record at `offset`; callers fill in its key. */
  pushCopy(offset: number, phys: number, timestamp: number, size: number, flags: number, horizon: number): number {
    const i = this.push(offset, timestamp, size, flags);
    this.phys[i] = phys;
    this.horizons[i] = horizon;
    this.copies++;
    return i;
  }

  private grow(): void {
    const n = this.offsets.length * 2;
    const f64 = (a: Float64Array) => {
      const b = new Float64Array(n);
      b.set(a);
      return b;
    };
    const u8 = (a: Uint8Array) => {
      const b = new Uint8Array(n);
      b.set(a);
      return b;
    };
    this.offsets = f64(this.offsets);
    this.timestamps = f64(this.timestamps);
    this.sizes = f64(this.sizes);
    this.producerIds = f64(this.producerIds);
    this.txnFirsts = f64(this.txnFirsts);
    this.phys = f64(this.phys);
    this.horizons = f64(this.horizons);
    this.conditions = f64(this.conditions);
    this.flags = u8(this.flags);
    this.hasKey = u8(this.hasKey);
    const keys = Buffer.alloc(n * KEY_DIGEST_BYTES);
    this.keys.copy(keys);
    this.keys = keys;
  }
}
