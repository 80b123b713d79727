/**
 * Reads a partition's records by where they are in the store, for a carry pass: the pass asks
 * for its survivors' records in offset order, which is store order within each of the two
 * stretches it walks (the last pass's copies, then the originals after it), so the reader reads
 * ahead one fetch at a time and fetches afresh only when asked for a record outside what it holds.
 */
import { batchPayload, iterateBatches, RecordScan, scanRecordAt, type BatchHeader } from '../../protocol/records/batch.js';
import { CarryKind, carryKindAt } from './carry-record.js';

/** A record found: its batch, the batch's payload, its layout in it, whether it is a carried copy. */
export interface PhysicalRecord {
  batch: BatchHeader;
  payload: Buffer;
  scan: RecordScan;
  /** Where the record starts in the payload. */
  start: number;
  carried: boolean;
}

interface Held {
  records: Buffer;
  batch: BatchHeader;
  payload: Buffer | null;
  /** Where scanning resumes, and a bound below which nothing is found from there. */
  pos: number;
  from: number;
  carried: boolean;
}

export class PhysicalReader {
  private held: Held[] = [];
  private at = 0;
  private readonly scan = new RecordScan();
  /** Fetches made and bytes read, for the pass's report. */
  fetches = 0;
  bytesRead = 0;

  /** `fetch` reads the store from an offset: its record batches, or null when there are none. */
  constructor(private readonly fetch: (offset: number) => Promise<Buffer | null>) {}

  /** The record at `offset` in the store, or undefined when the store does not hold it. */
  async record(offset: number): Promise<PhysicalRecord | undefined> {
    let held = this.find(offset);
    if (!held) {
      await this.load(offset);
      held = this.find(offset);
      if (!held) return undefined;
    }
    const base = Number(held.batch.baseOffset);
    if (!held.payload) {
      held.payload = await batchPayload(held.records, held.batch);
      held.carried = held.batch.producerId < 0n && held.payload.length > 0 && carryKindAt(held.payload, 0) === CarryKind.Copy;
      held.pos = 0;
      held.from = base;
    }
    // Records are asked for in ascending offsets: a batch is scanned on from where the last ask stopped.
    if (offset < held.from) {
      held.pos = 0;
      held.from = base;
    }
    const s = this.scan;
    for (let pos = held.pos; pos < held.payload.length;) {
      const start = pos;
      pos = scanRecordAt(held.payload, pos, s);
      const o = base + s.offsetDelta;
      if (o === offset) {
        held.pos = pos;
        held.from = o + 1;
        return { batch: held.batch, payload: held.payload, scan: s, start, carried: held.carried };
      }
      if (o > offset) {
        held.pos = start;
        held.from = offset + 1;
        break;
      }
    }
    return undefined;
  }

  private find(offset: number): Held | undefined {
    const held = this.held;
    if (held.length === 0) return undefined;
    if (this.at >= held.length || Number(held[this.at]!.batch.baseOffset) > offset) this.at = 0;
    for (; this.at < held.length; this.at++) {
      const b = held[this.at]!.batch;
      if (Number(b.baseOffset) + b.lastOffsetDelta >= offset) return Number(b.baseOffset) <= offset ? held[this.at] : undefined;
    }
    return undefined;
  }

  private async load(offset: number): Promise<void> {
    this.fetches++;
    const records = await this.fetch(offset);
    this.held = [];
    this.at = 0;
    if (!records) return;
    this.bytesRead += records.length;
    for (const batch of iterateBatches(records).batches) {
      if (batch.isControl || batch.recordCount === 0) continue;
      this.held.push({ records, batch, payload: null, pos: 0, from: 0, carried: false });
    }
  }
}
