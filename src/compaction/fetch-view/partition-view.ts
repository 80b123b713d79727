/**
 * One compacted partition of a Fetch answer: the upstream's records through the view, then
 * further reads on the proxy's own connection (within the client's max wait and max bytes) while
 * the answer holds less than Kafka's would. A window of the raw log shrinks to its few survivors,
 * so Kafka, reading its cleaned log, fills the client's partition limit in one fetch where a
 * single upstream read would not; and a window holding nothing must not be the whole answer while
 * records remain before the high watermark. High watermark, last stable offset and log start
 * offset stay what the upstream said; the aborted-transaction list loses the transactions whose
 * markers the cleaner removed.
 */
import { ErrorCode } from '../../protocol/errors.js';
import { ByteParts, putRecords } from '../../protocol/wire/byte-parts.js';
import { encodeBatch, iterateBatches } from '../../protocol/records/batch.js';
import type { IndexView, PartitionIndexView, CarriedSnapshot } from '../../engine/api/index-view.js';
import { mergeAbortedTransactions, visibleAbortedTransactions } from './aborted-transactions.js';
import type { EmptyAnswers } from './empty-answers.js';
import { amongPassRecords, nextReadable, type ReadPlan } from './read-plan.js';
import { rawBytesFor } from './read-size.js';
import type { PartitionRecords, UpstreamReads } from './upstream-reads.js';
import {
  type ViewedBatch,
  cachedRecords,
  visibleRecords,
  visibilityOf,
  releaseHeld,
  type BatchesWalked,
  type Budget,
  type Releasable,
  type MarkerSeen,
  type VisibleRecords,
} from './visible-records.js';
import type { ViewCache } from './view-cache.js';
import { carriedRecords } from './carried-records.js';
import { begunFits, dropBegun, type CopiesBegun } from './copies-ahead.js';

const READ_UNCOMMITTED = 0;
const READ_COMMITTED = 1;

export interface PartitionTarget {
  topic: string;
  partition: number;
  view: PartitionIndexView;
  /** The offset the client asked for. */
  clientOffset: number;
  plan: ReadPlan;
  /** The view cache's batches from the planned fetch offset, when it held them at planning. */
  cached?: readonly ViewedBatch[];
  /** Where a carried partition's records are (carried-records.ts answers below its copiesBelow). */
  carried?: CarriedSnapshot;
  /** The answer from the copies, begun with the client's request or after its previous answer (copies-ahead.ts). */
  copiesBegun?: CopiesBegun;
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
  /** The offset after the last batch the client gets records of; 0 while none. */
  private visibleEnd = 0;
  /** Set once the answer says the log ends where this client is, or before its next record (settleEnd). */
  private atEnd = false;
  /** Whether the end came from this answer's own reads, before the index knew it. */
  private endUnknown = false;
  /** The store's high watermark (last stable offset, read committed) before settleEnd moved it. */
  private storeLimit = -1;
  private readonly markers: MarkerSeen[] = [];
  private changed = false;
  /** Set once a read brought more than the limits take: the answer is as full as Kafka's. */
  private full = false;
  /** Set once a read ran into records the index has not judged yet (docs/tables.md): the answer ends before them. */
  private withheld = false;
  /** The complete raw batches seen so far, to size further reads by what an offset costs. */
  private readonly walked: BatchesWalked = { bytes: 0, offsets: 0, batches: 0 };
  /** Where the answer's last batches came from: a read of the store, the view cache or the carried copies. */
  private lastFrom: 'store' | 'cache' | 'copies' = 'store';
  /** Reads the batches are views of (carried-records.ts), given back once the answer is one buffer. */
  private readonly held: Releasable[] = [];

  constructor(
    readonly target: PartitionTarget,
    readonly data: PartitionRecords,
    private readonly counters: ViewCounters,
    private readonly cache: ViewCache,
  ) {}

