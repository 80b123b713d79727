/**
 * The compacted view for share groups (KIP-932; docs/semantics.md, "Share groups"). The broker
 * picks what a member gets from a share partition and acquires it for that member: whole
 * batches, from the group's start offset on. The records of a compacted partition in a ShareFetch
 * answer go through the same view as Fetch answers (visible-records.ts): the cleaner's removed
 * records and kcompact's own carry records leave the batches, every survivor keeps its offset.
 * The acquired ranges stay as the broker gave them. An acquired offset with no record is a gap
 * to the member, as it is on Kafka where the cleaner left a gap inside a batch or between two:
 * every share consumer acknowledges such offsets with the GAP type, the broker archives them,
 * and the group's start offset moves past them as it would on Kafka.
 *
 * Nothing of the request changes: the broker keeps the share session and every acknowledgement.
 */
import type { Logger } from '../../ops/log.js';
import { ApiKey, type ApiKeyOf, type ShareFetchResponse } from '../../protocol/messages.js';
import type { Filter, FilterRequest, FilterResponse, RequestContext, RequestOutcome, ResponseContext, ResponseOutcome } from '../../proxy/filter/filter.js';
import type { TopicIds } from '../../proxy/topic-ids.js';
import { NOT_INDEXED, type IndexView } from '../index-view.js';
import type { TopicConfigView } from '../policy.js';
import { visibilityOf, visibleRecords } from './visible-records.js';

type ShareFetch = ApiKeyOf<'ShareFetch'>;

export interface ShareFetchViewOptions {
  config: TopicConfigView;
  index: IndexView;
  topicIds: TopicIds;
  /** Learns the names of topic ids the proxy has not seen in a Metadata answer yet. */
  resolveTopicIds: (ids: string[]) => Promise<void>;
  log: Logger;
}

export interface ShareFetchViewStats {
  /** Partitions of ShareFetch answers that held records of a compacted topic. */
  viewedPartitions: number;
  /** Records the view took out of them. */
  removedRecords: number;
  /** Batches that could not be read and went out as the store sent them. */
  corruptBatches: number;
}

export interface ShareFetchView extends Filter {
  readonly stats: ShareFetchViewStats;
}

export function createShareFetchView(opts: ShareFetchViewOptions): ShareFetchView {
  const log = opts.log.child({ component: 'share-fetch-view' });
  const stats: ShareFetchViewStats = { viewedPartitions: 0, removedRecords: 0, corruptBatches: 0 };

  /** A compacted topic's name for an id, or undefined. */
  const compactedName = (id: string): string | undefined => {
    const name = opts.topicIds.name(id);
    return name !== undefined && opts.config.compacted(name) ? name : undefined;
  };

  function onRequest(req: FilterRequest<ShareFetch>, ctx: RequestContext<ShareFetch>): RequestOutcome<ShareFetch> {
    if (opts.config.compactedTopics().length === 0) return ctx.forward();
    // A share session's later requests may name no partition: the answer says which ones it holds.
    for (const t of req.body.topics) {
      const name = compactedName(t.topicId);
      if (name !== undefined) for (const p of t.partitions) opts.index.used(name, p.partitionIndex);
    }
    return ctx.forward({ response: filterResponse });
  }

  async function filterResponse(res: FilterResponse<ShareFetch>, ctx: ResponseContext<ShareFetch>): Promise<ResponseOutcome<ShareFetch>> {
    const body: ShareFetchResponse = res.body;
    const withRecords = body.responses.filter((t) => t.partitions.some((p) => p.records && p.records.length > 0));
    if (withRecords.length === 0) return ctx.forward();
    const unknown = withRecords.map((t) => t.topicId).filter((id) => opts.topicIds.name(id) === undefined);
    if (unknown.length > 0) {
      await opts.resolveTopicIds(unknown).catch((err: unknown) => {
        log.warn('cannot resolve the topic ids of a ShareFetch answer; ids still unknown are not filtered', { err });
      });
    }
    let changed = false;
    for (const t of withRecords) {
      const name = compactedName(t.topicId);
      if (name === undefined) continue;
      for (const p of t.partitions) {
        if (!p.records || p.records.length === 0) continue;
        opts.index.used(name, p.partitionIndex);
        // Not indexed yet: nothing is hidden but kcompact's own carry records, as in Kafka's uncleaned head.
        const view = opts.index.partition(name, p.partitionIndex) ?? NOT_INDEXED;
        const seen = await visibleRecords(p.records, visibilityOf(view), 0);
        stats.viewedPartitions++;
        if (seen.corrupt) {
          stats.corruptBatches++;
          log.warn('a share-fetched batch could not be read; passed on unfiltered', { topic: name, partition: p.partitionIndex, reason: seen.corrupt });
        }
        if (!seen.changed) continue;
        stats.removedRecords += seen.removedRecords;
        const parts = seen.batches;
        if (seen.trailingEmpty) parts.push(seen.trailingEmpty);
        if (seen.truncatedTail.length > 0) parts.push(seen.truncatedTail);
        p.records = Buffer.concat(parts);
        changed = true;
      }
    }
    return changed ? ctx.forward(body) : ctx.forward();
  }

  return { name: 'share-fetch-view', apis: { [ApiKey.ShareFetch]: { onRequest } }, stats };
}
