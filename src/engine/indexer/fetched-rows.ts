/**
 * Turns the records of one READ_COMMITTED Fetch answer for a partition into index rows.
 *
 * Aborted data is recognised the way Java's consumer does it: the answer lists the aborted
 * transactions overlapping it as (producer id, first offset); walking the batches in order, a
 * producer joins the aborted set once a batch reaches such a first offset, a transactional batch
 * of a producer in the set is aborted, and that producer's ABORT marker takes it out again.
 * Each transaction marker becomes a row of its own, with the first offset of the transaction it
 * ends (tracked per producer across fetches, because the cleaner keeps a marker while any of its
 * transaction's data remains).
 *
 * Every batch's CRC is checked here, once: a batch that fails stops the partition's index before
 * it (as a corrupt segment makes a partition uncleanable in Kafka), so everything the cleaner
 * covers has been checked, and the fetch view rebuilds batches without checking them again.
 */
import {
  BATCH_HEADER_SIZE,
  ControlRecordType,
  CorruptRecordError,
  batchPayload,
  iterateBatches,
  RecordScan,
  RecordWalk,
  scanRecordKeys,
  verifyCrc,
  type BatchHeader,
} from '../../protocol/records/batch.js';
import { batchesIn, carryValueAt, copyOf, emptyCopy, HorizonCursor } from '../../protocol/carry/carried-batch.js';
import { CarryFormatError, CarryKind, carryKindAt, readPassEnd, readPassStart, readRelease } from '../../protocol/carry/carry-record.js';
import { KEY_DIGEST_BYTES, keyDigestInto } from '../store/key-digest.js';
import { EXACT_BYTES, type KeyDigester } from '../key-identity/key-digesters.js';
import { RecordFlag } from '../store/record-flags.js';
import { Condition } from '../store/condition.js';
import { conditionOf } from './record-condition.js';
import type { RowBuffer } from '../store/row-buffer.js';

export interface AbortedTransaction {
  producerId: bigint;
  firstOffset: bigint;
}

export interface CollectResult {
  /** The offset after the last batch taken. */
  nextOffset: number;
  /** Whether a transaction began or ended (open transactions must be saved). */
  transactionsChanged: boolean;
}

/**
 * Appends the rows of the batches in `records` at or after `nextOffset` to `out`, stopping before
 * any batch that reaches `stableEnd` (the last stable offset; -1 when the upstream gave none).
 * `open` maps producer id → first offset of its open transaction and is updated in place.
 * `digester` makes the key digests (the topic's key identity); when it is left pending, its
 * complete() must run before the rows are stored.
 */
export async function collectRows(
  records: Buffer,
  aborted: readonly AbortedTransaction[],
  nextOffset: number,
  stableEnd: number,
  open: Map<number, number>,
  out: RowBuffer,
  digester: KeyDigester = EXACT_BYTES,
): Promise<CollectResult> {
  const pending = aborted.map((t) => ({ producerId: Number(t.producerId), firstOffset: Number(t.firstOffset) })).sort((a, b) => a.firstOffset - b.firstOffset);
  let nextAborted = 0;
  const abortedProducers = new Set<number>();
  let transactionsChanged = false;
  let next = nextOffset;

  for (const batch of iterateBatches(records).batches) {
    const base = Number(batch.baseOffset);
    const last = base + batch.lastOffsetDelta;
    if (last < next) continue;
    if (stableEnd >= 0 && last >= stableEnd) break;
    if (!verifyCrc(records, batch)) throw new CorruptRecordError(`record batch at offset ${base} fails its CRC check`);
    const first = Math.max(base, next);
    const producerId = Number(batch.producerId);
    while (nextAborted < pending.length && pending[nextAborted]!.firstOffset <= last) {
      abortedProducers.add(pending[nextAborted++]!.producerId);
    }
    const payload = batch.isControl || batch.recordCount === 0 ? null : await payloadOf(records, batch);
    if (payload && producerId < 0 && carryKindAt(payload, 0) !== CarryKind.None) {
      // kcompact's own: its bytes are the survivors' (counted by their rows), not dirty log.
      out.pushBatch(first, last, 0, Number(batch.maxTimestamp));
      await addCarried(batch, first, payload, out, digester);
      next = last + 1;
      continue;
    }
    out.pushBatch(first, last, batch.end - batch.start, Number(batch.maxTimestamp));
    if (batch.isControl) {
      if (await addMarker(records, batch, first, producerId, open, out)) {
        abortedProducers.delete(producerId);
        transactionsChanged = true;
      }
    } else if (payload) {
      let flags = 0;
      if (batch.isTransactional) {
        flags |= RecordFlag.Transactional;
        if (abortedProducers.has(producerId)) flags |= RecordFlag.Aborted;
        if (!open.has(producerId)) {
          open.set(producerId, first);
          transactionsChanged = true;
        }
      }
      addData(payload, batch, first, flags, batch.isTransactional ? producerId : -1, out, digester);
    }
    next = last + 1;
  }
  return { nextOffset: next, transactionsChanged };
}

