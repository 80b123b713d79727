/**
 * A carried partition below the last whole pass's release end (docs/carrying.md): its records
 * are no longer at their offsets in the store once the store let the range go, only in the copies
 * that pass wrote, so the fetch view reads those and serves the batches they hold. It does so
 * from the moment its index has read the pass whole, before the range is let go as after: no read
 * below the release end reaches the store while DeleteRecords is under way. A copy holds a run of
 * original batches as a client is served them, back to back, in offset order of the originals;
 * the snapshot's marks say where to start for an offset. A stretch of a run whose every record
 * still survives in this replica's index goes out as it is, in one piece, without a look inside;
 * one that lost records since the pass goes through the view batch by batch like a read from the
 * store (visible-records.ts), so that what a replica serves from the copies follows its index as
 * it does above them.
 *
 * A budget only stops the answer between two batches, as it does above the copies. The answer's
 * batches are views of the reads of the copies, which it hands on with them (`held`), to be given
 * back once the answer has been put together (copies-ahead.ts begins answers early).
 */
import { ErrorCode } from '../../protocol/errors.js';
import { BATCH_HEADER_SIZE, batchPayload, iterateBatches, readBatchHeader, RecordScan } from '../../protocol/records/batch.js';
import { LOG_OVERHEAD, Offsets } from '../../protocol/records/batch-header.js';
import { CorruptRecordError } from '../../protocol/records/errors.js';
import { carryValueAt, copyOf, emptyCopy, RUN_BYTES } from '../../protocol/carry/carried-batch.js';
import { CarryKind, carryKindAt } from '../../protocol/carry/carry-record.js';
import type { PartitionIndexView, CarriedSnapshot } from '../../engine/api/index-view.js';
import { copiesReadFrom } from '../../engine/api/survivor-set.js';
import type { PartitionRead, UpstreamRead, UpstreamReads } from './upstream-reads.js';
import { viewBatch, type Visibility } from '../../protocol/carry/batch-view.js';
import { leftOut, visibilityOf, type Budget, type VisibleRecords } from './visible-records.js';

/**
 * A read of the copies starts at the run holding the client's offset: it asks for the room left
 * and a run (the most of a read that can lie before the offset), within these bounds.
 */
const MIN_READ_BYTES = 64 * 1024;
const MAX_READ_BYTES = 4 * 1024 * 1024;
const READ_UNCOMMITTED = 0;

export interface CopiesTarget {
  topic: string;
  partition: number;
  view: PartitionIndexView;
  carried: CarriedSnapshot;
}

function copiesRead(target: CopiesTarget, fetchOffset: number, budget: Budget, taken: number): PartitionRead {
  return {
    topic: target.topic,
    partition: target.partition,
    fetchOffset,
    currentLeaderEpoch: -1,
    maxBytes: readBytes(budget, taken),
    isolationLevel: READ_UNCOMMITTED,
  };
}

function readBytes(budget: Budget, taken: number): number {
  const room = budget.maxBytes - taken;
  return Math.floor(Math.max(MIN_READ_BYTES, Math.min(MAX_READ_BYTES, room + room / 16 + RUN_BYTES)));
}

/**
 * Header fields of the batch at `pos` of a run, read byte by byte: a read of a megabyte of small
 * batches reads some ten thousand of them, and Buffer's own readers check their arguments on
 * every call. endAt() has checked that the header lies within the run.
 */
const u32At = (run: Buffer, at: number) => ((run[at]! << 24) | (run[at + 1]! << 16) | (run[at + 2]! << 8) | run[at + 3]!) >>> 0;
const i32At = (run: Buffer, at: number) => (run[at]! << 24) | (run[at + 1]! << 16) | (run[at + 2]! << 8) | run[at + 3]!;
/** Offsets are below 2^53. */
const baseAt = (run: Buffer, pos: number) => u32At(run, pos + Offsets.baseOffset) * 2 ** 32 + u32At(run, pos + Offsets.baseOffset + 4);
const countAt = (run: Buffer, pos: number) => i32At(run, pos + Offsets.recordCount);

/** Where the batch at `pos` of a run ending at `end` ends; CorruptRecordError when it does not fit. */
function endAt(run: Buffer, pos: number, end: number): number {
  if (pos + BATCH_HEADER_SIZE > end) throw new CorruptRecordError(`a carried copy's run holds a partial batch at byte ${pos}`);
  const next = pos + LOG_OVERHEAD + i32At(run, pos + Offsets.batchLength);
  if (next < pos + BATCH_HEADER_SIZE || next > end) throw new CorruptRecordError(`a carried copy's batch at byte ${pos} does not fit its run`);
  return next;
}

/**
 * The answer being put together from the copies. Its batches are views of the reads of the
 * copies, which it holds (`reads`) until the answer has been put together in one piece: a read
 * is about the size of the answer, so copying out of it would cost a copy of every byte and save
 * little memory.
 */
class CopiesAnswer {
  readonly batches: Buffer[] = [];
  readonly reads: UpstreamRead[] = [];
  size = 0;
  progress = 0;
  removed = 0;
  rebuilt = 0;
  /** The last offset of the last batch that went out; -1 before one did. */
  servedThrough = -1;
  full = false;

  constructor(
    private readonly budget: Budget,
    private readonly visibility: Visibility,
    private readonly view: PartitionIndexView,
    private readonly from: number,
    /** Every record of the copies goes out (CarriedSnapshot.asStored). */
    private readonly asStored: boolean,
  ) {}

