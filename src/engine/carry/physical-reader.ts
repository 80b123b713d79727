/**
 * Reads a partition's batches by where they are in the store, for a carry pass: the pass asks for
 * its survivors' batches in offset order, which is store order within each of the two stretches
 * it walks (the last pass's copies, then the originals after it), so the reader reads ahead one
 * fetch at a time and fetches afresh only when asked for a batch outside what it holds.
 */
import { batchPayload, firstRecordPayload, iterateBatches, RecordScan, type BatchHeader } from '../../protocol/records/batch.js';
import { batchesIn, carryValueAt, copyOf, emptyCopy, type CarriedCopy } from '../../protocol/carry/carried-batch.js';
import { CarryKind, carryKindAt, type CopyMark } from '../../protocol/carry/carry-record.js';

/** A batch found: an original where the store holds it, or one of the run a carried copy holds. */
export interface SourceBatch {
  /** Read in place: its start and end are positions in `records`. */
  batch: BatchHeader;
  records: Buffer;
  /** The copy's mark, when the batch came from a carried copy, and the base offset its horizons count from. */
  mark: CopyMark | null;
  runBase: number;
}

/** The run of the copy last found, kept while its batches are asked for. */
interface Run {
  at: number;
  /** Where the last batch was found. */
  i: number;
  records: Buffer;
  batches: BatchHeader[];
  mark: CopyMark;
}

interface Held {
  records: Buffer;
  batch: BatchHeader;
  /** Whether it is a carry batch (undefined until looked at), its payload, where scanning its copies resumes. */
  carried: boolean | undefined;
  payload: Buffer | null;
  pos: number;
  from: number;
}

export class PhysicalReader {
  private held: Held[] = [];
  private at = 0;
  private readonly scan = new RecordScan();
  private readonly copy: CarriedCopy = emptyCopy();
  private run: Run | undefined;
  /** Fetches made and bytes read, for the pass's report. */
  fetches = 0;
  bytesRead = 0;

  /** `fetch` reads the store from an offset: its record batches, or null when there are none. */
  constructor(private readonly fetch: (offset: number) => Promise<Buffer | null>) {}

  /**
   * The batch holding the record of `offset`, whose bytes are at physical offset `at`: the store's
   * batch spanning it, or, when that is a carry batch, the batch of the run of the copy at `at`
   * that spans `offset`. Undefined when the store holds neither.
   */
  async batchAt(at: number, offset: number): Promise<SourceBatch | undefined> {
    const run = this.run?.at === at ? this.run : await this.runAt(at);
    if (run === null) {
      const held = this.find(at)!;
      return { batch: held.batch, records: held.records, mark: null, runBase: 0 };
    }
    if (!run) return undefined;
    // Offsets are asked for in ascending order: the run is walked on from the last batch found.
    const { batches } = run;
    if (run.i >= batches.length || Number(batches[run.i]!.baseOffset) > offset) run.i = 0;
    for (; run.i < batches.length; run.i++) {
      const b = batches[run.i]!;
      const base = Number(b.baseOffset);
      if (base > offset) break;
      if (offset <= base + b.lastOffsetDelta) return { batch: b, records: run.records, mark: run.mark, runBase: Number(batches[0]!.baseOffset) };
    }
    return undefined;
  }

  /** The run of the copy at `at`; null when `at` is in a batch of the store's own, undefined when the store holds neither. */
  private async runAt(at: number): Promise<Run | null | undefined> {
    let held = this.find(at);
    if (!held) {
      await this.load(at);
      held = this.find(at);
      if (!held) return undefined;
    }
    const base = Number(held.batch.baseOffset);
    if (held.carried === undefined) {
      // Only a batch without a producer can be kcompact's, and its first record says whether it is.
      const { batch, records } = held;
      held.carried = batch.producerId < 0n && carryKindAt(await firstRecordPayload(records, batch), 0) === CarryKind.Copy;
      held.pos = 0;
      held.from = base;
    }
    if (!held.carried) return null;
    held.payload ??= await batchPayload(held.records, held.batch);
    // Copies are asked for in ascending offsets: a carry batch is scanned on from where the last ask stopped.
    if (at < held.from) {
      held.pos = 0;
      held.from = base;
    }
    const payload = held.payload;
    for (let pos = held.pos; pos < payload.length;) {
      const start = pos;
      const v = carryValueAt(payload, pos, this.scan);
      pos = v.next;
      const o = base + v.delta;
      if (o === at && v.kind === CarryKind.Copy) {
        held.pos = pos;
        held.from = o + 1;
        const copy = copyOf(payload, v, this.scan, this.copy);
        const records = payload.subarray(copy.runStart, copy.runEnd);
        this.run = { at, i: 0, records, batches: batchesIn(records), mark: { pass: copy.mark.pass, horizons: [...copy.mark.horizons] } };
        return this.run;
      }
      if (o >= at) {
        held.pos = start;
        held.from = at + 1;
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
      this.held.push({ records, batch, carried: undefined, payload: null, pos: 0, from: 0 });
    }
  }
}
