/**
 * The survivors a share group reads from carried copies (docs/semantics.md, "Share groups and
 * carried partitions"). Once a pass has let its range go, the survivors below the store's new
 * log start are only in that pass's copies. A share group that read the partition before the
 * store let the range go read them where they were, and gets nothing from the copies; a group new
 * to the partition since (its start is the store's log start) has read none of them, and gets
 * them from the copies, at their original offsets, as Kafka would deliver them from offset 0.
 *
 * Which groups had read the partition, each release record says (carry-record.ts): the share
 * groups with a start offset for the partition when the store let the range go. A group the
 * first release of a pass names gets nothing from its copies; one a later release names first
 * gets the survivors below the end the release before it let go; one none names, those below the
 * last release's end. None at or past the store's log start, which the store still holds (a
 * release is recorded before the store is asked to let the range go), nor those an earlier
 * pass's copies, still in the store, give the group. A pass with no release yet is read by groups
 * that read its range where it was, and gets them nothing.
 *
 * The broker acquired the copy's own offset for the member. The member is told it acquired the
 * offsets of the records it gets from the copy instead (with the copy's delivery count), so that
 * it acknowledges those; copy-acks.ts turns them into the one acknowledgement of the copy. A copy
 * it gets nothing from stays acquired, a gap: the member acknowledges it as one, or the proxy
 * does where the answer holds nothing else for the member (share-gap-acks.ts). A copy this replica
 * cannot judge yet (its index has not read the pass or its releases) is withheld: left out of
 * the acquired ranges, so the member does not acknowledge it and the broker delivers it again
 * once the acquisition lock runs out, rather than the group losing what the copy owes it.
 */
import { Attributes, BATCH_HEADER_SIZE, batchPayload, iterateBatches, readBatchHeader, RecordScan, scanRecordAt } from '../../protocol/records/batch.js';
import { LOG_OVERHEAD, Offsets } from '../../protocol/records/batch-header.js';
import { batchesIn, carryValueAt, copyOf, emptyCopy } from '../../protocol/carry/carried-batch.js';
import { CarryKind, carryKindAt } from '../../protocol/carry/carry-record.js';
import type { PartitionIndexView, PassReleaseSeen } from '../../engine/api/index-view.js';
import { viewBatch, type Visibility } from '../../protocol/carry/batch-view.js';

export interface AcquiredRange {
  firstOffset: bigint;
  lastOffset: bigint;
  deliveryCount: number;
}

/** A copy whose records a member gets: the copy's offset and the original offsets it gets. */
export interface UnpackedCopy {
  copy: number;
  offsets: number[];
}

export interface SharedCopies {
  /** The original batches the member gets, ascending: they lie below the store's log start, before every batch the store sent. */
  batches: Buffer[];
  unpacked: UnpackedCopy[];
  /** Offsets of copies withheld from the member. */
  withheld: number[];
  /** The ranges the member acquired, with the unpacked copies' offsets replaced by their records', and the withheld ones left out. */
  acquired: AcquiredRange[];
  /** Copies of a pass the index knows no release of: the caller may wait for the index to read the store and ask again. */
  unknownPass: boolean;
}

/**
 * How far below which a group gets the survivors of a pass's copies, by the pass's releases:
 * undefined where it gets none (it read the range where it was, or nothing was let go yet).
 */
export function entitledEnd(releases: readonly PassReleaseSeen[], pass: number, group: string): number | undefined {
  let previous: number | undefined;
  let any = false;
  for (const r of releases) {
    if (r.pass !== pass) continue;
    if (r.groups.includes(group)) return previous;
    previous = r.releasedEnd;
    any = true;
  }
  return any ? previous : undefined;
}

/**
 * The original offsets [from, to) a group gets from a pass's copies: up to its entitled end, but
 * not past the store's log start (above it the store still holds the originals: a release is
 * recorded before the store lets the range go, and the store may not have, or not yet); and
 * from where an earlier pass's copies, still in the store, stop giving it survivors (their
 * copies come first in the log, and hold the same survivors below their own end).
 */
