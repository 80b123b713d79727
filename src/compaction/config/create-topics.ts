/**
 * CreateTopics (v2+). Each topic's owned configs are validated before anything reaches the
 * upstream; like Kafka, an invalid topic fails alone and the valid ones are created. The
 * upstream gets the topic without the configs only kcompact acts on, and with retention.ms and
 * retention.bytes at -1 when the policy lacks delete. Once the upstream has created a topic, its
 * configs are stored before the client hears of it; if that fails the topic is deleted again, so
 * a topic never exists upstream without its configs. On a replica that carries, a compact-only
 * topic's store segments are then set (store-segments.ts) before the client hears of it too. The
 * per-topic configs of the answer (v5+) are what Kafka would list.
 */
import { ErrorCode } from '../../protocol/errors.js';
import {
  ApiKey,
  type CreateTopicsRequestCreatableTopic as CreatableTopic,
  type CreateTopicsResponseCreatableTopicConfigs as CreatedConfig,
  type CreateTopicsResponseCreatableTopicResult as CreatableTopicResult,
} from '../../protocol/messages.js';
import { requestFilter, type Filter, type FilterRequest, type RequestContext, type RequestOutcome } from '../../proxy/filter/filter.js';
import { ZERO_UUID } from '../../proxy/topic-ids.js';
import type { ConfigContext } from './config-context.js';
import { isRetentionLimit, refusedRetention, retentionRefused } from './retention-limits.js';
import { cappedRefusal } from './capped-retention.js';
import { ConfigSource, isOwnedConfig, TOPIC_CONFIGS } from './definitions.js';
import { createdEntry } from './describe-entry.js';
import { forwardedConfigs, keepsForever, type TopicOverrides } from './effective-policy.js';
import { storeFailed, storeUnavailable, type Refusal } from './refusals.js';
import { deleteUpstreamTopic, errorsBeforeConfigs, topicIdFor, upstreamRetentionOf } from './upstream-admin.js';
import { validateOverrides } from './validate.js';

type CreateTopics = typeof ApiKey.CreateTopics;

interface Forward {
  topic: CreatableTopic;
  /** The owned overrides in force: the request's, or the static topic's. */
  overrides: TopicOverrides;
  /** Whether the overrides belong in the configs topic (static topics are not stored). */
  stored: boolean;
  requested: ReadonlySet<string>;
}

type Plan = { refused: Refusal; configRefusal: boolean } | { forward: Forward };

const CONFIGS_FIRST_VERSION = 5;

export function createTopicsFilter(ctx: ConfigContext): Filter {
  return requestFilter('config-create-topics', ApiKey.CreateTopics, (req, chain) => onCreateTopics(ctx, req, chain));
}

async function onCreateTopics(
  ctx: ConfigContext,
  req: FilterRequest<CreateTopics>,
  chain: RequestContext<CreateTopics>,
): Promise<RequestOutcome<CreateTopics>> {
  const body = req.body;
  const version = req.apiVersion;
  await ctx.sync.sync().catch((err) => ctx.log.debug('topic config store not read before CreateTopics', { err }));
  const counts = new Map<string, number>();
  for (const t of body.topics) counts.set(t.name, (counts.get(t.name) ?? 0) + 1);
  const plans = new Map<string, Plan>();
  for (const t of body.topics) {
    if (plans.has(t.name)) continue;
    plans.set(
      t.name,
      counts.get(t.name)! > 1
        ? { refused: { errorCode: ErrorCode.INVALID_REQUEST, errorMessage: 'Duplicate topic name.' }, configRefusal: false }
        : plan(ctx, t),
    );
  }
  const refusedForConfigs = body.topics.filter((t) => {
    const p = plans.get(t.name)!;
    return 'refused' in p && p.configRefusal;
  });
  for (const [name, earlier] of await errorsBeforeConfigs(ctx, refusedForConfigs)) plans.set(name, { refused: earlier, configRefusal: false });

  const forwards = [...plans.values()].flatMap((p) => ('forward' in p ? [p.forward] : []));
  const assemble = (upstream: Map<string, CreatableTopicResult>): CreatableTopicResult[] =>
    [...plans].map(([name, p]) => ('refused' in p ? refusedResult(name, p.refused) : (upstream.get(name) ?? refusedResult(name, noAnswer))));
  if (forwards.length === 0) return chain.respond({ throttleTimeMs: 0, topics: assemble(new Map()) });

  return chain.forward({
    body: { ...body, topics: forwards.map((f) => f.topic) },
    response: async (res, back) => {
      const answer = res.body;
      const byName = new Map(answer.topics.map((r) => [r.name, r]));
      await Promise.all(
        forwards.map((f) => {
          const r = byName.get(f.topic.name);
          return r && finish(ctx, version, body.validateOnly, f, r);
        }),
      );
      const topics = assemble(byName);
      const known = new Set(plans.keys());
      for (const r of answer.topics) if (!known.has(r.name)) topics.push(r);
      return back.forward({ ...answer, topics });
    },
  });
}

const noAnswer: Refusal = { errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, errorMessage: 'the upstream did not answer for this topic' };

