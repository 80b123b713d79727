/**
 * One compacted partition of a Fetch answer: the upstream's records through the view, and when
 * nothing the client can use came back while records remain before the high watermark, further
 * reads on the proxy's own connection (within the client's max wait and max bytes) until some do.
 * High watermark, last stable offset and log start offset stay what the upstream said; the
 * aborted-transaction list loses the transactions whose markers the cleaner removed.
 */
import { encodeBatch, iterateBatches } from '../../protocol/records/batch.js';
import type { PartitionIndexView } from '../index-view.js';
import { mergeAbortedTransactions, visibleAbortedTransactions } from './aborted-transactions.js';
import type { EmptyAnswers } from './empty-answers.js';
import { nextReadable, type ReadPlan } from './read-plan.js';
import type { PartitionRecords, UpstreamReads } from './upstream-reads.js';
import { visibleRecords, type MarkerSeen, type VisibleRecords, type Visibility } from './visible-records.js';

export interface PartitionTarget {
  topic: string;
  partition: number;
  view: PartitionIndexView;
  /** The offset the client asked for. */
  clientOffset: number;
  plan: ReadPlan;
  currentLeaderEpoch: number;
  partitionMaxBytes: number;
  isolationLevel: number;
  /** Where EmptyAnswers keeps this client's fetch. */
  answerKey: string;
}

export interface ViewCounters {
  extraReads: number;
  removedRecords: number;
  rebuiltBatches: number;
  emptyAnswers: number;
  corruptBatches: number;
}

/** A partition's answer while it is being put together. */
export class PartitionAnswer {
  /** Why part of the records went out unfiltered, when a batch could not be read. */
  corrupt: string | null = null;
  private readonly batches: Buffer[] = [];
  private trailingEmpty: Buffer | null = null;
  private truncatedTail: Buffer = Buffer.alloc(0);
  private progress = 0;
  private end = -1;
  private readonly markers: MarkerSeen[] = [];
  private changed = false;

  constructor(
    readonly target: PartitionTarget,
    readonly data: PartitionRecords,
    private readonly counters: ViewCounters,
  ) {}

  static async start(target: PartitionTarget, data: PartitionRecords, counters: ViewCounters): Promise<PartitionAnswer> {
    const answer = new PartitionAnswer(target, data, counters);
    if (data.errorCode === 0) answer.add(await visibleRecords(data.records, visibility(target.view), target.clientOffset));
    return answer;
  }

  get failed(): boolean {
    return this.data.errorCode !== 0;
  }

  private get size(): number {
    let size = this.truncatedTail.length + (this.trailingEmpty?.length ?? 0);
    for (const b of this.batches) size += b.length;
    return size;
  }

  /** The bytes of batches holding records (not empty batches, not a cut-off tail). */
  get recordBytes(): number {
    let size = 0;
    for (const b of this.batches) size += b.length;
    return size;
  }

  /** Whether more reading could give the client something: nothing yet, and records remain. */
  get wantsMore(): boolean {
    if (this.failed || this.progress > 0 || this.corrupt !== null || this.end < 0) return false;
    return this.end + 1 < Number(this.limit());
  }

  /**
   * Reads past the removed records on the proxy's connection until progress or a limit.
   * `othersBytes` is what the rest of the response holds: with nothing else in it, a batch larger
   * than the limits still comes, as Kafka always returns one.
   */
  async readOn(upstream: UpstreamReads, deadline: number, maxBytes: number, othersBytes: () => number, now: () => number): Promise<void> {
    let reads = 0;
    while (this.wantsMore && (reads === 0 || now() < deadline)) {
      const alone = othersBytes() === 0;
      const room = Math.min(this.target.partitionMaxBytes, maxBytes - othersBytes()) - this.size;
      if (room <= 0 && !alone) return;
      reads++;
      this.counters.extraReads++;
      const read = await upstream.readPartition({
        topic: this.target.topic,
        partition: this.target.partition,
        fetchOffset: nextReadable(this.target.view, this.end + 1, true),
        currentLeaderEpoch: this.target.currentLeaderEpoch,
        maxBytes: Math.max(room, 1),
        isolationLevel: this.target.isolationLevel,
      });
      if (read.errorCode !== 0) return;
      const seen = await visibleRecords(read.records, visibility(this.target.view), this.target.clientOffset);
      if (seen.end < 0) return;
      // The upstream returns one batch whatever the limit: beside other data, one too big waits.
      if (!alone && seen.batches.reduce((n, b) => n + b.length, 0) > room) return;
      this.data.highWatermark = read.highWatermark;
      this.data.lastStableOffset = read.lastStableOffset;
      this.data.logStartOffset = read.logStartOffset;
      this.data.abortedTransactions = mergeAbortedTransactions(this.data.abortedTransactions, read.abortedTransactions);
      this.changed = true;
      this.add(seen);
    }
  }

