/**
 * Where a partition's last whole carry pass lies in the store, found by reading the store once
 * from its log start, without an index: what a replica serves reads below the store's log start
 * from while its index of the partition is still being built (docs/carrying.md, "A new index").
 * Of the store's batches only the headers are read, and of kcompact's own (no producer, never
 * compressed) each record's carry header and the base offset of the first batch of each copy.
 *
 * Every whole pass holds every survivor below its own release end, so the one with the highest
 * release end answers for the most offsets (two passes whole side by side: a carrier that missed
 * a rebalance); of two with the same release end, the later.
 */
import { BATCH_HEADER_SIZE } from '../../protocol/records/batch-header.js';
import { iterateBatches, RecordScan } from '../../protocol/records/batch.js';
import type { CarriedSnapshot } from '../api/index-view.js';
import { carryValueAt, copyOf, emptyCopy } from '../../protocol/carry/carried-batch.js';
import { CarryKind, carryKindAt, readPassEnd, readPassStart } from '../../protocol/carry/carry-record.js';

interface Pass {
  pass: number;
  releaseEnd: number;
  topicStart: number;
  /** Pairs (the first original base offset a copy holds, the copy's offset), ascending. */
  marks: number[];
  /** No client batch between its markers. */
  passOnly: boolean;
  end: number;
}

/** Reads the store's records from an offset: its batches (null when none) and the end of its log. */
export type StoreRead = (offset: number) => Promise<{ records: Buffer | null; highWatermark: number }>;

export class PassLocator {
  private readonly open = new Map<number, Pass>();
  private best: Pass | undefined;
  private readonly scan = new RecordScan();
  private readonly copy = emptyCopy();
  /** The offset after the last batch taken. */
  next: number;

  constructor(from: number) {
    this.next = from;
  }

  /** Takes the batches of one read of the store, in offset order; those below `next` are passed over. */
  add(records: Buffer): void {
    for (const batch of iterateBatches(records).batches) {
      const base = Number(batch.baseOffset);
      const last = base + batch.lastOffsetDelta;
      if (last < this.next) continue;
      this.next = last + 1;
      // Carry batches are written uncompressed, without a producer, one copy or marker each.
      const payload = records.subarray(batch.start + BATCH_HEADER_SIZE, batch.end);
      const own = batch.producerId < 0n && !batch.isControl && batch.compression === 0 && batch.recordCount > 0 && carryKindAt(payload, 0) !== CarryKind.None;
      if (!own) {
        for (const p of this.open.values()) p.passOnly = false;
        continue;
      }
      for (let pos = 0; pos < payload.length;) {
        const v = carryValueAt(payload, pos, this.scan);
        pos = v.next;
        const at = base + v.delta;
        if (v.kind === CarryKind.PassStart) {
          const start = readPassStart(payload, v.valueStart, v.valueEnd);
          this.open.set(at, { pass: at, releaseEnd: start.releaseEnd, topicStart: start.topicStart, marks: [], passOnly: true, end: -1 });
        } else if (v.kind === CarryKind.PassEnd) {
          const end = readPassEnd(payload, v.valueStart, v.valueEnd);
          const whole = this.open.get(end.pass);
          if (!whole) continue;
          this.open.delete(end.pass);
          whole.end = at;
          if (!this.best || whole.releaseEnd >= this.best.releaseEnd) this.best = whole;
        } else if (v.kind === CarryKind.Copy) {
          const { mark, runStart } = copyOf(payload, v, this.scan, this.copy);
          this.open.get(mark.pass)?.marks.push(Number(payload.readBigInt64BE(runStart)), at);
        }
      }
    }
  }

  /** The last whole pass as the fetch view reads copies (survivor-set.ts), or undefined when the store holds none. */
  located(logStart: number): CarriedSnapshot | undefined {
    const p = this.best;
    if (!p) return undefined;
    return {
      copiesBelow: Math.max(logStart, p.releaseEnd),
      topicStart: p.topicStart,
      copiesFrom: p.pass,
      copiesTo: p.end,
      passOnly: p.passOnly,
      marks: Float64Array.from(p.marks),
      asStored: true,
    };
  }
}

/**
 * Reads the store from `logStart` to the end of its log as it stands at the first read; returns
 * the last whole pass (undefined when none), where the reading stopped, and the bytes it read.
 */
export async function locateLastPass(read: StoreRead, logStart: number): Promise<{ carried: CarriedSnapshot | undefined; next: number; bytesRead: number }> {
  const locator = new PassLocator(logStart);
  let end = -1;
  let bytesRead = 0;
  while (end < 0 || locator.next < end) {
    const { records, highWatermark } = await read(locator.next);
    if (end < 0) end = highWatermark;
    if (!records || records.length === 0) break;
    bytesRead += records.length;
    const before = locator.next;
    locator.add(records);
    if (locator.next === before) throw new Error(`reading the store from offset ${before} gave no whole batch`);
  }
  return { carried: locator.located(logStart), next: locator.next, bytesRead };
}
