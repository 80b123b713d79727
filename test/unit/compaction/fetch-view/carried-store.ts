/**
 * A store holding one carry pass, for the tests of answers from the copies: the originals and
 * the pass's copies of them (carried-records.test.ts, copies-ahead.test.ts).
 */
import { CopyRun, markerBatch } from '../../../../src/protocol/carry/carried-batch.js';
import { encodePassEnd, encodePassStart } from '../../../../src/protocol/carry/carry-record.js';
import type { PartitionRead, UpstreamRead, UpstreamReads } from '../../../../src/compaction/fetch-view/upstream-reads.js';
import { encodeBatch } from '../../../../src/protocol/records/batch.js';
import { FakeIndex, recordsFor } from './fake-log.js';

/**
 * The originals: 40 batches of 5 records at offsets 0-199 (every other one lz4), carried by one
 * pass as three copies of runs of batches; the store's log starts at the pass (offset 200).
 */
export const BATCHES = 40;
export const PER_BATCH = 5;
export const RELEASE = BATCHES * PER_BATCH;

export async function original(i: number): Promise<Buffer> {
  const base = i * PER_BATCH;
  const fields = {
    baseOffset: BigInt(base),
    partitionLeaderEpoch: 3,
    attributes: 0,
    lastOffsetDelta: PER_BATCH - 1,
    baseTimestamp: 1_700_000_000_000n + BigInt(base),
    maxTimestamp: 1_700_000_000_000n + BigInt(base + PER_BATCH - 1),
    producerId: 9n,
    producerEpoch: 0,
    baseSequence: base,
  };
  return encodeBatch(
    fields,
    recordsFor(
      base,
      Array.from({ length: PER_BATCH }, (_, d) => d),
      30,
    ),
    i % 2 === 0 ? 0 : 3,
  );
}

/** A store holding the pass: start marker at 200, copies at 201-203, end marker at 204. */
export async function carriedStore(): Promise<{ log: Buffer[]; reads: UpstreamReads; requested: PartitionRead[]; open: () => number }> {
  const at = (offset: number, b: Buffer) => {
    b.writeBigInt64BE(BigInt(offset), 0);
    return b;
  };
  const originals = await Promise.all(Array.from({ length: BATCHES }, (_, i) => original(i)));
  const log: Buffer[] = [at(200, await markerBatch(encodePassStart({ releaseEnd: RELEASE, topicStart: 0 }), 1))];
  for (const [copy, [from, to]] of [
    [201, [0, 10]],
    [202, [10, 25]],
    [203, [25, 40]],
  ] as const) {
    const run = new CopyRun();
    for (let i = from; i < to; i++) run.add(originals[i]!, i * PER_BATCH);
    log.push(at(copy, (await run.flush(200, 2))!));
  }
  log.push(at(204, await markerBatch(encodePassEnd({ pass: 200, copies: RELEASE, releaseEnd: RELEASE }), 3)));
  const requested: PartitionRead[] = [];
  let open = 0;
  const reads: UpstreamReads = {
    async readPartition(read: PartitionRead): Promise<UpstreamRead> {
      requested.push(read);
      const held = log.filter((b) => Number(b.readBigInt64BE(0)) >= read.fetchOffset);
      const records = Buffer.concat(held);
      open++;
      let released = false;
      return {
        errorCode: 0,
        highWatermark: 205n,
        lastStableOffset: 205n,
        logStartOffset: 200n,
        abortedTransactions: [],
        records,
        // Memory given back is written over: whatever still referred to it sees zeroes.
        release: () => {
          if (released) throw new Error('a read released twice');
          released = true;
          open--;
          records.fill(0);
        },
      };
    },
    bounds: async () => ({ logStart: 200n, highWatermark: 205n, lastStable: 205n }),
    resolveTopicIds: async () => undefined,
  };
  return { log, reads, requested, open: () => open };
}

export function indexOf(survivors: number[]): FakeIndex {
  const index = new FakeIndex(survivors, 205);
  index.carry = { copiesBelow: RELEASE, topicStart: 0, copiesFrom: 200, copiesTo: 204, passOnly: false, marks: new Float64Array([0, 201, 50, 202, 125, 203]) };
  return index;
}
