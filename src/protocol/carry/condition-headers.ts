/**
 * The headers that make a record conditional (docs/tables.md, "Compare-and-set"): the table API
 * writes them and so may any Kafka producer. The index judges such records; the fetch view must
 * not show one before its replica's index has, so it looks for them in what the index has not
 * read yet.
 */
import { batchPayload, RecordScan, scanRecordAt, type BatchHeader } from '../records/batch.js';
import { eachHeader } from '../records/record-decode.js';

/** Written only if the key's latest record is at the offset it holds (decimal). */
export const IF_MATCH_HEADER = 'kcompact.if-match';
/** Written only if the key has no live value; its value is `*`. */
export const IF_NONE_MATCH_HEADER = 'kcompact.if-none-match';

/** What both header keys begin with: a header without it is no condition. */
const PREFIX = Buffer.from('kcompact.if-', 'latin1');

function startsWithPrefix(payload: Buffer, start: number, end: number): boolean {
  if (end - start < PREFIX.length) return false;
  for (let i = 0; i < PREFIX.length; i++) if (payload[start + i] !== PREFIX[i]) return false;
  return true;
}

/** Whether any record of the (data) batch has a condition header. */
export async function hasConditionHeader(records: Buffer, batch: BatchHeader): Promise<boolean> {
  if (batch.isControl || batch.recordCount === 0) return false;
  const payload = await batchPayload(records, batch);
  const scan = new RecordScan();
  let found = false;
  for (let pos = 0; pos < payload.length && !found;) {
    pos = scanRecordAt(payload, pos, scan);
    if (scan.headerCount === 0) continue;
    eachHeader(payload, scan.headersStart, scan.headerCount, (keyStart, keyEnd) => {
      if (startsWithPrefix(payload, keyStart, keyEnd)) found = true;
    });
  }
  return found;
}
