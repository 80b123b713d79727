/**
 * The compacted Fetch view: clients read a compacted topic as Kafka's cleaner would have left
 * it, from a store that cannot compact (and, below what a carry pass let go, from the pass's
 * copies: carried-records.ts). Fetches of compacted partitions are sent upstream
 * from the next surviving offset (read-plan.ts), the answer's batches are filtered to the
 * survivors (visible-records.ts, partition-view.ts), and fetch sessions are kept off
 * (fetch-session.ts). Partitions of other topics pass through byte for byte.
 *
 * A partition whose fetch offset the view cache holds is still asked of the upstream, for its
 * error, high watermark, last stable offset and log start, but for no records: its answer comes
 * from the cache. Otherwise each such fetch would read up to the client's partition limit of raw
 * log (a megabyte by default, mostly superseded records) only for the view to drop it.
 */
import type { Logger } from '../../common/log.js';
import { ApiKey, type ApiKeyOf, type FetchRequest, type FetchRequestTopic, type FetchResponse } from '../../protocol/messages.js';
import type { Filter, FilterRequest, FilterResponse, RequestContext, RequestOutcome, ResponseContext, ResponseOutcome } from '../../proxy/filter/filter.js';
import type { TopicIds } from '../../proxy/topic-ids.js';
import { NOT_INDEXED, type IndexView } from '../../engine/api/index-view.js';
import type { TopicConfigView } from '../../engine/api/topic-policy.js';
import { EmptyAnswers } from './empty-answers.js';
import { isIncremental, isSessionless, sessionFields, sessionlessFrame, sessionNotFound, SESSIONLESS_EPOCH, type SessionFields } from './fetch-session.js';
import { PartitionAnswer, type PartitionTarget, type ViewCounters } from './partition-view.js';
import { planRead, type ReadPlan } from './read-plan.js';
import { answerOutOfRange } from './out-of-range.js';
import { ErrorCode } from '../../protocol/errors.js';
import { copiesHold } from '../../engine/api/survivor-set.js';
import { beginCopies, CopiesAhead, DEFAULT_COPIES_AHEAD, dropBegun, type CopiesAheadOptions, type CopiesBegun } from './copies-ahead.js';
import type { Budget, ViewedBatch } from './visible-records.js';
import type { UpstreamReads } from './upstream-reads.js';
import { DEFAULT_VIEW_CACHE_BYTES, ViewCache, type ViewCacheStats } from './view-cache.js';

type Fetch = ApiKeyOf<'Fetch'>;

/** The fetch view's settings. */
export interface FetchViewOptions {
  /** Memory for the view's batches below the horizon (view-cache.ts; the viewCacheBytes setting); 0 turns the cache off. */
  cacheBytes: number;
}

export const DEFAULT_FETCH_VIEW: Readonly<FetchViewOptions> = { cacheBytes: DEFAULT_VIEW_CACHE_BYTES };

/** What the view works with, and any of its options (the defaults above for the rest). */
export interface FetchViewDeps extends Partial<FetchViewOptions> {
  config: TopicConfigView;
  index: IndexView;
  topicIds: TopicIds;
  upstream: UpstreamReads;
  log: Logger;
  /** Answers from carried copies begun for clients' next fetches (copies-ahead.ts). */
  copiesAhead?: CopiesAheadOptions;
  clock?: () => number;
}

export interface FetchViewStats extends ViewCounters {
  /** Fetch requests seen. */
  requests: number;
  /** Fetch requests that held a compacted partition. */
  viewedRequests: number;
  /** Partitions whose fetch offset was moved ahead past removed records. */
  seeks: number;
  /** Incremental session requests answered FETCH_SESSION_ID_NOT_FOUND. */
  sessionsRefused: number;
  /** Partitions the store answered OFFSET_OUT_OF_RANGE that got an empty answer while the index caught up (out-of-range.ts). */
  outOfRangeHeld: number;
}

export interface FetchView extends Filter {
  readonly stats: FetchViewStats;
  readonly cache: ViewCacheStats;
  /** Answers from the copies begun for clients' next fetches, and how many of them a next fetch used. */
  readonly copiesAhead: { readonly begun: number; readonly used: number };
}

