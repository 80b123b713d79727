/**
 * The produce guard: Kafka refuses records without a key on a compacted topic, and a store that
 * cannot compact does not, so the proxy refuses them itself. A partition whose batch holds a
 * keyless record is answered with Kafka's INVALID_RECORD; the request's other partitions go on to
 * the upstream and the rejections are merged into its answer, in the request's order.
 */
import type { Logger } from '../../common/log.js';
import {
  ApiKey,
  type ApiKeyOf,
  type ProduceRequest,
  type ProduceRequestTopicProduceData,
  type ProduceResponse,
  type ProduceResponsePartitionProduceResponse,
  type ProduceResponseTopicProduceResponse,
} from '../../protocol/messages.js';
import type { Filter, FilterRequest, RequestContext, RequestOutcome } from '../../proxy/filter/filter.js';
import type { TopicIds } from '../../proxy/topic-ids.js';
import type { TopicConfigView } from '../../engine/api/topic-policy.js';
import { checkKeys } from './keyless-records.js';
import { keylessRejection, reservedHeaderRejection } from './rejection.js';

type Produce = ApiKeyOf<'Produce'>;

export interface ProduceGuardOptions {
  config: TopicConfigView;
  topicIds: TopicIds;
  log: Logger;
  /**
   * Teaches topicIds the names of ids it does not know, for a Produce v13 from a client whose
   * metadata predates this proxy process. Without it such topics pass unguarded.
   */
  resolveTopicIds?: (ids: string[]) => Promise<void>;
  /** A partition's log start offset, which Kafka reports in a rejection (v5+); -1 without it. */
  logStartOffset?: (topic: string, partition: number) => Promise<bigint>;
  /** A client writes the compacted partition (its index is built: IndexView.used). */
  used?: (topic: string, partition: number) => void;
}

export interface ProduceGuardStats {
  /** Partition batches refused for holding records without a key. */
  rejectedBatches: number;
  keylessRecords: number;
}

export interface ProduceGuard extends Filter {
  readonly stats: ProduceGuardStats;
}

const FIRST_TOPIC_ID_VERSION = 13;
const FIRST_LOG_START_VERSION = 5;

/** Rejected partitions by topic key (name, or id from v13), then by partition index. */
type Rejections = Map<string, Map<number, ProduceResponsePartitionProduceResponse>>;

