/**
 * Reads records of a partition by offset for the table API (table-service.ts): each from where
 * the index says its bytes are, at its own offset or in a carried copy (physical-reader.ts), so a
 * carried record comes back as its original was written.
 */
import { decodeRecords, TimestampType } from '../../protocol/records/batch.js';
import type { TableRecord } from '../api/table-reads.js';
import { PhysicalReader } from '../carry/physical-reader.js';

/** How much one read of the store asks for: a record larger than this still comes whole (Kafka returns a first batch anyway). */
const READ_BYTES = 1 << 20;

export type ReadStore = (offset: number, maxBytes: number) => Promise<Buffer | null>;

/** Reads records in offset order (a reader reads ahead: ask in that order). */
export class RecordReads {
  private readonly reader: PhysicalReader;

  constructor(
    private readonly partition: number,
    read: ReadStore,
  ) {
    this.reader = new PhysicalReader((offset) => read(offset, READ_BYTES));
  }

  /** The record at `offset` whose bytes are at `phys` (null: at its offset), or undefined when the store no longer holds it. */
  async at(offset: number, phys: number | null): Promise<TableRecord | undefined> {
    const found = await this.reader.batchAt(phys ?? offset, offset);
    if (!found) return undefined;
    const base = Number(found.batch.baseOffset);
    for (const r of await decodeRecords(found.records, found.batch)) {
      if (base + r.offsetDelta !== offset || r.key === null) continue;
      const timestamp =
        found.batch.timestampType === TimestampType.LogAppendTime ? Number(found.batch.maxTimestamp) : Number(found.batch.baseTimestamp) + r.timestampDelta;
      return {
        partition: this.partition,
        offset,
        timestamp,
        // Copies out of the read's buffer: an answer outlives it.
        key: Buffer.from(r.key),
        value: r.value === null ? null : Buffer.from(r.value),
        headers: r.headers.map((h) => ({ key: h.key.toString('utf8'), value: h.value === null ? null : Buffer.from(h.value) })),
      };
    }
    return undefined;
  }
}
