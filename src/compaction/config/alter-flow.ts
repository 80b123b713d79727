/**
 * What AlterConfigs and IncrementalAlterConfigs share once each resource is planned: refusals
 * are answered here, the rest goes upstream (rewritten), and a topic's owned configs are stored
 * only after the upstream accepted its part, so a refused alter changes nothing. The store's
 * segments of a compact-only topic follow in a request of their own (store-segments.ts). Answers
 * come back in request order.
 */
import { ErrorCode } from '../../protocol/errors.js';
import { ConfigResourceType } from '../../protocol/config-resource.js';
import type { AlterConfigsRequestResource, AlterConfigsResponseResourceResponse } from '../../protocol/messages.js';
import type { ConfigContext } from './config-context.js';
import type { TopicOverrides } from './effective-policy.js';
import { storeFailed, type Refusal } from './refusals.js';
import { refusedRetention, retentionRefused } from './retention-limits.js';
import { cappedRefusal } from './capped-retention.js';
import { topicIdFor, upstreamRetentionOf } from './upstream-admin.js';

/** What both APIs' resources have in common. */
export type AlterResource = Pick<AlterConfigsRequestResource, 'resourceType' | 'resourceName'>;

/** A resource's answer; IncrementalAlterConfigs' has the same fields. */
export type AlterResult = AlterConfigsResponseResourceResponse;

export type ResourcePlan<R extends AlterResource> =
  | { refused: Refusal }
  | {
      forward: R;
      store?: { topic: string; overrides: TopicOverrides };
      /** A compact-only topic's change without the retention limits, for a store that refuses them (capped-retention.ts). */
      withoutRetention?: R;
    };

/** Sends one resource's change to the upstream again, as the API at hand does. */
export type Resend<R extends AlterResource> = (resource: R, validateOnly: boolean) => Promise<AlterResult | undefined>;

/**
 * What becomes of the request: answered here when every resource was refused, else forwarded
 * with the resources that go on, the upstream's results then merged into the client's answer.
 */
export type AlterRun<R extends AlterResource> = { answer: AlterResult[] } | { forward: R[]; merge(upstream: readonly AlterResult[]): Promise<AlterResult[]> };

/** Topic resources named more than once: Kafka refuses each of them. */
export function repeatedTopics(resources: readonly AlterResource[]): Set<string> {
  const seen = new Set<string>();
  const repeated = new Set<string>();
  for (const r of resources) {
    if (r.resourceType !== ConfigResourceType.TOPIC) continue;
    if (seen.has(r.resourceName)) repeated.add(r.resourceName);
    seen.add(r.resourceName);
  }
  return repeated;
}

export const REPEATED_RESOURCE: Refusal = { errorCode: ErrorCode.INVALID_REQUEST, errorMessage: 'Each resource must appear at most once.' };

export function routeAlter<R extends AlterResource>(
  ctx: ConfigContext,
  body: { resources: readonly R[]; validateOnly: boolean },
  plans: readonly ResourcePlan<R>[],
  resend: Resend<R>,
): AlterRun<R> {
  const forwarded = plans.flatMap((p) => ('forward' in p ? [p.forward] : []));
  const refusedResult = (r: AlterResource, refusal: Refusal): AlterResult => ({ ...refusal, resourceType: r.resourceType, resourceName: r.resourceName });
  if (forwarded.length === 0) {
    return { answer: plans.map((p, i) => refusedResult(body.resources[i]!, (p as { refused: Refusal }).refused)) };
  }
  return {
    forward: forwarded,
    merge: async (upstream) => {
      const queues = new Map<string, AlterResult[]>();
      for (const r of upstream) {
        const key = `${r.resourceType}:${r.resourceName}`;
        queues.set(key, [...(queues.get(key) ?? []), r]);
      }
      const responses: AlterResult[] = [];
      for (let i = 0; i < plans.length; i++) {
        const p = plans[i]!;
        const resource = body.resources[i]!;
        if ('refused' in p) {
          responses.push(refusedResult(resource, p.refused));
          continue;
        }
        let result = queues.get(`${resource.resourceType}:${resource.resourceName}`)?.shift();
        if (result && result.errorCode !== ErrorCode.NONE && p.withoutRetention && p.store && refusedRetention(result.errorMessage)) {
          result = await withStoreRetention(ctx, p.store, p.withoutRetention, result, body.validateOnly, resend);
        }
        if (!result) {
          responses.push(refusedResult(resource, { errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, errorMessage: 'the upstream did not answer for this resource' }));
          continue;
        }
        if (result.errorCode === ErrorCode.NONE && p.store && !body.validateOnly) {
          const failure = await store(ctx, p.store.topic, p.store.overrides);
          if (failure) Object.assign(result, failure);
        }
        // A whole-state alter drops the store's segment overrides, and a changed policy or segment
        // config changes them: put them in line (store-segments.ts) before the client hears back.
        if (result.errorCode === ErrorCode.NONE && resource.resourceType === ConfigResourceType.TOPIC && !body.validateOnly) {
          await ctx.storeSegments?.settle(resource.resourceName);
        }
        responses.push(result);
      }
      for (const rest of queues.values()) for (const r of rest) responses.push(r);
      return responses;
    },
  };
}

/**
 * A compact-only change the store refused for its retention, sent again without it: the topic
 * keeps the store's own retention, and stays compact-only only if carrying outruns it. When it
 * cannot, the upstream part of the change is applied and the compaction configs are not.
 */
async function withStoreRetention<R extends AlterResource>(
  ctx: ConfigContext,
  target: { topic: string; overrides: TopicOverrides },
  retry: R,
  refused: AlterResult,
  validateOnly: boolean,
  resend: Resend<R>,
): Promise<AlterResult> {
  const again = await resend(retry, validateOnly).catch((err: unknown) => ctx.log.debug('altering without retention failed', { topic: target.topic, err }));
  if (!again || again.errorCode !== ErrorCode.NONE) return { ...refused, errorMessage: retentionRefused(target.topic, refused.errorMessage) };
  if (validateOnly) return again;
  const got = await upstreamRetentionOf(ctx, target.topic).catch(() => null);
  const refusal = got && cappedRefusal(ctx, target.topic, target.overrides, got);
  if (!refusal) return again;
  return {
    ...again,
    errorCode: ErrorCode.INVALID_CONFIG,
    errorMessage: `${refusal}; the change's other configs were applied upstream, its compaction configs were not`,
  };
}

async function store(ctx: ConfigContext, topic: string, overrides: TopicOverrides): Promise<Refusal | null> {
  const hasOverrides = Object.keys(overrides).length > 0;
  if (!hasOverrides && !ctx.state.entry(topic)?.configs) return null;
  try {
    await ctx.sync.write(topic, hasOverrides ? { topicId: await topicIdFor(ctx, topic), configs: { ...overrides } } : null);
    return null;
  } catch (err) {
    return storeFailed(topic, err, 'the upstream part of the change was applied; retry the request');
  }
}