  /**
   * The client's own read through the view; `responseRoom` is what the response's max bytes
   * leaves it after the partitions before it. A rebuilt compressed batch can come out a few bytes
   * larger than the upstream's, so the limits hold here too: a cut-off tail that no longer fits
   * is left out, and whole batches past them wait; the first always comes, or a batch that grew
   * past a limit its original met would never reach the client.
   * A partition planned from the view cache was asked of the upstream for no records (at most its
   * first batch comes, as Kafka's first partition of a response always brings one): the cache's
   * batches are its answer, unless the upstream's high watermark says they are no longer there.
   */
  static async start(
    target: PartitionTarget,
    data: PartitionRecords,
    counters: ViewCounters,
    responseRoom: number,
    cache: ViewCache,
    upstream: UpstreamReads,
  ): Promise<PartitionAnswer> {
    const answer = new PartitionAnswer(target, data, counters, cache);
    const begun = target.copiesBegun;
    target.copiesBegun = undefined;
    if (data.errorCode !== ErrorCode.NONE) {
      dropBegun(begun);
      return answer;
    }
    const budget = { maxBytes: Math.min(target.partitionMaxBytes, responseRoom), oneAnyway: true };
    if (target.carried && target.carried.copiesFrom >= 0 && target.clientOffset < target.carried.copiesBelow) {
      answer.changed = true;
      answer.add(await answer.fromCopies(upstream, target.clientOffset, budget, begun), 'copies');
      return answer;
    }
    dropBegun(begun);
    if (target.cached && target.plan.fetchOffset < Number(answer.limit())) {
      answer.changed = true;
      answer.add(cachedRecords(target.cached, budget), 'cache');
    } else {
      answer.add(await answer.view(data.records, budget));
    }
    return answer;
  }

  get failed(): boolean {
    return this.data.errorCode !== ErrorCode.NONE;
  }

  /** Every byte the client gets for this partition. */
  get size(): number {
    return this.recordBytes + this.truncatedTail.length + (this.trailingEmpty?.length ?? 0);
  }

  /** The bytes of batches holding records: what a further read keeps (it replaces the rest). */
  private get recordBytes(): number {
    let size = 0;
    for (const b of this.batches) size += b.length;
    return size;
  }

  /**
   * Whether another read belongs in the answer: records remain before the high watermark, and
   * either the client has nothing yet or the answer is below its partition limit and the next
   * offset below the cleaner's horizon. Past the horizon nothing is filtered, so an upstream read
   * that ran into it is what Kafka would have answered; cached batches stop at the horizon, and
   * copies where the store's records resume, and one upstream read past them follows; a read
   * that ran into the last pass's own records (read-plan.ts) goes on past them.
   */
  get wantsMore(): boolean {
    if (this.failed || this.corrupt !== null || this.full || this.withheld) return false;
    // Only a cut-off batch, behind partitions that had data: owed whole once they hold none (settleEnd).
    if (this.end < 0) return this.truncatedTail.length > 0;
    const next = this.end + 1;
    if (next >= Number(this.limit())) return false;
    if (this.progress === 0) return true;
    const { view, partitionMaxBytes } = this.target;
    return (next < view.cleanedUpTo() || this.lastFrom !== 'store' || amongPassRecords(view, next)) && this.size < partitionMaxBytes;
  }

