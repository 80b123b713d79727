/**
 * Whether the store's log ends with kcompact's own records: the question the latest offset asks
 * before it waits for an index behind the store. Almost always the last batch is a client's
 * (the index is only a long-poll behind a produce), and then the store's end is the topic's, as
 * in Kafka, whose last offset always holds a record clients see; only after a pass wrote last
 * does the answer need the index.
 */
import { ErrorCode } from '../../protocol/errors.js';
import { iterateBatches } from '../../protocol/records/batch.js';
import type { UpstreamReads } from '../fetch-view/upstream-reads.js';
import { isCarried } from '../../protocol/carry/batch-view.js';

/** Bytes asked for: a store answers with the whole batch holding the offset even when larger (KIP-74). */
const PROBE_BYTES = 64 * 1024;

/**
 * Whether the batch holding `end - 1` in the store is kcompact's own (carried copies, a pass
 * marker, a release record); undefined when the store's answer does not show that batch whole.
 */
export async function endsWithOwnRecords(reads: UpstreamReads, topic: string, partition: number, end: number): Promise<boolean | undefined> {
  if (end <= 0) return undefined;
  const read = await reads.readPartition({ topic, partition, fetchOffset: end - 1, currentLeaderEpoch: -1, maxBytes: PROBE_BYTES, isolationLevel: 0 });
  try {
    if (read.errorCode !== ErrorCode.NONE || !read.records) return undefined;
    const last = end - 1;
    const holding = iterateBatches(read.records).batches.find((b) => Number(b.baseOffset) <= last && Number(b.baseOffset) + b.lastOffsetDelta >= last);
    return holding ? await isCarried(read.records, holding) : undefined;
  } finally {
    read.release();
  }
}