async function payloadOf(records: Buffer, batch: BatchHeader): Promise<Buffer> {
  // Uncompressed batches (most of them) stay synchronous: no promise per batch.
  return batch.compression === 0 && batch.recordCount > 0 ? records.subarray(batch.start + BATCH_HEADER_SIZE, batch.end) : batchPayload(records, batch);
}

/**
 * Adds a batch's data records. A record's size is its share of the batch's bytes in the log,
 * in proportion to its encoded length, so that the sizes of a batch's records add up to the
 * batch (compressed or not) and a partly reaped batch counts the bytes it would still take.
 */
function addData(payload: Buffer, batch: BatchHeader, first: number, flags: number, producerId: number, out: RowBuffer, digester: KeyDigester): void {
  const walk = new RecordWalk(payload, batch);
  const base = Number(batch.baseOffset);
  const bytes = batch.end - batch.start;
  const scale = payload.length > 0 ? bytes / payload.length : 0;
  let given = 0;
  while (walk.next(SCAN)) {
    const r = SCAN;
    const share = Math.round(r.end * scale) - given;
    given += share;
    const offset = base + r.offsetDelta;
    if (offset < first) continue;
    const hasKey = r.keyLength >= 0;
    const i = out.push(offset, walk.timestampOf(r), share, hasKey && r.valueLength < 0 ? flags | RecordFlag.Tombstone : flags);
    if (hasKey) {
      digestKey(digester, payload, r, out, i);
      if (r.headerCount > 0) {
        const condition = conditionOf(payload, r.headersStart, r.headerCount);
        if (condition !== Condition.None) out.setCondition(i, condition);
      }
    }
    out.producerIds[i] = producerId;
  }
}

/** The scan every walk of this module reads its records into: no loop reading into it awaits, so no other ingest runs meanwhile. */
const SCAN = new RecordScan();

/** The digest of the record in `r`'s key into row i; exact bytes straight from the payload, without a view of the key. */
function digestKey(digester: KeyDigester, payload: Buffer, r: RecordScan, out: RowBuffer, i: number): void {
  const at = i * KEY_DIGEST_BYTES;
  if (digester === EXACT_BYTES) keyDigestInto(payload, r.keyStart, r.keyStart + r.keyLength, out.keys, at);
  else digester.digestInto(payload.subarray(r.keyStart, r.keyStart + r.keyLength), out.keys, at);
  out.hasKey[i] = 1;
}

/**
 * Adds a carry batch (docs/carrying.md): each record of the batches a copy holds becomes the row
 * of its original, at the original's offset and timestamp, with where the copy is; pass markers
 * become events. A copy's share of the carry batch's bytes is spread over its batches by their
 * size, and a batch's over its records by their encoded length.
 */