function plan(ctx: ConfigContext, t: CreatableTopic): Plan {
  const owned: Record<string, string> = {};
  const nulls: string[] = [];
  let ownedNull = false;
  for (const c of t.configs) {
    if (c.value === null) {
      nulls.push(c.name);
      ownedNull ||= isOwnedConfig(c.name);
    } else if (isOwnedConfig(c.name)) {
      owned[c.name] = c.value;
    }
  }
  if (ownedNull) {
    return {
      refused: { errorCode: ErrorCode.INVALID_CONFIG, errorMessage: `Null value not supported for topic configs: ${nulls.join(',')}` },
      configRefusal: true,
    };
  }
  const problem = validateOverrides(owned, ctx.defaults);
  if (problem !== null) return { refused: { errorCode: ErrorCode.INVALID_CONFIG, errorMessage: problem }, configRefusal: true };
  const isStatic = ctx.state.isStatic(t.name);
  const unavailable = ctx.sync.unavailableReason;
  if (!isStatic && unavailable !== null && Object.keys(owned).length > 0) return { refused: storeUnavailable(t.name, unavailable), configRefusal: false };
  const overrides = isStatic ? ctx.state.overrides(t.name) : owned;
  const configs = [...t.configs.filter((c) => !isOwnedConfig(c.name)), ...forwardedConfigs(overrides, ctx.defaults)];
  return {
    forward: {
      topic: { ...t, configs },
      overrides,
      stored: !isStatic,
      requested: new Set(t.configs.map((c) => c.name)),
    },
  };
}

function refusedResult(name: string, r: Refusal): CreatableTopicResult {
  return {
    name,
    topicId: ZERO_UUID,
    errorCode: r.errorCode,
    errorMessage: r.errorMessage,
    topicConfigErrorCode: 0,
    numPartitions: -1,
    replicationFactor: -1,
    configs: [],
  };
}

async function finish(ctx: ConfigContext, version: number, validateOnly: boolean, f: Forward, r: CreatableTopicResult): Promise<void> {
  if (r.errorCode !== ErrorCode.NONE && keepsForever(f.overrides, ctx.defaults) && refusedRetention(r.errorMessage)) {
    // The store caps retention (OCI Streaming, Event Hubs, a create policy): the topic takes the
    // store's own, and carrying keeps its survivors (docs/carrying.md).
    const capped = await createWithStoreRetention(ctx, f, validateOnly).catch(() => undefined);
    if (capped?.errorCode === ErrorCode.NONE) Object.assign(r, capped);
    else r.errorMessage = retentionRefused(r.name, r.errorMessage);
  }
  if (r.errorCode === ErrorCode.NONE && !validateOnly) {
    const failure = await settle(ctx, f, r);
    if (failure) Object.assign(r, refusedResult(r.name, failure));
    // The store's segments in a request of their own: a store refusing them cannot fail this one.
    else await ctx.storeSegments?.settle(r.name);
  }
  if (version < CONFIGS_FIRST_VERSION) return;
  r.configs = r.errorCode === ErrorCode.NONE ? createdConfigs(ctx, f, r.configs) : (r.configs ?? []);
}

/** The topic again, without the retention the store refused. */
async function createWithStoreRetention(ctx: ConfigContext, f: Forward, validateOnly: boolean): Promise<CreatableTopicResult | undefined> {
  const client = await ctx.links.controller('admin');
  const topic = { ...f.topic, configs: f.topic.configs.filter((c) => !isRetentionLimit(c.name)) };
  const answer = await client.request(ApiKey.CreateTopics, client.version(ApiKey.CreateTopics), {
    topics: [topic],
    timeoutMs: ctx.requestTimeoutMs,
    validateOnly,
  });
  return answer.topics.find((t) => t.name === f.topic.name);
}

/**
 * Checks the retention the upstream really gave and stores the configs; on failure the topic is
 * deleted again. A compact-only topic the store keeps for a bounded time stays only if carrying
 * can keep its survivors (config/store-retention.ts); one the store bounds by size cannot be kept.
 */
async function settle(ctx: ConfigContext, f: Forward, r: CreatableTopicResult): Promise<Refusal | null> {
  const name = r.name;
  if (keepsForever(f.overrides, ctx.defaults)) {
    const got = await upstreamRetentionOf(ctx, name).catch(() => null);
    const refusal = got && cappedRefusal(ctx, name, f.overrides, got);
    if (refusal) {
      await undo(ctx, name);
      return { errorCode: ErrorCode.INVALID_CONFIG, errorMessage: `${refusal}; the topic was deleted again` };
    }
  }
  if (!f.stored) return null;
  if (Object.keys(f.overrides).length === 0) {
    // Configs left from an earlier topic of this name: drop them. They carry the old topic id, so
    // failing here is no reason to refuse the topic.
    if (ctx.state.entry(name)?.configs)
      await ctx.sync.write(name, null).catch((err) => ctx.log.warn('could not drop configs left from an earlier topic', { topic: name, err }));
    return null;
  }
  try {
    const topicId = r.topicId !== undefined && r.topicId !== ZERO_UUID ? r.topicId : await topicIdFor(ctx, name);
    await ctx.sync.write(name, { topicId, configs: { ...f.overrides } });
    return null;
  } catch (err) {
    await undo(ctx, name);
    return storeFailed(name, err, 'the topic was deleted again');
  }
}

async function undo(ctx: ConfigContext, topic: string): Promise<void> {
  try {
    await deleteUpstreamTopic(ctx, topic);
  } catch (err) {
    ctx.log.error('could not delete a topic that kcompact could not finish creating; delete it by hand', { topic, err });
  }
}

/** Kafka lists every topic config, sorted by name; kfake lists only the given ones, with source -1 (which Java rejects). */
function createdConfigs(ctx: ConfigContext, f: Forward, upstream: readonly CreatedConfig[] | null | undefined): CreatedConfig[] {
  const list = (upstream ?? [])
    .filter((c) => !isOwnedConfig(c.name))
    .map((c) => (c.configSource >= 0 ? c : { ...c, configSource: f.requested.has(c.name) ? ConfigSource.DYNAMIC_TOPIC_CONFIG : ConfigSource.DEFAULT_CONFIG }));
  for (const def of TOPIC_CONFIGS) list.push(createdEntry(def, f.overrides[def.name], ctx.defaults));
  return list.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