  /**
   * Reads on from the end of the answer on the proxy's connection while it wants more and the
   * client's max wait lasts; with nothing for the client yet, one read comes even past the wait.
   * Each read starts where the last complete batch ended, so the answer stays one run of batches
   * in offset order: the previous read's cut-off tail and emptied last batch give way to it.
   * A read asks for as much of the raw log as should fill the room (read-size.ts), and keeps
   * whole batches up to the room. A read_uncommitted read of a stretch viewed before under the
   * same clean comes from the view cache (view-cache.ts) instead.
   * `othersBytes` is what the rest of the response holds: only with nothing at all in the
   * response may a batch larger than the limits come, as Kafka always returns one.
   */
  async readOn(upstream: UpstreamReads, deadline: number, maxBytes: number, othersBytes: () => number, now: () => number): Promise<void> {
    let reads = 0;
    while (this.wantsMore) {
      if ((reads > 0 || this.progress > 0) && now() >= deadline) return;
      const others = othersBytes();
      const alone = others === 0 && this.recordBytes === 0;
      const room = Math.min(this.target.partitionMaxBytes, maxBytes - others) - this.recordBytes;
      if ((room <= 0 || this.end < 0) && !alone) return;
      reads++;
      const { view, carried } = this.target;
      const budget = { maxBytes: room, oneAnyway: alone };
      const from = this.end >= 0 ? this.end + 1 : this.target.plan.fetchOffset;
      if (carried && carried.copiesFrom >= 0 && from < carried.copiesBelow) {
        const seen = await this.fromCopies(upstream, from, budget);
        if (seen.end < from) return releaseHeld(seen.held);
        this.add(seen, 'copies');
        continue;
      }
      const fetchOffset = nextReadable(view, from, true);
      const cached =
        this.target.isolationLevel === READ_UNCOMMITTED
          ? this.cache.from(this.target.topic, this.target.partition, view, fetchOffset, this.target.clientOffset, budget)
          : undefined;
      if (cached) {
        const seen = cachedRecords(cached, budget);
        if (seen.end < 0 || (seen.full && seen.batches.length === 0)) return;
        this.changed = true;
        this.add(seen, 'cache');
        continue;
      }
      this.counters.extraReads++;
      const read = await upstream.readPartition({
        topic: this.target.topic,
        partition: this.target.partition,
        fetchOffset,
        currentLeaderEpoch: this.target.currentLeaderEpoch,
        maxBytes: room > 0 ? rawBytesFor(view, fetchOffset, room, this.walked) : 1,
        isolationLevel: this.target.isolationLevel,
      });
      let seen: VisibleRecords;
      try {
        if (read.errorCode !== ErrorCode.NONE) return;
        seen = await this.view(read.records, budget);
        // Beside other data, a first batch too big for the room waits for the client's next fetch.
        if (seen.end < 0 || (seen.full && seen.batches.length === 0)) return;
        // An unreadable batch goes out as read, uncut: when that is more than the room, the
        // client's own next fetch brings it.
        if (seen.corrupt !== null && bytesOf(seen) > room) return;
        copyOut(seen, read.records!.buffer);
      } finally {
        read.release();
      }
      this.data.highWatermark = read.highWatermark;
      this.data.lastStableOffset = read.lastStableOffset;
      this.data.logStartOffset = read.logStartOffset;
      this.data.abortedTransactions = mergeAbortedTransactions(this.data.abortedTransactions, read.abortedTransactions);
      this.changed = true;
      this.add(seen);
    }
  }

  /**
   * The records from `from` below copiesBelow, from the last whole pass's copies; when none
   * survive there, an empty batch up to copiesBelow moves the client on.
   */
  private async fromCopies(upstream: UpstreamReads, from: number, budget: Budget, begun?: CopiesBegun): Promise<VisibleRecords> {
    const { topic, partition, view, carried } = this.target;
    let seen: VisibleRecords;
    if (begun && begunFits(begun, view, from, budget)) {
      seen = await begun.records;
    } else {
      dropBegun(begun);
      seen = await carriedRecords(upstream, { topic, partition, view, carried: carried! }, from, budget);
    }
    if (seen.batches.length === 0 && seen.end >= from) seen.trailingEmpty = await emptyBatch(from, seen.end);
    return seen;
  }

  /** The view of upstream records, whose batches below the horizon go to the view cache. */
  private async view(records: Buffer | null, budget: Budget): Promise<VisibleRecords> {
    const { topic, partition, view, clientOffset } = this.target;
    if (!this.cache.enabled) return visibleRecords(records, visibilityOf(view), clientOffset, budget);
    const viewed: ViewedBatch[] = [];
    const seen = await visibleRecords(records, visibilityOf(view), clientOffset, budget, (b) => viewed.push(b));
    this.cache.record(topic, partition, view, viewed);
    return seen;
  }

