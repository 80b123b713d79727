/**
 * What a partition of the store holds from an offset on, read over the bare protocol from the
 * store itself (not through kcompact): its records, counting every original a carried copy holds
 * (docs/carrying.md), and its bytes. A replica with an empty data directory reads exactly this to
 * build its index.
 */
import { batchesIn, carryValueAt, copyOf, emptyCopy } from '../src/protocol/carry/carried-batch.js';
import { CarryKind, carryKindAt } from '../src/protocol/carry/carry-record.js';
import { ApiKey } from '../src/protocol/messages.js';
import { batchPayload, iterateBatches, RecordScan } from '../src/protocol/records/batch.js';
import { RawConnection } from '../test/support/raw-client.js';
import { fetchBody } from '../test/support/raw-reader.js';

const FETCH_VERSION = 12;

export interface StoreRecords {
  /** Records the store holds, a copy counting as the originals it holds. */
  records: number;
  /** Of which held by carried copies. */
  carried: number;
  bytes: number;
}

export async function storeRecords(address: string, topic: string, from: number, to: number): Promise<StoreRecords> {
  const conn = await RawConnection.open(address);
  const out: StoreRecords = { records: 0, carried: 0, bytes: 0 };
  const scan = new RecordScan();
  const copy = emptyCopy();
  try {
    for (let position = from, id = 1; position < to; id++) {
      conn.request(ApiKey.Fetch, FETCH_VERSION, fetchBody(topic, 0, position, 0, 0), id);
      const { body } = await conn.response(ApiKey.Fetch, FETCH_VERSION, 30_000);
      const p = body.responses[0].partitions[0];
      if (p.errorCode !== 0) throw new Error(`Fetch of ${topic}-0 at ${position} from the store answered error ${p.errorCode}`);
      const records: Buffer = p.records ?? Buffer.alloc(0);
      const { batches } = iterateBatches(records);
      if (batches.length === 0) throw new Error(`no batch of ${topic}-0 at ${position}, below ${to}`);
      for (const b of batches) {
        const last = Number(b.baseOffset) + b.lastOffsetDelta;
        if (last < position) continue;
        position = last + 1;
        out.bytes += b.end - b.start;
        const payload = b.producerId < 0n && !b.isControl && b.recordCount > 0 ? await batchPayload(records, b) : null;
        if (!payload || carryKindAt(payload, 0) !== CarryKind.Copy) {
          out.records += b.recordCount;
          continue;
        }
        for (let pos = 0; pos < payload.length;) {
          const v = carryValueAt(payload, pos, scan);
          pos = v.next;
          const { runStart, runEnd } = copyOf(payload, v, scan, copy);
          for (const original of batchesIn(payload.subarray(runStart, runEnd))) {
            out.records += original.recordCount;
            out.carried += original.recordCount;
          }
        }
      }
    }
  } finally {
    conn.close();
  }
  return out;
}
