/**
 * A carried partition below the last whole pass's release end (docs/carrying.md): its records
 * are no longer at their offsets in the store once the store let the range go, only in the copies
 * that pass wrote, so the fetch view reads those and serves the originals rebuilt at their
 * offsets. It does so from the moment its index has read the pass whole, before the range is let
 * go as after: no read below the release end reaches the store while DeleteRecords is under way. The copies are in offset order
 * of their originals; the snapshot's marks say where to start for an offset. A copy is served
 * when its original survives in this replica's index, so that what a replica serves from the
 * copies follows its index as it does above them.
 *
 * A budget only stops the answer between two original batches: a client moves on past a batch's
 * last offset, so a batch cut short would skip the survivors left out of it.
 */
import { batchPayload, iterateBatches, RecordScan } from '../../protocol/records/batch.js';
import { emptyCopy, readCopyAt, RestoredBatches } from '../carry/carried-batch.js';
import { CarryKind, carryKindAt } from '../carry/carry-record.js';
import type { PartitionIndexView } from '../index-view.js';
import { copiesReadFrom, type CarriedSnapshot } from '../index/survivor-set.js';
import type { UpstreamReads } from './upstream-reads.js';
import { leftOut, type Budget, type VisibleRecords } from './visible-records.js';

const READ_BYTES = 4 * 1024 * 1024;
const READ_UNCOMMITTED = 0;

export interface CopiesTarget {
  topic: string;
  partition: number;
  view: PartitionIndexView;
  carried: CarriedSnapshot;
}

/** The records from `from` up to the snapshot's copiesBelow, as far as the budget takes them. */
export async function carriedRecords(upstream: UpstreamReads, target: CopiesTarget, from: number, budget: Budget): Promise<VisibleRecords> {
  const { view, carried } = target;
  const start = carried.copiesBelow;
  const restored = new RestoredBatches();
  const copy = emptyCopy();
  const scan = new RecordScan();
  let pos = copiesReadFrom(carried, from);
  let served = -1;
  let servedThrough = -1;
  let full = false;
  let reachedStart = false;
  let bytesRead = 0;
  let count = 0;
  walk: while (pos <= carried.copiesTo) {
    const read = await upstream.readPartition({
      topic: target.topic,
      partition: target.partition,
      fetchOffset: pos,
      currentLeaderEpoch: -1,
      maxBytes: READ_BYTES,
      isolationLevel: READ_UNCOMMITTED,
    });
    try {
      // The pass's copies went (a newer pass this replica has not read yet): what was found stands.
      if (read.errorCode !== 0 || !read.records) break;
      const { batches } = iterateBatches(read.records);
      if (batches.length === 0) break;
      bytesRead += read.records.length;
      for (const b of batches) {
        pos = Number(b.baseOffset) + b.lastOffsetDelta + 1;
        if (b.producerId >= 0n || b.isControl || b.recordCount === 0) continue;
        const payload = await batchPayload(read.records, b);
        if (carryKindAt(payload, 0) !== CarryKind.Copy) continue;
        for (let p = 0; p < payload.length; p = copy.next) {
          readCopyAt(payload, p, copy, scan);
          const o = copy.origin.offset;
          if (o >= start) {
            reachedStart = true;
            break walk;
          }
          if (o < from || o <= served || view.nextVisible(o) !== o) continue;
          if (!restored.continues(copy.origin) && leftOut(budget, restored.size + restored.pendingBytes, 1) && served >= 0) {
            full = true;
            break walk;
          }
          await restored.add(copy);
          count++;
          served = o;
          servedThrough = Math.max(servedThrough, copy.origin.batchLast);
        }
      }
    } finally {
      read.release();
    }
  }
  if (pos > carried.copiesTo) reachedStart = true;
  const batches = await restored.finish();
  const out: VisibleRecords = {
    batches,
    trailingEmpty: null,
    truncatedTail: Buffer.alloc(0),
    progress: count,
    removedRecords: 0,
    rebuiltBatches: batches.length,
    end: reachedStart && !full ? Math.max(start - 1, servedThrough) : servedThrough,
    markers: [],
    corrupt: null,
    changed: true,
    full,
    walked: { bytes: bytesRead, offsets: 0, batches: 0 },
  };
  return out;
}
