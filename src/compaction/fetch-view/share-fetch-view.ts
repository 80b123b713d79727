/**
 * The compacted view for share groups (KIP-932; docs/semantics.md, "Share groups"). The broker
 * picks what a member gets from a share partition and acquires it for that member: whole
 * batches, from the group's start offset on. The records of a compacted partition in a ShareFetch
 * answer go through the same view as Fetch answers (visible-records.ts): the cleaner's removed
 * records and kcompact's own carry records leave the batches, every survivor keeps its offset.
 * The acquired ranges stay as the broker gave them. An acquired offset with no record is a gap
 * to the member, as it is on Kafka where the cleaner left a gap inside a batch or between two:
 * every share consumer acknowledges such offsets with the GAP type, the broker archives them,
 * and the group's start offset moves past them as it would on Kafka. No empty batch goes with
 * them: a share consumer learns the gaps from the acquired ranges, not from where its last batch
 * ended. An answer that holds nothing for the member goes as one that acquired nothing, and the
 * proxy acknowledges those offsets as gaps itself (share-gap-acks.ts).
 *
 * On a carried partition, a group new to it since a pass let its range go also gets the
 * survivors of that range from the pass's copies, at their original offsets (share-copies.ts);
 * its acknowledgements of them become those of the copies (copy-acks.ts). Nothing else of a
 * request changes: the broker keeps the share session and every other acknowledgement.
 */
import { ErrorCode } from '../../protocol/errors.js';
import { ByteParts, putRecords } from '../../protocol/wire/byte-parts.js';
import type { Logger } from '../../common/log.js';
import { ApiKey, type ApiKeyOf, type ShareAcknowledgeResponse, type ShareFetchResponse } from '../../protocol/messages.js';
import { CopyAcks, type AckBatch } from './copy-acks.js';
import { sharedCopies, type AcquiredRange, type SharedCopies } from './share-copies.js';
import { GapAcks, hiddenOutcome, type GapsSent } from './share-gap-acks.js';
import type { Filter, FilterRequest, FilterResponse, RequestContext, RequestOutcome, ResponseContext, ResponseOutcome } from '../../proxy/filter/filter.js';
import type { TopicIds } from '../../proxy/topic-ids.js';
import { NOT_INDEXED, type IndexView } from '../../engine/api/index-view.js';
import { partitionKey } from '../../engine/api/partition-key.js';
import type { TopicConfigView } from '../../engine/api/topic-policy.js';
import { visibilityOf, visibleRecords } from './visible-records.js';

type ShareFetch = ApiKeyOf<'ShareFetch'>;
type ShareAcknowledge = ApiKeyOf<'ShareAcknowledge'>;

/** How long an answer holding copies of a pass the index knows no release of waits for the index to read the store. */
const RELEASE_WAIT_MS = 2_000;

export interface ShareFetchViewOptions {
  config: TopicConfigView;
  index: IndexView;
  topicIds: TopicIds;
  /** Learns the names of topic ids the proxy has not seen in a Metadata answer yet. */
  resolveTopicIds: (ids: string[]) => Promise<void>;
  /** The store's log start of a partition (ListOffsets EARLIEST). */
  logStartOffset: (topic: string, partition: number) => Promise<bigint>;
  log: Logger;
}

export interface ShareFetchViewStats {
  /** Partitions of ShareFetch answers that held records of a compacted topic. */
  viewedPartitions: number;
  /** Records the view took out of them. */
  removedRecords: number;
  /** Batches that could not be read and went out as the store sent them. */
  corruptBatches: number;
  /** Carried copies whose survivors went to a share group new to the partition, and those records. */
  copiesUnpacked: number;
  copiedRecords: number;
  /** Copies left out of the acquired ranges, as this replica could not tell yet what they owe the group. */
  copiesWithheld: number;
  /** Answers of a partition that held nothing for the member, which went to it as acquiring nothing. */
  emptiedAnswers: number;
}

export interface ShareFetchView extends Filter {
  readonly stats: ShareFetchViewStats;
  readonly copyAcks: CopyAcks;
  readonly gapAcks: GapAcks;
}

const NO_RECORDS = Buffer.alloc(0);

type AckTopics = { topicId: string; partitions: { partitionIndex: number; acknowledgementBatches: AckBatch[] }[] }[];

