/**
 * The produce guard: Kafka refuses records without a key on a compacted topic, and a store that
 * cannot compact does not, so the proxy refuses them itself. A partition whose batch holds a
 * keyless record is answered with Kafka's INVALID_RECORD; the request's other partitions go on to
 * the upstream and the rejections are merged into its answer, in the request's order.
 */
import type { Logger } from '../../ops/log.js';
import { ApiKey, decodeResponse, encodeRequestFrame, encodeResponseFrame } from '../../protocol/messages.js';
import { decodeResponseHeader, responseHeaderVersion } from '../../protocol/headers.js';
import type { InterceptedRequest, Interception, RequestInterceptor } from '../../proxy/interceptor.js';
import type { TopicIds } from '../../proxy/topic-ids.js';
import type { TopicConfigView } from '../policy.js';
import { checkKeys } from './keyless-records.js';
import { keylessRejection, type PartitionProduceResponse } from './rejection.js';

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
}

export interface ProduceGuardStats {
  /** Partition batches refused for holding records without a key. */
  rejectedBatches: number;
  keylessRecords: number;
}

export interface ProduceGuard extends RequestInterceptor {
  readonly stats: ProduceGuardStats;
}

interface ProducePartition {
  index: number;
  records: Buffer | null;
}

interface ProduceTopic {
  name?: string;
  topicId?: string;
  partitionData: ProducePartition[];
}

interface ProduceRequestBody {
  topicData: ProduceTopic[];
  [field: string]: unknown;
}

interface ProduceTopicResponse {
  name?: string;
  topicId?: string;
  partitionResponses: PartitionProduceResponse[];
}

interface ProduceResponseBody {
  responses: ProduceTopicResponse[];
  [field: string]: unknown;
}

const FIRST_TOPIC_ID_VERSION = 13;
const FIRST_LOG_START_VERSION = 5;
const FORWARD: Interception = { forward: true };

/** Rejected partitions by topic key (name, or id from v13), then by partition index. */
type Rejections = Map<string, Map<number, PartitionProduceResponse>>;

export function createProduceGuard(opts: ProduceGuardOptions): ProduceGuard {
  const stats: ProduceGuardStats = { rejectedBatches: 0, keylessRecords: 0 };
  const log = opts.log.child({ component: 'produce-guard' });

  const topicKey = (t: ProduceTopic, byId: boolean): string => (byId ? (t.topicId ?? '') : (t.name ?? ''));
  const topicName = (t: ProduceTopic, byId: boolean): string | undefined => (byId ? opts.topicIds.name(t.topicId ?? '') : t.name);

  async function rejections(req: InterceptedRequest, body: ProduceRequestBody, byId: boolean): Promise<Rejections> {
    const found: Rejections = new Map();
    const lookups: Promise<void>[] = [];
    for (const topic of body.topicData) {
      const name = topicName(topic, byId);
      if (name === undefined || !opts.config.compacted(name)) continue;
      for (const p of topic.partitionData) {
        const check = await checkKeys(p.records, req.apiVersion);
        if (check.judge !== 'proxy' || check.keyless.length === 0) continue;
        const rejection = keylessRejection(name, p.index, check.keyless, -1n);
        const key = topicKey(topic, byId);
        const byPartition = found.get(key) ?? new Map<number, PartitionProduceResponse>();
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

  async function guard(req: InterceptedRequest, body: ProduceRequestBody, byId: boolean): Promise<Interception> {
    const rejected = await rejections(req, body, byId);
    if (rejected.size === 0) return FORWARD;
    const remaining = body.topicData
      .map((t) => ({ ...t, partitionData: t.partitionData.filter((p) => !rejected.get(topicKey(t, byId))?.has(p.index)) }))
      .filter((t) => t.partitionData.length > 0);
    if (!req.expectsResponse) {
      // Kafka appends an acks=0 request's valid partitions and closes the connection over the rest.
      const reason = 'acks=0 Produce holds records without a key for a compacted topic';
      if (remaining.length === 0) return { close: reason };
      return { forward: true, frame: reencode(req, { ...body, topicData: remaining }), closeAfter: reason };
    }
    if (remaining.length === 0) {
      const answer = merge(body, { responses: [], throttleTimeMs: 0 }, rejected, byId);
      return { respond: encodeResponseFrame(ApiKey.Produce, req.apiVersion, req.correlationId, answer) };
    }
    return {
      forward: true,
      frame: reencode(req, { ...body, topicData: remaining }),
      response: (upstream) => {
        const header = decodeResponseHeader(upstream.subarray(4), responseHeaderVersion(ApiKey.Produce, req.apiVersion));
        const answer = decodeResponse<ProduceResponseBody>(ApiKey.Produce, req.apiVersion, upstream, 4 + header.bodyOffset);
        return encodeResponseFrame(ApiKey.Produce, req.apiVersion, req.correlationId, merge(body, answer, rejected, byId));
      },
    };
  }

  /**
   * The upstream's answer with the rejections added, topics and partitions in request order.
   * (Kafka lists partitions in the order of a hash map of its own; clients match them by name.)
   */
  function merge(request: ProduceRequestBody, answer: ProduceResponseBody, rejected: Rejections, byId: boolean): ProduceResponseBody {
    const upstreamTopics = new Map<string, ProduceTopicResponse>();
    for (const t of answer.responses) upstreamTopics.set(byId ? (t.topicId ?? '') : (t.name ?? ''), t);
    const responses: ProduceTopicResponse[] = [];
    for (const t of request.topicData) {
      const key = topicKey(t, byId);
      const ours = rejected.get(key);
      const theirs = upstreamTopics.get(key);
      upstreamTopics.delete(key);
      if (!ours) {
        if (theirs) responses.push(theirs);
        continue;
      }
      const partitions: PartitionProduceResponse[] = [];
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

  return {
    stats,
    intercept(req: InterceptedRequest): Interception | Promise<Interception> {
      if (opts.config.compactedTopics().length === 0) return FORWARD;
      const body = req.body<ProduceRequestBody>();
      const byId = req.apiVersion >= FIRST_TOPIC_ID_VERSION;
      const unknownIds: string[] = [];
      let guarded = false;
      for (const t of body.topicData) {
        const name = topicName(t, byId);
        if (name === undefined) unknownIds.push(t.topicId ?? '');
        else if (opts.config.compacted(name)) guarded = true;
      }
      if (!guarded && (unknownIds.length === 0 || !opts.resolveTopicIds)) return FORWARD;
      if (unknownIds.length === 0 || !opts.resolveTopicIds) return guard(req, body, byId);
      return opts.resolveTopicIds(unknownIds).then(
        () => guard(req, body, byId),
        (err) => {
          log.warn('cannot resolve topic ids of a Produce request; ids still unknown pass unguarded', { err });
          return guard(req, body, byId);
        },
      );
    },
  };
}

function reencode(req: InterceptedRequest, body: ProduceRequestBody): Buffer {
  return encodeRequestFrame(
    { apiKey: req.apiKey, apiVersion: req.apiVersion, correlationId: req.correlationId, clientId: req.header.clientId, unknownTags: req.header.unknownTags },
    body,
  );
}
