/**
 * The write routes: PUT writes a key's value, DELETE its tombstone, each one record with acks=all.
 * A conditional write carries its condition in a header of the record itself and is then judged
 * by the index from the log's order, as every replica judges it (docs/tables.md,
 * "Compare-and-set"): the answer waits for that verdict.
 */
import { IF_MATCH_HEADER, IF_NONE_MATCH_HEADER, type Behind, type VerdictAnswer } from '../engine/api/table-reads.js';
import type { RecordHeader } from '../protocol/records/record-decode.js';
import { ApiError, unavailable } from './api-error.js';
import { keyPartition } from './key-partition.js';
import { decodeBase64 } from './record-json.js';
import { etagOf, type TableAnswer } from './table-answer.js';
import { readsOf, type TableDeps } from './table-deps.js';
import type { Condition, WriteKey } from './table-request.js';

/** How long a losing write's answer waits for the key's current offset: a courtesy, not the verdict. */
const CURRENT_OFFSET_WAIT_MS = 1_000;

function conditionHeaders(condition: Condition): RecordHeader[] {
  if (condition === null) return [];
  if ('ifMatch' in condition) return [{ key: Buffer.from(IF_MATCH_HEADER), value: Buffer.from(String(condition.ifMatch)) }];
  return [{ key: Buffer.from(IF_NONE_MATCH_HEADER), value: Buffer.from('*') }];
}

/** The value a PUT carries: its body as is, or decoded from base64 text. */
function valueOf(req: WriteKey, body: Buffer): Buffer | null {
  if (req.route === 'delete_key') return null;
  return req.encoding === 'base64' ? decodeBase64(body.toString('latin1'), 'body') : body;
}

export async function writeKey(deps: TableDeps, req: WriteKey, body: Buffer): Promise<TableAnswer> {
  const reads = readsOf(deps);
  const value = valueOf(req, body);
  const key = { bytes: req.key };
  const partition = await keyPartition(deps.partitions, req.topic, key, req.partition);
  // Refuses a topic the index does not serve (409) before anything is written to it.
  if (!deps.compacted?.(req.topic)) await reads.changes(req.topic, partition, 0, null, 0, 0);
  const written = req.condition && { key: req.key, condition: req.condition };
  // The replica starts foreseeing the verdict while the record is on its way.
  const done = written && reads.expect(req.topic, partition, written);
  try {
    const offset = await deps.writer.append(
      req.topic,
      partition,
      { key: req.key, value, headers: conditionHeaders(req.condition), timestamp: (deps.now ?? Date.now)() },
      { conditional: written !== null },
    );
    if (!written) return { status: 200, body: { partition, offset }, headers: { etag: etagOf(offset) } };
    return await answerVerdict(deps, req, partition, offset, await reads.verdict(req.topic, partition, offset, req.timeoutMs, written));
  } finally {
    done?.();
  }
}

async function answerVerdict(deps: TableDeps, req: WriteKey, partition: number, offset: number, judged: VerdictAnswer | Behind): Promise<TableAnswer> {
  const written = { partition, offset };
  if (judged.behind) {
    throw unavailable(
      `written to ${req.topic}-${partition} at offset ${offset}, but the index has not judged its condition within ${req.timeoutMs} ms (it has read up to offset ${judged.indexedTo})`,
      `read the key with ?min_offset=${offset}: if its offset is ${offset}, the write won; otherwise it lost`,
      { ...written, indexedTo: judged.indexedTo },
    );
  }
  if (judged.verdict === 'won') return { status: 200, body: written, headers: { etag: etagOf(offset) } };
  if (judged.verdict === 'unconditional') {
    throw new ApiError(
      500,
      `the index took the conditional record at ${req.topic}-${partition} offset ${offset} for an unconditional one`,
      "this is a fault of kcompact's; the proxy's log has the details",
      written,
    );
  }
  deps.metrics?.conflict();
  const current = await currentOffset(deps, req, partition, offset);
  throw new ApiError(412, 'precondition failed', 'read the key again and retry with its current offset', {
    ...written,
    ...(current !== undefined && { current }),
  });
}

/** The key's offset as the index holds it after the losing record (null: no value); undefined when not known at once. */
async function currentOffset(deps: TableDeps, req: WriteKey, partition: number, after: number): Promise<number | null | undefined> {
  try {
    const answer = await readsOf(deps).latest(req.topic, partition, { bytes: req.key }, after + 1, CURRENT_OFFSET_WAIT_MS);
    return answer.behind ? undefined : (answer.record?.offset ?? null);
  } catch (err) {
    deps.log.debug('no current offset for a losing write', { topic: req.topic, partition, err });
    return undefined;
  }
}
