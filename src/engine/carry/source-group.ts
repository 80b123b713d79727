/**
 * What a carry pass copies of one source batch (an original in the store, or the batch a copy
 * holds): the rows it carries there, gathered in offset order, make one copy, the batch as it was
 * when every record survives, else rebuilt with the survivors only, as the fetch view serves it.
 */
import { viewBatch } from '../../protocol/carry/batch-view.js';
import { HorizonCursor } from '../../protocol/carry/carried-batch.js';
import type { SourceBatch } from './physical-reader.js';

export class CarryError extends Error {
  override readonly name = 'CarryError';
}

export class SourceGroup {
  readonly offsets: number[] = [];
  /** The delete horizons of the group's tombstones that have one: offset and horizon pairs, ascending. */
  readonly horizons: number[] = [];
  private source: SourceBatch | undefined;
  /** The copy's physical offset, or null for an original. */
  private phys: number | null = null;
  /** The base offset of the group's batch. */
  base = 0;
  private last = -1;
  private known: HorizonCursor | undefined;
  private runBase = 0;

  constructor(private readonly releaseEnd: number) {}

  /** Whether the row of `offset`, whose bytes are at `phys`, belongs to this group's batch. */
  holds(offset: number, phys: number | null): boolean {
    if (!this.source) return false;
    return phys === this.phys && offset <= this.last;
  }

  start(source: SourceBatch, phys: number | null): void {
    const { batch } = source;
    this.source = source;
    this.phys = phys;
    this.base = Number(batch.baseOffset);
    this.last = this.base + batch.lastOffsetDelta;
    // Passes release at batch boundaries (virtual segments roll between batches): a batch reaching
    // past the release end could not be copied whole and would hide the records past it.
    if (this.last >= this.releaseEnd) throw new CarryError(`the batch [${this.base}, ${this.last}] reaches past the pass's release end ${this.releaseEnd}`);
    this.known = source.mark ? new HorizonCursor(source.mark.horizons) : undefined;
    this.runBase = source.runBase;
    this.offsets.length = 0;
    this.horizons.length = 0;
  }

  add(offset: number, horizon: number | null): void {
    if (offset < this.base || offset > this.last)
      throw new CarryError(`the row of offset ${offset} is not in the batch [${this.base}, ${this.last}] its bytes are in`);
    this.offsets.push(offset);
    const h = horizon ?? this.known?.at(offset - this.runBase) ?? -1;
    if (h >= 0) this.horizons.push(offset, h);
  }

  /** The batch to copy, with the group's records only; undefined for an empty group. It is a view until copied. */
  async copy(): Promise<Buffer | undefined> {
    const source = this.source;
    if (!source || this.offsets.length === 0) return undefined;
    this.source = undefined;
    // The copy is what the fetch view serves of the batch with these survivors. The indexer
    // checked the CRC of every batch below the cleaner's horizon, and the carry batch's of every copy.
    const survivors = Float64Array.from(this.offsets);
    const seen = await viewBatch(source.records, source.batch, { cleanedUpTo: Infinity, survivors: () => survivors }, 0);
    if (seen.kept !== this.offsets.length)
      throw new CarryError(`${this.offsets.length - seen.kept} of the rows carried from the batch at ${this.base} are not records of it`);
    return seen.bytes;
  }
}