export function createProduceGuard(opts: ProduceGuardOptions): ProduceGuard {
  const stats: ProduceGuardStats = { rejectedBatches: 0, keylessRecords: 0 };
  const log = opts.log.child({ component: 'produce-guard' });

  const topicKey = (t: ProduceRequestTopicProduceData, byId: boolean): string => (byId ? (t.topicId ?? '') : (t.name ?? ''));
  const topicName = (t: ProduceRequestTopicProduceData, byId: boolean): string | undefined => (byId ? opts.topicIds.name(t.topicId ?? '') : t.name);

  async function rejections(req: FilterRequest<Produce>, body: ProduceRequest, byId: boolean): Promise<Rejections> {
    const found: Rejections = new Map();
    const lookups: Promise<void>[] = [];
    for (const topic of body.topicData) {
      const name = topicName(topic, byId);
      if (name === undefined || !opts.config.compacted(name)) continue;
      for (const p of topic.partitionData) {
        opts.used?.(name, p.index);
        const check = await checkKeys(p.records, req.apiVersion);
        if (check.judge !== 'proxy' || (check.keyless.length === 0 && check.reserved.length === 0)) continue;
        const rejection =
          check.keyless.length > 0 ? keylessRejection(name, p.index, check.keyless, -1n) : reservedHeaderRejection(name, p.index, check.reserved, -1n);
        const key = topicKey(topic, byId);
        const byPartition = found.get(key) ?? new Map<number, ProduceResponsePartitionProduceResponse>();
        byPartition.set(p.index, rejection);
        found.set(key, byPartition);
        stats.rejectedBatches++;
        stats.keylessRecords += check.keyless.length;
        if (opts.logStartOffset && req.apiVersion >= FIRST_LOG_START_VERSION && req.expectsResponse) {
          lookups.push(
            opts.logStartOffset(name, p.index).then(
              (offset) => void (rejection.logStartOffset = offset),
              (err) => log.debug('log start offset lookup failed; rejecting with -1', { topic: name, partition: p.index, err }),
            ),
          );
        }
      }
    }
    await Promise.all(lookups);
    return found;
  }

  async function guard(req: FilterRequest<Produce>, ctx: RequestContext<Produce>, body: ProduceRequest, byId: boolean): Promise<RequestOutcome<Produce>> {
    const rejected = await rejections(req, body, byId);
    if (rejected.size === 0) return ctx.forward();
    const remaining = body.topicData
      .map((t) => ({ ...t, partitionData: t.partitionData.filter((p) => !rejected.get(topicKey(t, byId))?.has(p.index)) }))
      .filter((t) => t.partitionData.length > 0);
    if (!req.expectsResponse) {
      // Kafka appends an acks=0 request's valid partitions and closes the connection over the rest.
      const reason = 'acks=0 Produce holds records without a key for a compacted topic';
      if (remaining.length === 0) return ctx.close(reason);
      return ctx.forward({ body: { ...body, topicData: remaining }, closeAfter: reason });
    }
    if (remaining.length === 0) return ctx.respond(merge(body, { responses: [], throttleTimeMs: 0 }, rejected, byId));
    return ctx.forward({
      body: { ...body, topicData: remaining },
      response: (res, rctx) => rctx.forward(merge(body, res.body, rejected, byId)),
    });
  }

  /**
   * The upstream's answer with the rejections added, topics and partitions in request order.
   * (Kafka lists partitions in the order of a hash map of its own; clients match them by name.)
   */
  function merge(request: ProduceRequest, answer: ProduceResponse, rejected: Rejections, byId: boolean): ProduceResponse {
    const upstreamTopics = new Map<string, ProduceResponseTopicProduceResponse>();
    for (const t of answer.responses) upstreamTopics.set(byId ? (t.topicId ?? '') : (t.name ?? ''), t);
    const responses: ProduceResponseTopicProduceResponse[] = [];
    for (const t of request.topicData) {
      const key = topicKey(t, byId);
      const ours = rejected.get(key);
      const theirs = upstreamTopics.get(key);
      upstreamTopics.delete(key);
      if (!ours) {
        if (theirs) responses.push(theirs);
        continue;
      }
      const partitions: ProduceResponsePartitionProduceResponse[] = [];
      for (const p of t.partitionData) {
        const answered = ours.get(p.index) ?? theirs?.partitionResponses.find((r) => r.index === p.index);
        if (answered) partitions.push(answered);
      }
      for (const r of theirs?.partitionResponses ?? []) if (!partitions.includes(r)) partitions.push(r);
      responses.push(byId ? { topicId: key, partitionResponses: partitions } : { name: key, partitionResponses: partitions });
    }
    for (const t of upstreamTopics.values()) responses.push(t);
    return { ...answer, responses };
  }

  function onRequest(req: FilterRequest<Produce>, ctx: RequestContext<Produce>): RequestOutcome<Produce> | Promise<RequestOutcome<Produce>> {
    // Without compacted topics the request is not even decoded: the produce path sees every byte.
    if (opts.config.compactedTopics().length === 0) return ctx.forward();
    const body = req.body;
    const byId = req.apiVersion >= FIRST_TOPIC_ID_VERSION;
    const unknownIds: string[] = [];
    let guarded = false;
    for (const t of body.topicData) {
      const name = topicName(t, byId);
      if (name === undefined) unknownIds.push(t.topicId ?? '');
      else if (opts.config.compacted(name)) guarded = true;
    }
    if (!guarded && (unknownIds.length === 0 || !opts.resolveTopicIds)) return ctx.forward();
    if (unknownIds.length === 0 || !opts.resolveTopicIds) return guard(req, ctx, body, byId);
    return opts.resolveTopicIds(unknownIds).then(
      () => guard(req, ctx, body, byId),
      (err) => {
        log.warn('cannot resolve topic ids of a Produce request; ids still unknown pass unguarded', { err });
        return guard(req, ctx, body, byId);
      },
    );
  }

  return { name: 'produce-guard', stats, apis: { [ApiKey.Produce]: { onRequest } } };
}
