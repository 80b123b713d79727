/**
 * A store's log as a test writes it: client batches at the offsets the store gives them, and
 * carry passes as the carrier writes them (a start marker, copies of the survivors, an end marker).
 */
import { batchPayload, encodeBatch, iterateBatches, RecordScan, scanRecordAt, type BatchFields } from '../../../../src/protocol/records/batch.js';
import { CopyRun, markerBatch } from '../../../../src/protocol/carry/carried-batch.js';
import { CarryKind, carryKindAt, encodePassEnd, encodePassStart } from '../../../../src/protocol/carry/carry-record.js';
import { SourceGroup } from '../../../../src/engine/carry/source-group.js';

export const FIELDS: BatchFields = {
  baseOffset: 0n,
  partitionLeaderEpoch: 0,
  attributes: 0,
  lastOffsetDelta: 0,
  baseTimestamp: 1_700_000_000_000n,
  maxTimestamp: 1_700_000_000_000n,
  producerId: -1n,
  producerEpoch: -1,
  baseSequence: -1,
};

/** A store's log, as batches at the offsets the store gave them. */
export class Log {
  readonly batches: Buffer[] = [];
  end = 0;

  append(batch: Buffer): number {
    const [h] = iterateBatches(batch).batches;
    const base = this.end;
    batch.writeBigInt64BE(BigInt(base), 0);
    this.batches.push(batch);
    this.end = base + h!.lastOffsetDelta + 1;
    return base;
  }

  /** Ten records per batch, key `k{o % keys}`; a value of null every `tombstoneEvery`. */
  async writeRecords(n: number, keys: number): Promise<void> {
    for (let i = 0; i < n; i += 10) {
      const count = Math.min(10, n - i);
      const records = Array.from({ length: count }, (_, j) => ({
        timestampDelta: j,
        offsetDelta: j,
        key: Buffer.from(`k${(this.end + j) % keys}`),
        value: Buffer.from(`v${this.end + j}`),
      }));
      this.append(await encodeBatch({ ...FIELDS, lastOffsetDelta: count - 1, baseTimestamp: BigInt(1_700_000_000_000 + this.end) }, records, 0));
    }
  }

  from(offset: number): Buffer {
    return Buffer.concat(
      this.batches.filter((b) => {
        const [h] = iterateBatches(b).batches;
        return Number(h!.baseOffset) + h!.lastOffsetDelta >= offset;
      }),
    );
  }

  /** A carry pass as the carrier writes it: a start marker, copies of `survivors`, an end marker. */
  /** `written`: records clients write while the pass runs, between its copies and its end marker. */
  async carry(survivors: Set<number>, releaseEnd: number, written = 0): Promise<number> {
    const pass = this.append(await markerBatch(encodePassStart({ releaseEnd, topicStart: 0 }), 5));
    const run = new CopyRun();
    let count = 0;
    for (const batch of [...this.batches]) {
      const [h] = iterateBatches(batch).batches;
      if (h!.producerId !== -1n || Number(h!.baseOffset) >= releaseEnd) continue;
      const payload = await batchPayload(batch, h!);
      if (carryKindAt(payload, 0) !== CarryKind.None) continue;
      const group = new SourceGroup(releaseEnd);
      group.start({ batch: h!, records: batch, mark: null, runBase: 0 }, null);
      const scan = new RecordScan();
      for (let pos = 0; pos < payload.length;) {
        pos = scanRecordAt(payload, pos, scan);
        const o = Number(h!.baseOffset) + scan.offsetDelta;
        if (survivors.has(o)) group.add(o, null);
      }
      const copy = await group.copy();
      if (!copy) continue;
      run.add(copy, group.base);
      count += group.offsets.length;
    }
    this.append((await run.flush(pass, 6))!);
    if (written > 0) await this.writeRecords(written, 10);
    this.append(await markerBatch(encodePassEnd({ pass, copies: count, releaseEnd }), 7));
    return pass;
  }
}
