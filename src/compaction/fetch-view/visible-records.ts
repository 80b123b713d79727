/**
 * The compacted view of one partition's fetched records: only the records the cleaner kept below
 * its horizon, everything from the horizon on, with offsets untouched (DESIGN.md, "Rewriting a
 * fetched batch"). A batch whose records all stay is copied byte for byte; one that loses some is
 * rebuilt by rebuildBatch (same header fields, recompressed, fresh count, length and CRC).
 *
 * A batch that loses every record is dropped, except when it is the last complete batch: that
 * one goes out as Kafka's 61-byte empty batch, because Java, librdkafka and franz-go move their
 * position to its last offset + 1 and so never re-read what was removed. The broker's cut-off
 * tail (a partial batch at the byte limit) follows unchanged, as Kafka sends it.
 *
 * Given a byte budget, the view keeps whole batches up to it (the first one anyway when asked,
 * as Kafka answers the first batch of a response): the proxy reads more of the raw log than the
 * client's limits take when it expects most of it removed, and a rebuilt compressed batch can
 * come out larger than its original.
 */
import { CorruptRecordError, iterateBatches, type BatchHeader } from '../../protocol/records/batch.js';
import { hasConditionHeader } from '../../protocol/carry/condition-headers.js';
import { lastOffset, viewBatch, type BatchOutcome, type Visibility } from '../../protocol/carry/batch-view.js';
import type { PartitionIndexView } from '../../engine/api/index-view.js';

/** What a partition's index says is visible, as of now. */
export function visibilityOf(view: PartitionIndexView): Visibility {
  const visibility: Visibility = { cleanedUpTo: view.cleanedUpTo(), survivors: (from, to) => view.survivors(from, to) };
  const end = view.end();
  const judged = end?.judged;
  if (judged) {
    visibility.judgedTo = judged.to;
    if (judged.voids.length > 0) visibility.voids = judged.voids;
  } else visibility.indexedTo = end?.indexedTo ?? 0;
  return visibility;
}

/** A transaction marker batch seen in the upstream data, and whether the client still sees it. */
export interface MarkerSeen {
  producerId: bigint;
  offset: number;
  visible: boolean;
}

/** One upstream batch below the horizon and what the view made of it. */
export interface ViewedBatch {
  base: number;
  last: number;
  /** The upstream batch's size, for sizing reads on (read-size.ts). */
  rawBytes: number;
  recordCount: number;
  /** The batch as the client gets it: the upstream's bytes, rebuilt, or emptied. */
  bytes: Buffer;
  /** Records kept: all of them are at or after any fetch offset the entry is served for. */
  kept: number;
  /** Whether `bytes` are the view's own (rebuilt or emptied) rather than the upstream batch. */
  rebuilt: boolean;
  /** Set for a transaction marker: the producer whose transaction it ends. */
  markerOf: bigint | null;
  /**
   * Upstream batches it stands for: 1, or more for neighbours that all lost every record, held
   * as one entry (record() joins them) with the last one's emptied bytes.
   */
  batches: number;
}

export interface VisibleRecords {
  /** Complete batches holding records, in log order. */
  batches: Buffer[];
  /** The last complete upstream batch, emptied, when it lost every record. */
  trailingEmpty: Buffer | null;
  truncatedTail: Buffer;
  /** Records at or after the client's fetch offset that the client receives. */
  progress: number;
  removedRecords: number;
  rebuiltBatches: number;
  /** The last offset of the last complete upstream batch; -1 when there was none. */
  end: number;
  /** The offset after the last batch holding records the client gets; 0 when none does. */
  visibleEnd: number;
  markers: MarkerSeen[];
  /** Why the rest of the data went out unfiltered, when a batch could not be read. */
  corrupt: string | null;
  /** Whether the client gets anything but the upstream's bytes. */
  changed: boolean;
  /** Whether a batch was left out for the byte budget, with everything after it. */
  full: boolean;
  /** Whether a batch reaching past what the index judged was left out, with everything after it (Visibility.judgedTo). */
  withheld: boolean;
  walked: BatchesWalked;
  /** Reads whose memory the batches are views of, to give back once the answer has been put together. */
  held?: Releasable[];
}

export interface Releasable {
  release(): void;
}

/** Gives the reads back (once nothing refers to their batches any more). */
export function releaseHeld(reads: Releasable[] | undefined): void {
  if (!reads) return;
  for (const r of reads) r.release();
  reads.length = 0;
}

/** The complete upstream batches walked: their bytes, the offsets they span, how many. */
export interface BatchesWalked {
  bytes: number;
  offsets: number;
  batches: number;
}

export interface Budget {
  maxBytes: number;
  /** Whether the first batch comes even when larger than maxBytes (Kafka's first in a response). */
  oneAnyway: boolean;
}

const UNLIMITED: Budget = { maxBytes: Infinity, oneAnyway: true };

/** Whether a batch of `size` bytes is left out of an answer already holding `taken` bytes. */
export function leftOut(budget: Budget, taken: number, size: number): boolean {
  return taken + size > budget.maxBytes && !(budget.oneAnyway && taken === 0);
}

const NO_BYTES = Buffer.alloc(0);

function emptyResult(): VisibleRecords {
  return {
    batches: [],
    trailingEmpty: null,
    truncatedTail: NO_BYTES,
    progress: 0,
    removedRecords: 0,
    rebuiltBatches: 0,
    end: -1,
    visibleEnd: 0,
    markers: [],
    corrupt: null,
    changed: false,
    full: false,
    withheld: false,
    walked: { bytes: 0, offsets: 0, batches: 0 },
  };
}