  /** Where the client's next fetch reads the copies from, when this answer ended among them. */
  get nextFromCopies(): number | undefined {
    const { carried } = this.target;
    if (this.failed || this.lastFrom !== 'copies' || this.end < 0 || !carried) return undefined;
    return this.end + 1 < carried.copiesBelow ? this.end + 1 : undefined;
  }

  /**
   * Where the log ends for this client (docs/carrying.md, "The end of the log"). From the last
   * record a client sees to the high watermark (the last stable offset, read committed) the store
   * may hold only kcompact's own records and records the cleaner removed; the answer then says
   * the log ends after that record, as Kafka's log does, whose last offset always holds a record
   * clients see (its active segment is never cleaned). A client already there gets no records
   * rather than an empty batch: librdkafka takes an answer without a whole message for a message
   * too large, doubles its fetch size and in the end fails. Known from the index's log end, or
   * from this answer when it read up to the limit. An answer that found the end before the index
   * knew it waits, within the client's max wait, for the index to read the store, so that the
   * client's next fetch waits in the store past those records rather than reading them again.
   */
  settleEnd(): void {
    if (this.failed || this.corrupt !== null) return;
    const { view, clientOffset, plan } = this.target;
    if (this.withheld) {
      this.endAt(Math.max(clientOffset, this.visibleEnd, this.end + 1), false);
      return;
    }
    const limit = Number(this.limit());
    const known = view.end();
    // An index that has read past the limit (what was written since this answer) knows the stretch up to it all the same.
    const indexed = known !== undefined && known.indexedTo >= limit;
    let from = indexed ? known.visibleEnd : Infinity;
    const reached = !this.full && (this.end >= 0 ? this.end + 1 : plan.fetchOffset) >= limit;
    if (reached) from = Math.min(from, Math.max(clientOffset, this.visibleEnd));
    const at = Math.max(from, clientOffset, this.visibleEnd);
    if (!Number.isFinite(at) || at >= limit) return;
    this.storeLimit = limit;
    // Everything the answer read past the client's last record is at or past the end it is told.
    if (reached) this.trailingEmpty = null;
    this.endAt(at, indexed);
  }

  /**
   * Tells the client the log ends at `at` (its high watermark, or last stable offset read
   * committed). An end the index did not know, or one before records it has not judged yet,
   * waits for the index (awaitIndexedEnd): the client's next fetch then finds them judged rather
   * than coming straight back.
   */
  private endAt(at: number, indexed: boolean): void {
    const lso = this.data.lastStableOffset;
    const hw = this.data.highWatermark;
    if (this.target.isolationLevel === READ_COMMITTED && lso >= 0n) {
      if (BigInt(at) < lso) this.data.lastStableOffset = BigInt(at);
      if (hw === lso) this.data.highWatermark = this.data.lastStableOffset;
    } else if (BigInt(at) < hw) {
      this.data.highWatermark = BigInt(at);
      if (lso > BigInt(at)) this.data.lastStableOffset = BigInt(at);
    }
    this.atEnd = true;
    this.endUnknown = !indexed;
    this.changed = true;
  }

  /** An answer at an end the index did not know waits for the index (settleEnd), at most waitMs. */
  async awaitIndexedEnd(index: IndexView, waitMs: number): Promise<void> {
    if (!this.atEnd || !this.endUnknown || this.progress > 0 || waitMs <= 0) return;
    await index.caughtUp(this.target.topic, this.target.partition, waitMs).catch(() => false);
  }

  /**
   * Puts the records the client gets in the answer; remembers (or forgets) an answer that left it
   * where it was. An answer put together goes out in parts, views of the reads it came from:
   * those are given back once the parts are done (byte-parts.ts), after the socket wrote them.
   */
  async finish(answers: EmptyAnswers): Promise<void> {
    try {
      putRecords(this.data, await this.records(answers));
    } finally {
      // Reads the parts took along are no longer here: they go back once the parts are done.
      releaseHeld(this.held);
    }
  }