async function addCarried(batch: BatchHeader, first: number, payload: Buffer, out: RowBuffer, digester: KeyDigester): Promise<void> {
  const base = Number(batch.baseOffset);
  const bytes = batch.end - batch.start;
  const scale = payload.length > 0 ? bytes / payload.length : 0;
  const scan = new RecordScan();
  const copy = emptyCopy();
  const time = Number(batch.maxTimestamp);
  let given = 0;
  for (let pos = 0; pos < payload.length;) {
    const v = carryValueAt(payload, pos, scan);
    const at = base + v.delta;
    const share = Math.round(v.next * scale) - given;
    given += share;
    pos = v.next;
    if (at < first) continue;
    if (v.kind === CarryKind.PassStart) {
      out.events.push({ kind: 'start', at, time, ...readPassStart(payload, v.valueStart, v.valueEnd) });
    } else if (v.kind === CarryKind.PassEnd) {
      out.events.push({ kind: 'end', at, time, ...readPassEnd(payload, v.valueStart, v.valueEnd) });
    } else if (v.kind === CarryKind.Release) {
      out.events.push({ kind: 'release', at, ...readRelease(payload, v.valueStart, v.valueEnd) });
    } else {
      const { mark, runStart, runEnd } = copyOf(payload, v, scan, copy);
      const run = payload.subarray(runStart, runEnd);
      const batches = batchesIn(run);
      const runBase = Number(batches[0]!.baseOffset);
      const horizons = new HorizonCursor(mark.horizons);
      const perByte = share / run.length;
      let spread = 0;
      for (const original of batches) {
        const records = await payloadOf(run, original);
        const originalBase = Number(original.baseOffset);
        // The batch's share of the copy, spread over its records by their encoded length.
        const batchShare = Math.round(original.end * perByte) - spread;
        spread += batchShare;
        const perRecordByte = records.length > 0 ? batchShare / records.length : 0;
        let recordsGiven = 0;
        const walk = new RecordWalk(records, original);
        while (walk.next(SCAN)) {
          const r = SCAN;
          if (r.keyLength < 0) throw new CarryFormatError(`a carried copy at offset ${at} holds a record without a key`);
          const size = Math.round(r.end * perRecordByte) - recordsGiven;
          recordsGiven += size;
          const offset = originalBase + r.offsetDelta;
          const tombstone = r.valueLength < 0;
          const i = out.pushCopy(offset, at, walk.timestampOf(r), size, tombstone ? RecordFlag.Tombstone : 0, tombstone ? horizons.at(offset - runBase) : -1);
          digestKey(digester, records, r, out, i);
        }
      }
    }
  }
}

/**
 * Adds a transaction marker; returns whether it ended a transaction. Like Java's
 * ControlRecordType.parse, only the key (version, type) is read: kfake writes markers without a
 * value. Control records of other types (KRaft's own, never in a client topic) are not indexed.
 */
async function addMarker(records: Buffer, batch: BatchHeader, first: number, producerId: number, open: Map<number, number>, out: RowBuffer): Promise<boolean> {
  const base = Number(batch.baseOffset);
  for (const r of scanRecordKeys(await payloadOf(records, batch), batch)) {
    const offset = base + r.offsetDelta;
    if (offset < first) continue;
    const type = controlType(r.key);
    if (type !== ControlRecordType.Abort && type !== ControlRecordType.Commit) continue;
    let flags = RecordFlag.Control | RecordFlag.Transactional;
    if (type === ControlRecordType.Commit) flags |= RecordFlag.Commit;
    const i = out.push(offset, Number(batch.maxTimestamp), batch.end - batch.start, flags);
    out.producerIds[i] = producerId;
    out.txnFirsts[i] = open.get(producerId) ?? offset;
    open.delete(producerId);
    return true;
  }
  return false;
}

function controlType(key: Buffer | null): number {
  if (key === null || key.length < 4 || key.readInt16BE(0) < 0) {
    throw new CorruptRecordError(`control record key must hold a version and a type, got ${key?.length ?? 'null'} bytes`);
  }
  return key.readInt16BE(2);
}