/**
 * Puts viewed batches into a result in log order, within the byte budget: the one place that
 * decides what of a read goes out, whether the batches were just read or come from the cache.
 */
class Assembly {
  private bytes = 0;

  constructor(
    readonly out: VisibleRecords,
    private readonly budget: Budget,
  ) {}

  /** Takes the next batch (`last`: the last one read); false when the budget is spent. */
  take(batch: ViewedBatch, progress: number, unchanged: boolean, last: boolean): boolean {
    const { out } = this;
    const goes = batch.kept > 0 || last;
    if (goes && leftOut(this.budget, this.bytes, batch.bytes.length)) {
      out.full = true;
      out.changed = true;
      return false;
    }
    if (goes) this.bytes += batch.bytes.length;
    out.walked.bytes += batch.rawBytes;
    out.walked.offsets += batch.last - batch.base + 1;
    out.walked.batches += batch.batches;
    out.end = batch.last;
    out.removedRecords += batch.recordCount - batch.kept;
    out.progress += progress;
    if (batch.rebuilt) out.rebuiltBatches += batch.batches;
    if (batch.markerOf !== null) out.markers.push({ producerId: batch.markerOf, offset: batch.base, visible: batch.kept > 0 });
    if (batch.kept > 0) {
      out.batches.push(batch.bytes);
      out.visibleEnd = batch.last + 1;
    } else if (last) out.trailingEmpty = batch.bytes;
    if (!unchanged || (batch.kept === 0 && !last)) out.changed = true;
    return true;
  }

  /** A cut-off tail is only bytes a client throws away: past the budget it is left out. */
  tail(truncatedTail: Buffer): void {
    if (this.bytes + truncatedTail.length <= this.budget.maxBytes) this.out.truncatedTail = truncatedTail;
    else this.out.changed = true;
  }
}

/**
 * The view of upstream records. `keep` gets each batch below the horizon that goes in whole,
 * starting at or after `from`, for the view cache; an upstream batch kept as it was is handed
 * over as a view of `records`, which the caller copies if it outlives them.
 */
export async function visibleRecords(
  records: Buffer | null,
  visibility: Visibility,
  from: number,
  budget: Budget = UNLIMITED,
  keep?: (batch: ViewedBatch) => void,
): Promise<VisibleRecords> {
  const out = emptyResult();
  if (!records || records.length === 0) return out;
  let walk: ReturnType<typeof iterateBatches>;
  try {
    walk = iterateBatches(records);
  } catch (err) {
    return passUnfiltered(out, records, err);
  }
  const { batches } = walk;
  const assembly = new Assembly(out, budget);
  for (let i = 0; i < batches.length; i++) {
    const batch = batches[i]!;
    let outcome: BatchOutcome;
    try {
      if (await unjudged(records, batch, visibility)) {
        out.withheld = true;
        out.changed = true;
        return out;
      }
      outcome = await viewBatch(records, batch, visibility, from);
    } catch (err) {
      return passUnfiltered(out, records.subarray(batch.start), err);
    }
    const viewed: ViewedBatch = {
      base: Number(batch.baseOffset),
      last: lastOffset(batch),
      rawBytes: batch.bytes.length,
      recordCount: batch.recordCount,
      bytes: outcome.bytes,
      kept: outcome.kept,
      rebuilt: outcome.rebuilt,
      markerOf: batch.isControl ? batch.producerId : null,
      batches: 1,
    };
    if (!assembly.take(viewed, outcome.progress, outcome.bytes === batch.bytes, i === batches.length - 1)) return out;
    if (keep && viewed.base >= from && viewed.last < visibility.cleanedUpTo) keep(viewed);
  }
  assembly.tail(walk.truncatedTail);
  return out;
}

/**
 * Whether the batch reaches past what the partition's index judged (docs/tables.md): past the
 * judged end of a partition with conditional records, or, in one that has none yet, past the
 * index's end with a conditional record in it (a first one, which every replica must judge
 * before any shows it).
 */
async function unjudged(records: Buffer, batch: BatchHeader, visibility: Visibility): Promise<boolean> {
  const last = lastOffset(batch);
  if (visibility.judgedTo !== undefined) return last >= visibility.judgedTo;
  return visibility.indexedTo !== undefined && last >= visibility.indexedTo && (await hasConditionHeader(records, batch));
}

/**
 * The view of batches from the view cache, as visibleRecords would give it for an upstream read
 * that returned them; every record they keep is at or after the client's fetch offset.
 */
export function cachedRecords(batches: readonly ViewedBatch[], budget: Budget): VisibleRecords {
  const out = emptyResult();
  const assembly = new Assembly(out, budget);
  for (let i = 0; i < batches.length; i++) {
    if (!assembly.take(batches[i]!, batches[i]!.kept, false, i === batches.length - 1)) break;
  }
  return out;
}

/**
 * A batch that cannot be read goes to the client as the upstream sent it, with everything after
 * it: the client's own checks then report it, as they would reading Kafka.
 */
function passUnfiltered(out: VisibleRecords, rest: Buffer, err: unknown): VisibleRecords {
  if (!(err instanceof CorruptRecordError)) throw err;
  out.batches.push(rest);
  out.trailingEmpty = null;
  out.truncatedTail = NO_BYTES;
  out.progress++;
  out.corrupt = err.message;
  return out;
}