  private async records(answers: EmptyAnswers): Promise<Buffer | ByteParts | null> {
    // A carried partition's log start is the topic's own, not the store's.
    const carried = this.target.view.carried();
    if (carried && this.data.errorCode === ErrorCode.NONE) this.data.logStartOffset = BigInt(carried.topicStart);
    if (this.failed) return this.data.records;
    if (this.corrupt === null) this.data.abortedTransactions = visibleAbortedTransactions(this.data.abortedTransactions, this.markers);
    const { plan, clientOffset, answerKey } = this.target;
    if (this.withheld) {
      // Records past it wait for their verdict: nothing is skipped on the client's next fetch.
      answers.forget(answerKey);
    } else if (this.atEnd && this.progress === 0) {
      // The client's next fetch from here is asked of the store at its end, where it waits for
      // new records, should the index not know the end yet (read-plan.ts, emptyUpTo).
      answers.remember(answerKey, this.storeLimit - 1);
    } else if (this.progress > 0 || this.atEnd) {
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
    if (this.truncatedTail.length > 0) parts.push(this.truncatedTail);
    const held = this.held.splice(0);
    return ByteParts.of(parts, held.length === 0 ? undefined : () => releaseHeld(held));
  }

  private limit(): bigint {
    const lso = this.data.lastStableOffset;
    return this.target.isolationLevel === 1 && lso >= 0n ? lso : this.data.highWatermark;
  }

  private add(seen: VisibleRecords, from: 'store' | 'cache' | 'copies' = 'store'): void {
    this.lastFrom = from;
    this.walked.bytes += seen.walked.bytes;
    this.walked.offsets += seen.walked.offsets;
    this.walked.batches += seen.walked.batches;
    // Loops, not push(...): one read of tiny batches comes near the ~120,000 arguments a call takes.
    for (const b of seen.batches) this.batches.push(b);
    if (seen.held) for (const r of seen.held) this.held.push(r);
    // A later read starts where the earlier one's complete batches ended: its tail is read again.
    this.trailingEmpty = seen.trailingEmpty;
    this.truncatedTail = seen.truncatedTail;
    this.progress += seen.progress;
    this.end = seen.end;
    if (seen.visibleEnd > this.visibleEnd) this.visibleEnd = seen.visibleEnd;
    this.full = seen.full;
    if (seen.withheld) this.withheld = true;
    for (const m of seen.markers) this.markers.push(m);
    this.corrupt = seen.corrupt;
    if (seen.changed) this.changed = true;
    this.counters.removedRecords += seen.removedRecords;
    this.counters.rebuiltBatches += seen.rebuiltBatches;
    if (seen.corrupt) this.counters.corruptBatches++;
  }
}

/**
 * Copies what a read on keeps out of the read's memory into one buffer: the answer then holds
 * its survivors alone, and the read's buffer goes back for the next read at once, however much
 * superseded log it took to find them. Held until the response went out, the reads of one answer
 * could add up to many times the answer (a megabyte of survivors among ten of raw log).
 */
function copyOut(seen: VisibleRecords, memory: ArrayBufferLike): void {
  const inRead = (b: Buffer) => b.buffer === memory;
  let bytes = 0;
  for (const b of seen.batches) if (inRead(b)) bytes += b.length;
  if (seen.trailingEmpty && inRead(seen.trailingEmpty)) bytes += seen.trailingEmpty.length;
  if (inRead(seen.truncatedTail)) bytes += seen.truncatedTail.length;
  if (bytes === 0) return;
  const own = Buffer.allocUnsafeSlow(bytes);
  let at = 0;
  const copy = (b: Buffer) => {
    if (!inRead(b)) return b;
    const start = at;
    at += b.copy(own, at);
    return own.subarray(start, at);
  };
  for (let i = 0; i < seen.batches.length; i++) seen.batches[i] = copy(seen.batches[i]!);
  if (seen.trailingEmpty) seen.trailingEmpty = copy(seen.trailingEmpty);
  seen.truncatedTail = copy(seen.truncatedTail);
}

function bytesOf(seen: VisibleRecords): number {
  return seen.batches.reduce((n, b) => n + b.length, seen.truncatedTail.length + (seen.trailingEmpty?.length ?? 0));
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