export function createShareFetchView(opts: ShareFetchViewOptions): ShareFetchView {
  const log = opts.log.child({ component: 'share-fetch-view' });
  const stats: ShareFetchViewStats = {
    viewedPartitions: 0,
    removedRecords: 0,
    corruptBatches: 0,
    copiesUnpacked: 0,
    copiedRecords: 0,
    copiesWithheld: 0,
    emptiedAnswers: 0,
  };
  const copyAcks = new CopyAcks();
  const gapAcks = new GapAcks();
  /** Partitions whose withheld copies were logged (once each). */
  const withheldSaid = new Set<string>();

  /** A compacted topic's name for an id, or undefined. */
  const compactedName = (id: string): string | undefined => {
    const name = opts.topicIds.name(id);
    return name !== undefined && opts.config.compacted(name) ? name : undefined;
  };

  /**
   * The member's acknowledgements of records it got from copies become those of the copies, in
   * ShareFetch and ShareAcknowledge alike; true when any changed.
   */
  function translateAcks(
    group: string | null,
    member: string | null,
    topics: readonly { topicId: string; partitions: readonly { partitionIndex: number; acknowledgementBatches: AckBatch[] }[] }[],
  ): boolean {
    if (group === null || member === null || copyAcks.size === 0) return false;
    let changed = false;
    for (const t of topics) {
      for (const p of t.partitions) {
        if (p.acknowledgementBatches.length === 0 || !copyAcks.holds(group, member, t.topicId, p.partitionIndex)) continue;
        p.acknowledgementBatches = copyAcks.translate(group, member, t.topicId, p.partitionIndex, p.acknowledgementBatches);
        changed = true;
      }
    }
    return changed;
  }

  /**
   * Adds the gaps owed to the member on this connection to its request (share-gap-acks.ts), when
   * the request may carry them: Kafka refuses acknowledgements in the request opening a share
   * session, and a ShareFetch closing one that names a partition. They wait for the next one
   * then: the acquisitions are the member's, not the session's.
   */
  function addOwedGaps(connection: object, group: string | null, member: string | null, topics: AckTopics, mayAcknowledge: boolean): GapsSent[] {
    if (group === null || member === null || !gapAcks.owesOn(connection) || !mayAcknowledge) return [];
    return gapAcks.addTo(topics, gapAcks.take(connection, group, member));
  }

  function onRequest(req: FilterRequest<ShareFetch>, ctx: RequestContext<ShareFetch>): RequestOutcome<ShareFetch> {
    if (opts.config.compactedTopics().length === 0 && !gapAcks.owesOn(req.connection)) return ctx.forward();
    const body = req.body;
    const group = body.groupId;
    const member = body.memberId;
    // A share session's later requests may name no partition: the answer says which ones it holds.
    for (const t of body.topics) {
      const name = compactedName(t.topicId);
      if (name !== undefined) for (const p of t.partitions) opts.index.used(name, p.partitionIndex);
    }
    let changed = translateAcks(group, member, body.topics);
    if (group !== null && member !== null) {
      for (const t of body.forgottenTopicsData) for (const p of t.partitions) gapAcks.forget(req.connection, group, member, t.topicId, p);
    }
    const gaps = addOwedGaps(req.connection, group, member, body.topics, body.shareSessionEpoch > 0);
    if (gaps.length > 0) changed = true;
    if (body.shareSessionEpoch === -1 && group !== null && member !== null) {
      copyAcks.closed(group, member);
      gapAcks.closed(req.connection, group, member);
    }
    const connection = req.connection;
    return ctx.forward({
      ...(changed && { body }),
      response: (res, rctx) => filterResponse(res, rctx, connection, group, member, gaps),
    });
  }

  function onAcknowledge(req: FilterRequest<ShareAcknowledge>, ctx: RequestContext<ShareAcknowledge>): RequestOutcome<ShareAcknowledge> {
    const body = req.body;
    const group = body.groupId;
    const member = body.memberId;
    const translated = translateAcks(group, member, body.topics);
    const gaps = addOwedGaps(req.connection, group, member, body.topics, body.shareSessionEpoch !== 0);
    if (body.shareSessionEpoch === -1 && group !== null && member !== null) {
      copyAcks.closed(group, member);
      gapAcks.closed(req.connection, group, member);
    }
    if (gaps.length === 0) return translated ? ctx.forward({ body }) : ctx.forward();
    return ctx.forward({ body, response: (res, rctx) => hideGapOutcomes(res.body, rctx, group, gaps) });
  }

  /** The outcome of owed gaps leaves a ShareAcknowledge answer where the member acknowledged nothing of the partition. */
  function hideGapOutcomes(
    body: ShareAcknowledgeResponse,
    ctx: ResponseContext<ShareAcknowledge>,
    group: string | null,
    gaps: readonly GapsSent[],
  ): ResponseOutcome<ShareAcknowledge> {
    let changed = false;
    for (const t of body.responses) {
      const before = t.partitions.length;
      t.partitions = t.partitions.filter((p) => {
        if (!hiddenOutcome(gaps, t.topicId, p.partitionIndex)) return true;
        if (p.errorCode !== ErrorCode.NONE) gapsRefused(group, t.topicId, p.partitionIndex, p.errorCode, p.errorMessage);
        return false;
      });
      if (t.partitions.length !== before) changed = true;
    }
    if (!changed) return ctx.forward();
    body.responses = body.responses.filter((t) => t.partitions.length > 0);
    return ctx.forward(body);
  }

  /** The same for a ShareFetch answer; true when it changed. */
  function hideFetchGapOutcomes(body: ShareFetchResponse, group: string | null, gaps: readonly GapsSent[]): boolean {
    if (gaps.length === 0) return false;
    let changed = false;
    for (const t of body.responses) {
      const before = t.partitions.length;
      t.partitions = t.partitions.filter((p) => {
        if (!hiddenOutcome(gaps, t.topicId, p.partitionIndex)) return true;
        if (p.acknowledgeErrorCode !== 0) gapsRefused(group, t.topicId, p.partitionIndex, p.acknowledgeErrorCode, p.acknowledgeErrorMessage);
        changed = true;
        p.acknowledgeErrorCode = 0;
        p.acknowledgeErrorMessage = null;
        // An entry the broker made for the acknowledgement alone: the member asked nothing of it.
        return p.errorCode !== ErrorCode.NONE || (p.records && p.records.length > 0) || p.acquiredRecords.length > 0;
      });
      if (t.partitions.length !== before) changed = true;
    }
    if (changed) body.responses = body.responses.filter((t) => t.partitions.length > 0);
    return changed;
  }

  /** The broker delivers offsets whose gaps it refused again once their lock runs out, and they are owed again. */
  function gapsRefused(group: string | null, topicId: string, partition: number, errorCode: number, errorMessage: string | null): void {
    log.debug('the store refused gaps acknowledged for a share group member; it delivers those offsets again', {
      group,
      topic: opts.topicIds.name(topicId) ?? topicId,
      partition,
      errorCode,
      errorMessage,
    });
  }

  async function filterResponse(
    res: FilterResponse<ShareFetch>,
    ctx: ResponseContext<ShareFetch>,
    connection: object,
    group: string | null,
    member: string | null,
    gaps: readonly GapsSent[],
  ): Promise<ResponseOutcome<ShareFetch>> {
    const body: ShareFetchResponse = res.body;
    const hidden = hideFetchGapOutcomes(body, group, gaps);
    const withRecords = body.responses.filter((t) => t.partitions.some((p) => p.records && p.records.length > 0));
    if (withRecords.length === 0) return hidden ? ctx.forward(body) : ctx.forward();
    const unknown = withRecords.map((t) => t.topicId).filter((id) => opts.topicIds.name(id) === undefined);
    if (unknown.length > 0) {
      await opts.resolveTopicIds(unknown).catch((err: unknown) => {
        log.warn('cannot resolve the topic ids of a ShareFetch answer; ids still unknown are not filtered', { err });
      });
    }
    let changed = hidden;
    for (const t of withRecords) {
      const name = compactedName(t.topicId);
      if (name === undefined) continue;
      for (const p of t.partitions) {
        if (!p.records || p.records.length === 0) continue;
        opts.index.used(name, p.partitionIndex);
        const copies = group !== null && member !== null ? await copiesFor(name, p.partitionIndex, p.records, p.acquiredRecords, group) : undefined;
        // Not indexed yet: nothing is hidden but kcompact's own carry records, as in Kafka's uncleaned head.
        const view = opts.index.partition(name, p.partitionIndex) ?? NOT_INDEXED;
        const visibility = visibilityOf(view);
        const seen = await visibleRecords(p.records, visibility, 0);
        if (seen.withheld && visibility.judgedTo !== undefined) {
          // Not judged yet (docs/tables.md): left acquired and undelivered, the broker delivers them again.
          p.acquiredRecords = acquiredBelow(p.acquiredRecords, visibility.judgedTo);
          changed = true;
        }
        stats.viewedPartitions++;
        if (seen.corrupt) {
          stats.corruptBatches++;
          log.warn('a share-fetched batch could not be read; passed on unfiltered', { topic: name, partition: p.partitionIndex, reason: seen.corrupt });
        }
        if (copies && (copies.unpacked.length > 0 || copies.withheld.length > 0)) {
          for (const u of copies.unpacked) copyAcks.delivered(group!, member!, t.topicId, p.partitionIndex, u.copy, u.offsets);
          stats.copiesUnpacked += copies.unpacked.length;
          stats.copiedRecords += copies.unpacked.reduce((n, u) => n + u.offsets.length, 0);
          stats.copiesWithheld += copies.withheld.length;
          if (copies.withheld.length > 0 && !withheldSaid.has(partitionKey(name, p.partitionIndex))) {
            withheldSaid.add(partitionKey(name, p.partitionIndex));
            log.info('copies of a pass this replica cannot judge yet are withheld from a share group; the broker delivers them again', {
              topic: name,
              partition: p.partitionIndex,
              group,
              copies: copies.withheld,
            });
          }
          p.acquiredRecords = copies.acquired;
          changed = true;
        }
        if (!seen.changed && !copies?.unpacked.length) continue;
        stats.removedRecords += seen.removedRecords;
        changed = true;
        const kept = [...(copies?.batches ?? []), ...seen.batches];
        if (kept.length === 0 && seen.corrupt === null && group !== null && member !== null && !seen.withheld) {
          // Nothing for the member: Kafka would have acquired none of it (share-gap-acks.ts). A
          // cut-off batch past the acquired ranges goes too: librdkafka would grow its fetch size on it.
          gapAcks.owe(connection, group, member, t.topicId, p.partitionIndex, p.acquiredRecords, body.acquisitionLockTimeoutMs);
          p.acquiredRecords = [];
          p.records = NO_RECORDS;
          stats.emptiedAnswers++;
          continue;
        }
        if (seen.truncatedTail.length > 0) kept.push(seen.truncatedTail);
        // Views of the store's answer, going out as they are.
        putRecords(p, ByteParts.of(kept));
      }
    }
    return changed ? ctx.forward(body) : ctx.forward();
  }

  /** What the group gets from the copies in the answer, once the index has read the releases of their passes (share-copies.ts). */
  async function copiesFor(topic: string, partition: number, records: Buffer, acquired: AcquiredRange[], group: string): Promise<SharedCopies | undefined> {
    try {
      const logStart = async () => Number(await opts.logStartOffset(topic, partition));
      const copies = await sharedCopies(records, acquired, group, opts.index.partition(topic, partition), false, logStart);
      if (!copies?.unknownPass) return copies;
      const settled = await opts.index.caughtUp(topic, partition, RELEASE_WAIT_MS).catch(() => false);
      return await sharedCopies(records, acquired, group, opts.index.partition(topic, partition), settled, logStart);
    } catch (err) {
      log.warn('cannot read the carried copies of a ShareFetch answer; the group gets none of their records', { topic, partition, err });
      return undefined;
    }
  }

  return {
    name: 'share-fetch-view',
    apis: { [ApiKey.ShareFetch]: { onRequest }, [ApiKey.ShareAcknowledge]: { onRequest: onAcknowledge } },
    stats,
    copyAcks,
    gapAcks,
  };
}

/** The acquired ranges below `end`, the one reaching it cut there. */
function acquiredBelow(ranges: AcquiredRange[], end: number): AcquiredRange[] {
  const out: AcquiredRange[] = [];
  for (const r of ranges) {
    if (Number(r.firstOffset) >= end) continue;
    out.push(Number(r.lastOffset) < end ? r : { ...r, lastOffset: BigInt(end - 1) });
  }
  return out;
}