const FIRST_TOPIC_ID_VERSION = 13;
const READ_UNCOMMITTED = 0;
/**
 * The most a filtered response holds: it is put together in memory (the upstream's answer, the
 * reads on, the encoded response), and a broker may answer less than a client's max bytes (50 MiB
 * by default), which clients meet with their next fetch. Capping it lowers the proxy's memory
 * after heavy reads, and the reads got faster, not slower (docs/performance.md).
 */
const MAX_VIEWED_RESPONSE_BYTES = 8 << 20;

const targetKey = (topicKey: string, partition: number) => `${topicKey}\u0000${partition}`;

/**
 * The budget of a partition's answer from the copies, as its request's limits will give it when
 * no partition before it in the response takes any of the room (PartitionAnswer.start).
 */
function copiesBudget(partitionMaxBytes: number, requestMaxBytes: number): Budget {
  return { maxBytes: Math.min(partitionMaxBytes, requestMaxBytes, MAX_VIEWED_RESPONSE_BYTES), oneAnyway: true };
}

/** What a cached run brings an answer limited to `limit` bytes. */
function cachedBytesUpTo(batches: readonly ViewedBatch[], limit: number): number {
  let bytes = 0;
  for (let i = 0; i < batches.length && bytes < limit; i++) bytes += batches[i]!.bytes.length;
  return Math.min(bytes, limit);
}