export function entitledRange(releases: readonly PassReleaseSeen[], pass: number, group: string, storeStart: number): { from: number; to: number } | undefined {
  const end = entitledEnd(releases, pass, group);
  if (end === undefined) return undefined;
  const to = Math.min(end, storeStart);
  let from = 0;
  for (const r of releases) {
    if (r.pass >= pass || r.pass < storeStart) continue;
    const earlier = entitledEnd(releases, r.pass, group);
    if (earlier !== undefined) from = Math.max(from, Math.min(earlier, storeStart));
  }
  return from < to ? { from, to } : undefined;
}

function acquiredAt(acquired: readonly AcquiredRange[], offset: number): AcquiredRange | undefined {
  const o = BigInt(offset);
  return acquired.find((a) => a.firstOffset <= o && o <= a.lastOffset);
}

/** The acquired ranges without the given offsets (ascending), the ranges around them split. */
function without(acquired: readonly AcquiredRange[], gone: readonly number[]): AcquiredRange[] {
  const out: AcquiredRange[] = [];
  const drop = new Set(gone.map(BigInt));
  for (const a of acquired) {
    let from = a.firstOffset;
    for (let o = a.firstOffset; o <= a.lastOffset; o++) {
      if (!drop.has(o)) continue;
      if (o > from) out.push({ firstOffset: from, lastOffset: o - 1n, deliveryCount: a.deliveryCount });
      from = o + 1n;
    }
    if (from <= a.lastOffset) out.push({ firstOffset: from, lastOffset: a.lastOffset, deliveryCount: a.deliveryCount });
  }
  return out;
}

/** Ascending offsets as ranges of consecutive ones. */
function rangesOf(offsets: readonly number[], deliveryCount: number): AcquiredRange[] {
  const out: AcquiredRange[] = [];
  for (let i = 0; i < offsets.length;) {
    let j = i;
    while (j + 1 < offsets.length && offsets[j + 1] === offsets[j]! + 1) j++;
    out.push({ firstOffset: BigInt(offsets[i]!), lastOffset: BigInt(offsets[j]!), deliveryCount });
    i = j + 1;
  }
  return out;
}

/** The offsets of the records of a batch, read from its payload. */
async function offsetsIn(bytes: Buffer): Promise<number[]> {
  const out: number[] = [];
  const scan = new RecordScan();
  for (const b of iterateBatches(bytes).batches) {
    const payload = await batchPayload(bytes, b);
    for (let pos = 0; pos < payload.length;) {
      pos = scanRecordAt(payload, pos, scan);
      out.push(Number(b.baseOffset) + scan.offsetDelta);
    }
  }
  return out;
}

/**
 * Where the carry batches holding copies start in the records (uncompressed, without a producer,
 * their first record a copy), from the batch headers' bytes: most answers hold none, and the
 * look costs a few reads per batch rather than a parsed header each.
 */
function copyBatchStarts(records: Buffer): number[] {
  const starts: number[] = [];
  for (let pos = 0; pos + BATCH_HEADER_SIZE <= records.length;) {
    const end = pos + LOG_OVERHEAD + records.readInt32BE(pos + Offsets.batchLength);
    if (end > records.length || end < pos + BATCH_HEADER_SIZE) break;
    const attributes = records.readInt16BE(pos + Offsets.attributes);
    const noProducer = records.readInt32BE(pos + Offsets.producerId) === -1 && records.readInt32BE(pos + Offsets.producerId + 4) === -1;
    const v2 = records[pos + Offsets.magic] === 2;
    if (v2 && noProducer && (attributes & (Attributes.compressionMask | Attributes.control)) === 0 && end > pos + BATCH_HEADER_SIZE) {
      if (carryKindAt(records.subarray(pos + BATCH_HEADER_SIZE, end), 0) === CarryKind.Copy) starts.push(pos);
    }
    pos = end;
  }
  return starts;
}