  /**
   * Takes the batches of run[pos, end) that lie below `start` and end at or after the client's
   * offset and past what went out, as far as the budget goes; returns where it stopped: `end`,
   * the first batch at or past `start`, or (with `full` set) the first batch left out.
   */
  async take(run: Buffer, pos: number, end: number, start: number): Promise<number> {
    // The batches up to the client's offset are passed over, and one spanning it goes through the view.
    while (pos < end) {
      const next = endAt(run, pos, end);
      const base = baseAt(run, pos);
      if (base >= start) return pos;
      const last = base + i32At(run, pos + Offsets.lastOffsetDelta);
      if (last < this.from || last <= this.servedThrough) {
        pos = next;
        continue;
      }
      if (base >= this.from) break;
      if (!(await this.viewed(run, pos))) return pos;
      pos = next;
    }
    // The stretch below `start` that the budget takes, in one walk; it goes out as it is when every record of it survives.
    let cut = pos;
    let records = 0;
    let last = -1;
    while (cut < end) {
      const next = endAt(run, cut, end);
      const base = baseAt(run, cut);
      if (base >= start || leftOut(this.budget, this.size + cut - pos, next - cut)) break;
      records += countAt(run, cut);
      last = base + i32At(run, cut + Offsets.lastOffsetDelta);
      cut = next;
    }
    if (cut > pos && (this.asStored || (last < this.visibility.cleanedUpTo && this.view.survivorCount(baseAt(run, pos), last + 1) === records))) {
      this.batches.push(run.subarray(pos, cut));
      this.size += cut - pos;
      this.progress += records;
      this.servedThrough = last;
      // Stopped by the budget rather than at `start` or the run's end.
      if (cut < end && baseAt(run, cut) < start) this.full = true;
      return cut;
    }
    // Records were removed since the pass (or a rebuilt batch may fit where the original did not): batch by batch.
    for (; pos < end && baseAt(run, pos) < start; pos = endAt(run, pos, end)) if (!(await this.viewed(run, pos))) return pos;
    return pos;
  }

  /** The batch at `pos` through the view; false when the budget leaves it out. */
  private async viewed(run: Buffer, pos: number): Promise<boolean> {
    const batch = readBatchHeader(run, pos);
    const seen = await viewBatch(run, batch, this.visibility, this.from);
    this.removed += batch.recordCount - seen.kept;
    if (seen.kept === 0) return true;
    if (leftOut(this.budget, this.size, seen.bytes.length)) {
      this.full = true;
      return false;
    }
    this.batches.push(seen.bytes);
    this.size += seen.bytes.length;
    this.progress += seen.progress;
    if (seen.rebuilt) this.rebuilt++;
    this.servedThrough = Number(batch.baseOffset) + batch.lastOffsetDelta;
    return true;
  }
}

/** The records from `from` up to the snapshot's copiesBelow, as far as the budget takes them. */
export async function carriedRecords(upstream: UpstreamReads, target: CopiesTarget, from: number, budget: Budget): Promise<VisibleRecords> {
  const { view, carried } = target;
  const start = carried.copiesBelow;
  const answer = new CopiesAnswer(budget, visibilityOf(view), view, from, carried.asStored === true);
  const copy = emptyCopy();
  const scan = new RecordScan();
  let pos = copiesReadFrom(carried, from);
  let reachedStart = false;
  let bytesRead = 0;
  walk: while (pos <= carried.copiesTo) {
    const read = await upstream.readPartition(copiesRead(target, pos, budget, answer.size));
    const taken = answer.batches.length;
    try {
      // The pass's copies went (a newer pass this replica has not read yet): what was found stands.
      if (read.errorCode !== ErrorCode.NONE || !read.records) break;
      const walked = iterateBatches(read.records).batches;
      if (walked.length === 0) break;
      bytesRead += read.records.length;
      for (const b of walked) {
        pos = Number(b.baseOffset) + b.lastOffsetDelta + 1;
        if (b.producerId >= 0n || b.isControl || b.recordCount === 0) continue;
        const payload = await batchPayload(read.records, b);
        if (carryKindAt(payload, 0) !== CarryKind.Copy) continue;
        for (let p = 0; p < payload.length;) {
          const v = carryValueAt(payload, p, scan);
          p = v.next;
          if (v.kind !== CarryKind.Copy) continue;
          const { runStart, runEnd } = copyOf(payload, v, scan, copy);
          const stopped = await answer.take(payload, runStart, runEnd, start);
          if (answer.full) break walk;
          if (stopped < runEnd) {
            reachedStart = true;
            break walk;
          }
        }
      }
    } finally {
      if (answer.batches.length > taken) answer.reads.push(read);
      else read.release();
    }
  }
  if (pos > carried.copiesTo) reachedStart = true;
  const { batches, reads, progress, removed, rebuilt, servedThrough, full } = answer;
  return {
    batches,
    held: reads,
    trailingEmpty: null,
    truncatedTail: Buffer.alloc(0),
    progress,
    removedRecords: removed,
    rebuiltBatches: rebuilt,
    end: reachedStart && !full ? Math.max(start - 1, servedThrough) : servedThrough,
    visibleEnd: servedThrough + 1,
    markers: [],
    corrupt: null,
    changed: true,
    full,
    withheld: false,
    walked: { bytes: bytesRead, offsets: 0, batches: 0 },
  };
}
