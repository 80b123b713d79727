/**
 * ListOffsets of carried partitions (docs/carrying.md). The store's log start is where a pass let
 * the history go, not the compacted topic's own log start, which is what Kafka answers for the
 * earliest offset (0 for a compact-only topic). And the store sees the copies with the time of
 * carrying, so its answers by timestamp could name a copy's offset: those come from the index,
 * which holds the original timestamps (the engine's PartitionStore.offsetForTime), and the store
 * answers only for the records past the index. The latest offset is where the log ends for clients: the store's,
 * unless only kcompact's own records lie before it (latest()).
 *
 * A replica whose index has not read a pass (just started, or behind the replica that carries)
 * cannot tell a store that let a carried range go from one that holds everything: where the
 * store's log no longer starts at 0, lookups by timestamp wait for the index to read what the
 * store holds, and the earliest offset for that or for the index to find the store's last pass
 * (UNSETTLED_WAIT_MS); they are answered OFFSET_NOT_AVAILABLE, which clients retry, if neither
 * came by then.
 */
import { ApiKey, type ApiKeyOf, type ListOffsetsResponsePartitionResponse } from '../../protocol/messages.js';
import type { Filter, FilterRequest, RequestContext, RequestOutcome } from '../../proxy/filter/filter.js';
import { caughtUpOrHeld } from '../engine-client/caught-up.js';
import { type IndexView } from '../../engine/api/index-view.js';
import type { TopicConfigView } from '../../engine/api/topic-policy.js';
import { MAX_TIMESTAMP, type OffsetAtTime } from '../../engine/api/engine-reports.js';
import { ErrorCode } from '../../protocol/errors.js';
import { partitionKey } from '../../engine/api/partition-key.js';

type ListOffsets = ApiKeyOf<'ListOffsets'>;

/** ListOffsets' special timestamps: the latest offset, the earliest, and the earliest held locally (KIP-405). */
const LATEST = -1n;
const EARLIEST = -2n;
const EARLIEST_LOCAL = -4n;

export interface ListOffsetsViewOptions {
  config: TopicConfigView;
  index: IndexView;
  /** The index's answer for a timestamp (the compaction engine's offsetForTime). */
  offsetForTime: (topic: string, partition: number, timestamp: number) => Promise<OffsetAtTime | null>;
  /** The store's log start (ListOffsets EARLIEST on the proxy's own connection). */
  logStartOffset: (topic: string, partition: number) => Promise<bigint>;
  /** How long an answer waits for an index that has not read the store yet (default UNSETTLED_WAIT_MS). */
  unsettledWaitMs?: number;
  /**
   * Whether the store's batch holding `end - 1` is kcompact's own (store-tail.ts); undefined when
   * the store cannot say. Without it the latest offset waits for an index behind the store.
   */
  endsWithOwnRecords?: (topic: string, partition: number, end: number) => Promise<boolean | undefined>;
  /** How long the latest offset waits for an index behind the store (default LATEST_WAIT_MS). */
  latestWaitMs?: number;
}

/** Below the request timeout of every client (30 s by default), so that it gets OFFSET_NOT_AVAILABLE rather than times out. */
export const UNSETTLED_WAIT_MS = 10_000;
/**
 * The latest offset waits this long at most for the index to read what the store holds, so that
 * it can say where the log ends for clients: a client that reads on until it has seen the record
 * before the latest offset would otherwise wait for one of kcompact's own records.
 */
export const LATEST_WAIT_MS = 2_000;

type Asked =
  | { kind: 'start'; start: number }
  | { kind: 'time'; timestamp: number }
  /** No pass known in the index: the store's answer stands unless the index, once it has read the store, knows one. */
  | { kind: 'unsettled'; earliest: boolean; timestamp: number }
  | { kind: 'latest' };

