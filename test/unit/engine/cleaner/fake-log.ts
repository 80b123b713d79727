/**
 * An upstream partition log for cleaner tests: real v2 batches (plain, transactional, markers),
 * answered to the indexer as a READ_COMMITTED fetch would be (records up to the last stable
 * offset, the aborted transactions overlapping the answer), and fed into a PartitionStore
 * through the indexer's own parsing. It also remembers, naively, what each record is, for the
 * reference model.
 */
import { collectRows } from '../../../../src/engine/indexer/fetched-rows.js';
import type { PartitionStore } from '../../../../src/engine/store/partition-store.js';
import { RowBuffer } from '../../../../src/engine/store/row-buffer.js';
import type { RollPolicy } from '../../../../src/engine/store/segment-roller.js';
import { dataBatch, markerBatch, type DataRecord } from '../indexer/batch-builder.js';

export interface LogRecord {
  offset: number;
  key: string | null;
  tombstone: boolean;
  /** Transaction marker type, null for data. */
  marker: 'commit' | 'abort' | null;
  /** Producer id for transactional records, -1 otherwise. */
  producerId: number;
  /** Data of a transaction that was (or will be) aborted. */
  aborted: boolean;
}

export interface LogBatch {
  base: number;
  last: number;
  bytes: Buffer;
  maxTimestamp: number;
  records: LogRecord[];
}

export class FakeLog {
  readonly batches: LogBatch[] = [];
  end = 0;
  /** Producer id → the records of its open transaction. */
  private readonly open = new Map<number, { first: number; records: LogRecord[] }>();
  private readonly abortedTxns: { producerId: number; first: number; last: number }[] = [];

  get records(): LogRecord[] {
    return this.batches.flatMap((b) => b.records);
  }

  openProducers(): number[] {
    return [...this.open.keys()];
  }

  /** Appends a data batch (transactional when producerId is given). */
  async append(records: DataRecord[], timestamp: number, producerId?: number): Promise<void> {
    const base = this.end;
    const bytes = await dataBatch({ baseOffset: base, timestamp, ...(producerId !== undefined ? { producerId, transactional: true } : {}) }, records);
    const logRecords = records.map((r, i): LogRecord => ({
      offset: base + i,
      key: r.key,
      tombstone: r.key !== null && r.value === null,
      marker: null,
      producerId: producerId ?? -1,
      aborted: false,
    }));
    if (producerId !== undefined) {
      const txn = this.open.get(producerId) ?? { first: base, records: [] };
      txn.records.push(...logRecords);
      this.open.set(producerId, txn);
    }
    this.push(bytes, base, base + records.length - 1, timestamp, logRecords);
  }

  /** Ends a producer's open transaction with a COMMIT or ABORT marker. */
  async endTransaction(producerId: number, commit: boolean, timestamp: number): Promise<void> {
    const txn = this.open.get(producerId);
    if (!txn) throw new Error(`producer ${producerId} has no open transaction`);
    this.open.delete(producerId);
    const offset = this.end;
    if (!commit) {
      for (const r of txn.records) r.aborted = true;
      this.abortedTxns.push({ producerId, first: txn.first, last: offset });
    }
    const record: LogRecord = { offset, key: null, tombstone: false, marker: commit ? 'commit' : 'abort', producerId, aborted: false };
    this.push(await markerBatch({ baseOffset: offset, producerId, timestamp }, commit), offset, offset, timestamp, [record]);
  }

  /** The first offset of the earliest open transaction, or the log end. */
  lastStableOffset(): number {
    return Math.min(this.end, ...[...this.open.values()].map((t) => t.first));
  }

  /** Indexes everything the store lacks up to the last stable offset, like one fetch would. */
  async feed(store: PartitionStore, roll: RollPolicy): Promise<void> {
    const from = store.checkpoint.nextOffset;
    const lso = this.lastStableOffset();
    const records = Buffer.concat(this.batches.filter((b) => b.last >= from && b.last < lso).map((b) => b.bytes));
    const aborted = this.abortedTxns
      .filter((t) => t.last >= from && t.first < lso)
      .map((t) => ({ producerId: BigInt(t.producerId), firstOffset: BigInt(t.first) }));
    const rows = new RowBuffer();
    const result = await collectRows(records, aborted, from, lso, store.openTransactions, rows);
    store.ingest(rows, { nextOffset: result.nextOffset, logStartOffset: 0, lastStableOffset: lso, highWatermark: this.end }, roll, result.transactionsChanged);
  }

  private push(bytes: Buffer, base: number, last: number, maxTimestamp: number, records: LogRecord[]): void {
    this.batches.push({ base, last, bytes, maxTimestamp, records });
    this.end = last + 1;
  }
}
