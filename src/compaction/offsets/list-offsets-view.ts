/**
 * ListOffsets of carried partitions (docs/carrying.md). The store's log start is where a pass let
 * the history go, not the compacted topic's own log start, which is what Kafka answers for the
 * earliest offset (0 for a compact-only topic). And the store sees the copies with the time of
 * carrying, so its answers by timestamp could name a copy's offset: those come from the index,
 * which holds the original timestamps (offsets-by-time.ts), and the store answers only for the
 * records past the index. The latest offset passes as the store answers it.
 */
import { ApiKey, type ApiKeyOf, type ListOffsetsResponsePartitionResponse } from '../../protocol/messages.js';
import type { Filter, FilterRequest, RequestContext, RequestOutcome } from '../../proxy/filter/filter.js';
import type { IndexView } from '../index-view.js';
import type { TopicConfigView } from '../policy.js';
import { MAX_TIMESTAMP, type OffsetAtTime } from './offsets-by-time.js';

type ListOffsets = ApiKeyOf<'ListOffsets'>;

/** ListOffsets' special timestamps: the earliest offset, and the earliest held locally (KIP-405). */
const EARLIEST = -2n;
const EARLIEST_LOCAL = -4n;

export interface ListOffsetsViewOptions {
  config: TopicConfigView;
  index: IndexView;
  /** The index's answer for a timestamp (the compaction engine's offsetForTime). */
  offsetForTime: (topic: string, partition: number, timestamp: number) => Promise<OffsetAtTime | null>;
}

type Asked = { kind: 'start'; start: number } | { kind: 'time'; timestamp: number };

const key = (topic: string, partition: number) => `${partition}\u0000${topic}`;

export function createListOffsetsView(opts: ListOffsetsViewOptions): Filter {
  function onRequest(req: FilterRequest<ListOffsets>, ctx: RequestContext<ListOffsets>): RequestOutcome<ListOffsets> {
    if (opts.config.compactedTopics().length === 0) return ctx.forward();
    const asked = new Map<string, Asked>();
    for (const t of req.body.topics) {
      if (!opts.config.compacted(t.name)) continue;
      for (const p of t.partitions) {
        const carried = opts.index.partition(t.name, p.partitionIndex)?.carried();
        if (!carried) continue;
        if (p.timestamp === EARLIEST || p.timestamp === EARLIEST_LOCAL) asked.set(key(t.name, p.partitionIndex), { kind: 'start', start: carried.topicStart });
        else if (p.timestamp >= 0n || p.timestamp === BigInt(MAX_TIMESTAMP))
          asked.set(key(t.name, p.partitionIndex), { kind: 'time', timestamp: Number(p.timestamp) });
      }
    }
    if (asked.size === 0) return ctx.forward();
    return ctx.forward({
      response: async (res, rctx) => {
        const lookups: Promise<void>[] = [];
        for (const t of res.body.topics) {
          for (const p of t.partitions) {
            const a = asked.get(key(t.name, p.partitionIndex));
            if (!a || p.errorCode !== 0) continue;
            if (a.kind === 'start') p.offset = BigInt(a.start);
            else lookups.push(opts.offsetForTime(t.name, p.partitionIndex, a.timestamp).then((answer) => byTime(p, a.timestamp, answer)));
          }
        }
        await Promise.all(lookups);
        return rctx.forward(res.body);
      },
    });
  }

  return { name: 'list-offsets-view', apis: { [ApiKey.ListOffsets]: { minVersion: 1, onRequest } } };
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