export function createListOffsetsView(opts: ListOffsetsViewOptions): Filter {
  function onRequest(req: FilterRequest<ListOffsets>, ctx: RequestContext<ListOffsets>): RequestOutcome<ListOffsets> {
    if (opts.config.compactedTopics().length === 0) return ctx.forward();
    const asked = new Map<string, Asked>();
    for (const t of req.body.topics) {
      if (!opts.config.compacted(t.name)) continue;
      for (const p of t.partitions) {
        opts.index.used(t.name, p.partitionIndex);
        const carried = opts.index.partition(t.name, p.partitionIndex)?.carried();
        const earliest = p.timestamp === EARLIEST || p.timestamp === EARLIEST_LOCAL;
        const byTime = p.timestamp >= 0n || p.timestamp === BigInt(MAX_TIMESTAMP);
        const k = partitionKey(t.name, p.partitionIndex);
        if (p.timestamp === LATEST) asked.set(k, { kind: 'latest' });
        if (!earliest && !byTime) continue;
        if (!carried) asked.set(k, { kind: 'unsettled', earliest, timestamp: Number(p.timestamp) });
        else if (earliest) asked.set(k, { kind: 'start', start: carried.topicStart });
        else asked.set(k, { kind: 'time', timestamp: Number(p.timestamp) });
      }
    }
    if (asked.size === 0) return ctx.forward();
    return ctx.forward({
      response: async (res, rctx) => {
        const lookups: Promise<void>[] = [];
        for (const t of res.body.topics) {
          for (const p of t.partitions) {
            const a = asked.get(partitionKey(t.name, p.partitionIndex));
            if (!a || p.errorCode !== ErrorCode.NONE) continue;
            if (a.kind === 'start') p.offset = BigInt(a.start);
            else if (a.kind === 'latest') lookups.push(latest(t.name, p.partitionIndex, p));
            else if (a.kind === 'time') lookups.push(lookUp(t.name, p.partitionIndex, p, a.timestamp));
            else lookups.push(settle(t.name, p.partitionIndex, p, a));
          }
        }
        await Promise.all(lookups);
        return rctx.forward(res.body);
      },
    });
  }

  async function lookUp(topic: string, partition: number, p: ListOffsetsResponsePartitionResponse, timestamp: number): Promise<void> {
    let answer = await opts.offsetForTime(topic, partition, timestamp);
    if (answer?.unread) {
      const caughtUp = await opts.index.caughtUp(topic, partition, opts.unsettledWaitMs ?? UNSETTLED_WAIT_MS).catch(() => false);
      answer = caughtUp ? await opts.offsetForTime(topic, partition, timestamp) : null;
      if (!answer || answer.unread) return notAvailable(p);
    }
    byTime(p, timestamp, answer);
  }

  /**
   * The latest offset (the high watermark, or the last stable offset read committed) where the
   * log ends for clients (index-view.ts LogEnd): after the last record they see, when the store
   * holds only kcompact's own records and removed ones from there, as the fetch view says too.
   * Never below the earliest offset.
   */
  async function latest(topic: string, partition: number, p: ListOffsetsResponsePartitionResponse): Promise<void> {
    const storeSays = Number(p.offset);
    const known = () => opts.index.partition(topic, partition)?.end();
    if ((known()?.indexedTo ?? -1) < storeSays) {
      // A client's record last: the store's end is the topic's, and the index need not be waited for.
      const own = await opts.endsWithOwnRecords?.(topic, partition, storeSays).catch(() => undefined);
      if (own === false) return;
      await opts.index.caughtUp(topic, partition, opts.latestWaitMs ?? LATEST_WAIT_MS).catch(() => false);
    }
    const end = known();
    // An index past the store's answer (a pass written since) knows that stretch all the same.
    if (!end || end.indexedTo < storeSays || end.visibleEnd >= storeSays) return;
    const carried = opts.index.partition(topic, partition)?.carried();
    const start = carried ? carried.topicStart : Number(await opts.logStartOffset(topic, partition).catch(() => p.offset));
    p.offset = BigInt(Math.max(end.visibleEnd, start));
  }

  /** The answer for a partition whose index knew no pass when asked. */
  async function settle(topic: string, partition: number, p: ListOffsetsResponsePartitionResponse, a: Extract<Asked, { kind: 'unsettled' }>): Promise<void> {
    // A store that starts at 0 let nothing go: its answer is the topic's.
    const storeStart = a.earliest ? p.offset : await opts.logStartOffset(topic, partition).catch(() => -1n);
    if (storeStart === 0n) return;
    // The earliest offset is the topic's start, which a pass found in the store already tells;
    // an answer by time needs the index of the records themselves.
    const passFound = () => a.earliest && opts.index.partition(topic, partition)?.carried() !== undefined;
    const caughtUp = storeStart > 0n && (await caughtUpOrHeld(opts.index, topic, partition, opts.unsettledWaitMs ?? UNSETTLED_WAIT_MS, passFound));
    if (!caughtUp) return notAvailable(p);
    const carried = opts.index.partition(topic, partition)?.carried();
    if (!carried) return;
    if (a.earliest) p.offset = BigInt(carried.topicStart);
    else await lookUp(topic, partition, p, a.timestamp);
  }

  return { name: 'list-offsets-view', apis: { [ApiKey.ListOffsets]: { minVersion: 1, onRequest } } };
}

/** Clients retry it (the index has not read what the store holds yet). */
function notAvailable(p: ListOffsetsResponsePartitionResponse): void {
  p.errorCode = ErrorCode.OFFSET_NOT_AVAILABLE;
  p.offset = -1n;
  p.timestamp = -1n;
  p.leaderEpoch = -1;
}

/** The answer by timestamp: the index's, or the store's when it names a record past the index. */
function byTime(p: ListOffsetsResponsePartitionResponse, timestamp: number, answer: OffsetAtTime | null): void {
  if (!answer) return;
  const storeSays = p.offset >= 0n && Number(p.offset) >= answer.indexedUpTo ? { offset: Number(p.offset), timestamp: Number(p.timestamp) } : null;
  const found = answer.found;
  let pick = found ?? storeSays;
  // The largest timestamp may be in the unindexed tail.
  if (timestamp === MAX_TIMESTAMP && found && storeSays && storeSays.timestamp > found.timestamp) pick = storeSays;
  if (!pick) {
    p.offset = -1n;
    p.timestamp = -1n;
    p.leaderEpoch = -1;
    return;
  }
  if (pick === storeSays) return;
  p.offset = BigInt(pick.offset);
  p.timestamp = BigInt(pick.timestamp);
  // The original batch's epoch is not in the index: none, so that no client validates against it.
  p.leaderEpoch = -1;
}