export function createFetchView(opts: FetchViewDeps): FetchView {
  const clock = opts.clock ?? Date.now;
  const log = opts.log.child({ component: 'fetch-view' });
  const answers = new EmptyAnswers({ clock });
  const cache = new ViewCache(opts.cacheBytes ?? DEFAULT_FETCH_VIEW.cacheBytes);
  const ahead = new CopiesAhead(opts.copiesAhead ?? DEFAULT_COPIES_AHEAD);
  const stats: FetchViewStats = {
    requests: 0,
    viewedRequests: 0,
    seeks: 0,
    sessionsRefused: 0,
    outOfRangeHeld: 0,
    extraReads: 0,
    removedRecords: 0,
    rebuiltBatches: 0,
    emptyAnswers: 0,
    corruptBatches: 0,
  };

  type NamedTopic = Pick<FetchRequestTopic, 'topic' | 'topicId'>;
  const topicKey = (t: NamedTopic, byId: boolean) => (byId ? (t.topicId ?? '') : (t.topic ?? ''));
  const topicName = (t: NamedTopic, byId: boolean) => (byId ? opts.topicIds.name(t.topicId ?? '') : t.topic);

  /**
   * Plans each compacted partition's read, moving its fetch offset in the body, and asking for no
   * records where the view cache answers. The bytes the cache brings count towards the request's
   * min bytes, as they would in Kafka's cleaned log, so the upstream does not wait for more. A
   * request with anything to filter asks for at most MAX_VIEWED_RESPONSE_BYTES.
   */
  function plan(req: FilterRequest<Fetch>, body: FetchRequest, byId: boolean): { targets: Map<string, PartitionTarget>; changed: boolean } {
    const targets = new Map<string, PartitionTarget>();
    let changed = false;
    let cachedBytes = 0;
    let filtered = false;
    for (const t of body.topics) {
      const name = topicName(t, byId);
      if (name === undefined || !opts.config.compacted(name)) continue;
      for (const p of t.partitions) {
        opts.index.used(name, p.partition);
        // Not indexed yet: nothing is hidden but kcompact's own carry records, as in Kafka's uncleaned head.
        const view = opts.index.partition(name, p.partition) ?? NOT_INDEXED;
        const clientOffset = Number(p.fetchOffset);
        const partitionMaxBytes = p.partitionMaxBytes;
        const answerKey = EmptyAnswers.key(req.header.clientId, name, p.partition, clientOffset);
        const carried = view.carried();
        let read: ReadPlan;
        let cached: readonly ViewedBatch[] | undefined;
        let copiesBegun: CopiesBegun | undefined;
        if (copiesHold(carried, clientOffset)) {
          // Below the last pass's release end the copies answer (carried-records.ts): the upstream is
          // asked for its offsets only, and the answer is put together meanwhile, if it was not already.
          const budget = copiesBudget(partitionMaxBytes, body.maxBytes);
          copiesBegun =
            ahead.take(name, p.partition, clientOffset, view, budget) ??
            beginCopies(opts.upstream, { topic: name, partition: p.partition, view, carried }, clientOffset, budget);
          read = { fetchOffset: carried.copiesBelow };
          p.fetchOffset = BigInt(carried.copiesBelow);
          p.partitionMaxBytes = 0;
          changed = true;
          filtered = true;
        } else {
          read = planRead(view, clientOffset, answers.recall(answerKey));
          if (read.fetchOffset !== clientOffset) {
            p.fetchOffset = BigInt(read.fetchOffset);
            stats.seeks++;
            changed = true;
          }
          // The cache holds batches below the horizon only: a tailing reader's partitions skip it.
          const belowHorizon = read.fetchOffset < view.cleanedUpTo();
          if (belowHorizon) filtered = true;
          cached =
            belowHorizon && body.isolationLevel === READ_UNCOMMITTED
              ? cache.from(name, p.partition, view, read.fetchOffset, clientOffset, { maxBytes: partitionMaxBytes, oneAnyway: true })
              : undefined;
          if (cached) {
            cachedBytes += cachedBytesUpTo(cached, partitionMaxBytes);
            p.partitionMaxBytes = 0;
            changed = true;
          }
        }
        targets.set(targetKey(topicKey(t, byId), p.partition), {
          topic: name,
          partition: p.partition,
          view,
          clientOffset,
          plan: read,
          ...(cached && { cached }),
          ...(carried && { carried }),
          ...(copiesBegun && { copiesBegun }),
          currentLeaderEpoch: p.currentLeaderEpoch ?? -1,
          partitionMaxBytes,
          isolationLevel: body.isolationLevel,
          answerKey,
        });
      }
    }
    if (cachedBytes > 0) body.minBytes = Math.max(0, body.minBytes - cachedBytes);
    if (filtered && body.maxBytes > MAX_VIEWED_RESPONSE_BYTES) {
      body.maxBytes = MAX_VIEWED_RESPONSE_BYTES;
      changed = true;
    }
    return { targets, changed };
  }

  function view(
    req: FilterRequest<Fetch>,
    ctx: RequestContext<Fetch>,
    body: FetchRequest,
    byId: boolean,
    session: SessionFields | null,
  ): RequestOutcome<Fetch> {
    const { targets, changed } = plan(req, body, byId);
    const sessionless = isSessionless(session);
    // The frame is patched, not the body encoded again (fetch-session.ts): the request is otherwise unchanged.
    if (targets.size === 0) return sessionless ? ctx.forward() : ctx.forward({ frame: sessionlessFrame(req) });
    stats.viewedRequests++;
    const deadline = clock() + body.maxWaitMs;
    const response = (res: FilterResponse<Fetch>, rctx: ResponseContext<Fetch>) => filterResponse(body, byId, targets, res, rctx, deadline);
    if (changed) {
      if (session) {
        body.sessionId = 0;
        body.sessionEpoch = SESSIONLESS_EPOCH;
      }
      return ctx.forward({ body, response });
    }
    if (!sessionless) return ctx.forward({ frame: sessionlessFrame(req), response });
    return ctx.forward({ response });
  }

  async function filterResponse(
    request: FetchRequest,
    byId: boolean,
    targets: Map<string, PartitionTarget>,
    res: FilterResponse<Fetch>,
    ctx: ResponseContext<Fetch>,
    deadline: number,
  ): Promise<ResponseOutcome<Fetch>> {
    const body: FetchResponse = res.body;
    const viewed: PartitionAnswer[] = [];
    const ends: { highWatermark: bigint; lastStableOffset: bigint }[] = [];
    let otherBytes = 0;
    let before = 0;
    let changed = false;
    for (const t of body.responses) {
      for (const p of t.partitions) {
        const target = targets.get(targetKey(topicKey(t, byId), p.partitionIndex));
        if (target && p.errorCode === ErrorCode.OFFSET_OUT_OF_RANGE && (await answerOutOfRange(opts.index, opts.upstream, target, p, deadline - clock()))) {
          dropBegun(target.copiesBegun);
          stats.outOfRangeHeld++;
          changed = true;
        } else if (target) {
          const answer = await PartitionAnswer.start(target, p, stats, request.maxBytes - before, cache, opts.upstream);
          viewed.push(answer);
          ends.push({ highWatermark: p.highWatermark, lastStableOffset: p.lastStableOffset });
          before += answer.size;
        } else {
          otherBytes += p.records?.length ?? 0;
          before += p.records?.length ?? 0;
        }
      }
    }
    // An answer at the end gives up its bytes first: a partition after it may now be owed a whole batch.
    for (const answer of viewed) answer.settleEnd();
    for (const answer of viewed) {
      if (!answer.wantsMore) continue;
      const othersBytes = () => viewed.reduce((n, a) => (a === answer ? n : n + a.size), otherBytes);
      try {
        await answer.readOn(opts.upstream, deadline, request.maxBytes, othersBytes, clock);
      } catch (err) {
        log.debug('reading on failed; answering with what was read', { topic: answer.target.topic, partition: answer.target.partition, err });
      }
    }
    for (const answer of viewed) answer.settleEnd();
    await Promise.all(viewed.map((answer) => answer.awaitIndexedEnd(opts.index, deadline - clock())));
    for (const [i, answer] of viewed.entries()) {
      const { records, abortedTransactions, logStartOffset, highWatermark, lastStableOffset } = answer.data;
      await answer.finish(answers);
      if (
        answer.data.records !== records ||
        answer.data.abortedTransactions !== abortedTransactions ||
        answer.data.logStartOffset !== logStartOffset ||
        highWatermark !== ends[i]!.highWatermark ||
        lastStableOffset !== ends[i]!.lastStableOffset
      )
        changed = true;
      if (answer.corrupt)
        log.warn('a fetched batch could not be read; passed on unfiltered', {
          topic: answer.target.topic,
          partition: answer.target.partition,
          reason: answer.corrupt,
        });
    }
    // The next answers are begun once this one is on its way: their start is no part of its wait.
    // Only a read among the copies has one: a tailing consumer's fetch schedules nothing.
    if (viewed.some((answer) => answer.nextFromCopies !== undefined))
      setImmediate(() => {
        for (const answer of viewed) beginNext(answer, request.maxBytes);
      });
    // A consumer reading past the cleaner's horizon gets the upstream's frame itself.
    return changed ? ctx.forward(body) : ctx.forward();
  }

  /** A client whose answer ended among the copies will want the next stretch of them: begun now, under the index as it is now. */
  function beginNext(answer: PartitionAnswer, requestMaxBytes: number): void {
    const next = answer.nextFromCopies;
    if (next === undefined) return;
    const { topic, partition, partitionMaxBytes } = answer.target;
    const view = opts.index.partition(topic, partition);
    const carried = view?.carried();
    if (view && copiesHold(carried, next))
      ahead.begin(opts.upstream, { topic, partition, view, carried }, next, copiesBudget(partitionMaxBytes, requestMaxBytes));
  }

  function onRequest(req: FilterRequest<Fetch>, ctx: RequestContext<Fetch>): RequestOutcome<Fetch> | Promise<RequestOutcome<Fetch>> {
    stats.requests++;
    // Without compacted topics nothing is filtered, and sessions may live.
    if (opts.config.compactedTopics().length === 0) return ctx.forward();
    const session = sessionFields(req);
    if (isIncremental(session)) {
      stats.sessionsRefused++;
      return ctx.respond(sessionNotFound());
    }
    const body = req.body;
    if ((body.replicaState?.replicaId ?? body.replicaId ?? -1) >= 0) return ctx.forward();
    const byId = req.apiVersion >= FIRST_TOPIC_ID_VERSION;
    const unknown = byId ? body.topics.map((t) => t.topicId ?? '').filter((id) => opts.topicIds.name(id) === undefined) : [];
    if (unknown.length === 0) return view(req, ctx, body, byId, session);
    return opts.upstream.resolveTopicIds(unknown).then(
      () => view(req, ctx, body, byId, session),
      (err) => {
        log.warn('cannot resolve topic ids of a Fetch request; ids still unknown are not filtered', { err });
        return view(req, ctx, body, byId, session);
      },
    );
  }

  return {
    name: 'fetch-view',
    apis: { [ApiKey.Fetch]: { onRequest } },
    stats,
    get cache() {
      return cache.stats;
    },
    get copiesAhead() {
      return { begun: ahead.begun, used: ahead.used };
    },
  };
}