/**
 * The records `group` gets from the copies in a ShareFetch answer's records, and the acquired
 * ranges it is told of; undefined when the answer holds no copy that changes either. `settled`:
 * the partition's index has read what the store holds, so a pass it knows no release of has let
 * nothing go (else such a copy is withheld). `logStart`: the store's log start, asked once where
 * a copy owes the group anything (a copy is withheld when the store cannot say).
 */
export async function sharedCopies(
  records: Buffer,
  acquired: readonly AcquiredRange[],
  group: string,
  view: PartitionIndexView | undefined,
  settled: boolean,
  logStart: () => Promise<number>,
): Promise<SharedCopies | undefined> {
  const starts = copyBatchStarts(records);
  if (starts.length === 0) return undefined;
  const releases = view?.carried()?.releases;
  let storeStart: number | null | undefined;
  const out: SharedCopies = { batches: [], unpacked: [], withheld: [], acquired: [], unknownPass: false };
  const scan = new RecordScan();
  const copy = emptyCopy();
  for (const start of starts) {
    const batch = readBatchHeader(records, start);
    const payload = records.subarray(start + BATCH_HEADER_SIZE, batch.end);
    for (let pos = 0; pos < payload.length;) {
      const v = carryValueAt(payload, pos, scan);
      pos = v.next;
      if (v.kind !== CarryKind.Copy) continue;
      const at = Number(batch.baseOffset) + v.delta;
      const range = acquiredAt(acquired, at);
      if (!range) continue;
      const { mark, runStart, runEnd } = copyOf(payload, v, scan, copy);
      if (!view || !releases?.some((r) => r.pass === mark.pass)) {
        out.unknownPass = true;
        if (!view || !settled) out.withheld.push(at);
        continue;
      }
      if (entitledEnd(releases, mark.pass, group) === undefined) continue;
      // A release is recorded before the store is asked to let the range go: where its log start is now, the store says.
      storeStart ??= await logStart().catch(() => null);
      if (storeStart === null) {
        out.withheld.push(at);
        continue;
      }
      const owed = entitledRange(releases, mark.pass, group, storeStart);
      if (owed === undefined) continue;
      const got = await unpack(payload.subarray(runStart, runEnd), owed.from, owed.to, view);
      if (got.offsets.length === 0) continue;
      out.batches.push(...got.batches);
      out.unpacked.push({ copy: at, offsets: got.offsets });
      out.acquired.push(...rangesOf(got.offsets, range.deliveryCount));
    }
  }
  if (out.unpacked.length === 0 && out.withheld.length === 0) return out.unknownPass ? out : undefined;
  const rest = without(acquired, [...out.unpacked.map((u) => u.copy), ...out.withheld]);
  out.acquired = [...out.acquired, ...rest].sort((a, b) => (a.firstOffset < b.firstOffset ? -1 : 1));
  return out;
}

/** The batches of a copy's run with the survivors in [start, end) that the index still keeps, and their offsets. */
async function unpack(run: Buffer, start: number, end: number, view: PartitionIndexView): Promise<{ batches: Buffer[]; offsets: number[] }> {
  const within = (from: number, to: number) => view.survivors(Math.max(from, start), Math.min(to, end));
  const visibility: Visibility = { cleanedUpTo: Infinity, survivors: within };
  const batches: Buffer[] = [];
  const offsets: number[] = [];
  for (const original of batchesIn(run)) {
    const base = Number(original.baseOffset);
    const last = base + original.lastOffsetDelta;
    if (base >= end) break;
    if (last < start) continue;
    const outcome = await viewBatch(run, original, visibility, 0);
    if (outcome.kept === 0) continue;
    batches.push(outcome.bytes);
    const survivors = within(base, last + 1);
    // The index's survivors in the batch's span are its records, unless the index moved on since the copy was written.
    if (survivors.length === outcome.kept) for (const o of survivors) offsets.push(o);
    else offsets.push(...(await offsetsIn(outcome.bytes)));
  }
  return { batches, offsets };
}
