/**
 * ListOffsets of carried partitions (docs/carrying.md): the store's log start is where the
 * copies' pass let the history go, not the compacted topic's own log start, which is what Kafka
 * answers for the earliest offset (0 for a compact-only topic). Other lookups pass as the store
 * answers them.
 */
import { ApiKey, type ApiKeyOf } from '../../protocol/messages.js';
import type { Filter, FilterRequest, RequestContext, RequestOutcome } from '../../proxy/filter/filter.js';
import type { IndexView } from '../index-view.js';
import type { TopicConfigView } from '../policy.js';

type ListOffsets = ApiKeyOf<'ListOffsets'>;

/** ListOffsets' special timestamps: the earliest offset, and the earliest held locally (KIP-405). */
const EARLIEST = -2n;
const EARLIEST_LOCAL = -4n;

export interface ListOffsetsViewOptions {
  config: TopicConfigView;
  index: IndexView;
}

const key = (topic: string, partition: number) => `${partition}\u0000${topic}`;

export function createListOffsetsView(opts: ListOffsetsViewOptions): Filter {
  function onRequest(req: FilterRequest<ListOffsets>, ctx: RequestContext<ListOffsets>): RequestOutcome<ListOffsets> {
    if (opts.config.compactedTopics().length === 0) return ctx.forward();
    const starts = new Map<string, number>();
    for (const t of req.body.topics) {
      if (!opts.config.compacted(t.name)) continue;
      for (const p of t.partitions) {
        if (p.timestamp !== EARLIEST && p.timestamp !== EARLIEST_LOCAL) continue;
        const carried = opts.index.partition(t.name, p.partitionIndex)?.carried();
        if (carried) starts.set(key(t.name, p.partitionIndex), carried.topicStart);
      }
    }
    if (starts.size === 0) return ctx.forward();
    return ctx.forward({
      response: (res, rctx) => {
        let changed = false;
        for (const t of res.body.topics) {
          for (const p of t.partitions) {
            const start = starts.get(key(t.name, p.partitionIndex));
            if (start === undefined || p.errorCode !== 0) continue;
            p.offset = BigInt(start);
            changed = true;
          }
        }
        return changed ? rctx.forward(res.body) : rctx.forward();
      },
    });
  }

  return { name: 'list-offsets-view', apis: { [ApiKey.ListOffsets]: { minVersion: 1, onRequest } } };
}