  /** The records the client gets; remembers (or forgets) an answer that left it where it was. */
  async finish(answers: EmptyAnswers): Promise<Buffer | null> {
    if (this.failed) return this.data.records;
    if (this.corrupt === null) this.data.abortedTransactions = visibleAbortedTransactions(this.data.abortedTransactions, this.markers);
    const { plan, clientOffset, answerKey } = this.target;
    if (this.progress > 0) {
      answers.forget(answerKey);
    } else if (this.trailingEmpty) {
      answers.remember(answerKey, lastOffsetOf(this.trailingEmpty));
      this.counters.emptyAnswers++;
    } else if (plan.emptyUpTo !== undefined && this.batches.length === 0) {
      this.trailingEmpty = await emptyBatch(clientOffset, plan.emptyUpTo);
      this.changed = true;
      answers.remember(answerKey, lastOffsetOf(this.trailingEmpty));
      this.counters.emptyAnswers++;
    }
    // An untouched answer goes out as the very bytes the upstream sent.
    if (!this.changed) return this.data.records;
    const parts = [...this.batches];
    if (this.trailingEmpty) parts.push(this.trailingEmpty);
    parts.push(this.truncatedTail);
    return Buffer.concat(parts);
  }

  private limit(): bigint {
    const lso = this.data.lastStableOffset;
    return this.target.isolationLevel === 1 && lso >= 0n ? lso : this.data.highWatermark;
  }

  private add(seen: VisibleRecords): void {
    this.batches.push(...seen.batches);
    // A later read starts where the earlier one's complete batches ended: its tail is read again.
    this.trailingEmpty = seen.trailingEmpty;
    this.truncatedTail = seen.truncatedTail;
    this.progress += seen.progress;
    this.end = seen.end;
    this.markers.push(...seen.markers);
    this.corrupt = seen.corrupt;
    if (seen.changed) this.changed = true;
    this.counters.removedRecords += seen.removedRecords;
    this.counters.rebuiltBatches += seen.rebuiltBatches;
    if (seen.corrupt) this.counters.corruptBatches++;
  }
}

function visibility(view: PartitionIndexView): Visibility {
  return { cleanedUpTo: view.cleanedUpTo(), survivors: (from, to) => view.survivors(from, to) };
}

function lastOffsetOf(batch: Buffer): number {
  const [header] = iterateBatches(batch).batches;
  return Number(header!.baseOffset) + header!.lastOffsetDelta;
}

const MAX_DELTA = 0x7fffffff;

/**
 * An empty batch covering [from, to], as Kafka's cleaner writes one (no records, no producer,
 * base timestamp -1), for a repeated fetch whose range is known to hold nothing.
 */
function emptyBatch(from: number, to: number): Promise<Buffer> {
  return encodeBatch(
    {
      baseOffset: BigInt(from),
      partitionLeaderEpoch: -1,
      attributes: 0,
      lastOffsetDelta: Math.min(to - from, MAX_DELTA),
      baseTimestamp: -1n,
      maxTimestamp: -1n,
      producerId: -1n,
      producerEpoch: -1,
      baseSequence: -1,
    },
    [],
    0,
  );
}
