/**
 * IncrementalAlterConfigs: SET, DELETE, APPEND and SUBTRACT. Operations on owned configs are
 * applied to the topic's stored overrides and the result validated as a whole, as Kafka does;
 * the upstream gets the other operations, and segment and retention operations whenever what
 * the upstream must carry changes (effective-policy.ts: a policy gaining or losing delete, or a
 * change on a topic that expires data).
 */
import { ErrorCode } from '../../protocol/errors.js';
import { ConfigResourceType } from '../../protocol/config-resource.js';
import {
  ApiKey,
  type IncrementalAlterConfigsRequest,
  type IncrementalAlterConfigsRequestAlterableConfig as AlterableConfig,
  type IncrementalAlterConfigsRequestAlterConfigsResource as IncrementalResource,
} from '../../protocol/messages.js';
import { requestFilter, type Filter, type RequestContext, type RequestOutcome } from '../../proxy/filter/filter.js';
import { REPEATED_RESOURCE, repeatedTopics, routeAlter, type ResourcePlan } from './alter-flow.js';
import type { ConfigContext } from './config-context.js';
import { isOwnedConfig } from './definitions.js';
import { keepsForever, UPSTREAM_CONFIGS, upstreamConfigs } from './effective-policy.js';
import { isRetentionLimit } from './retention-limits.js';
import { AlterOp, applyIncrementalOps } from './incremental-ops.js';
import { staticTopic, storeUnavailable } from './refusals.js';
import { validateOverrides } from './validate.js';

type IncrementalAlterConfigs = typeof ApiKey.IncrementalAlterConfigs;

export function incrementalAlterConfigsFilter(ctx: ConfigContext): Filter {
  return requestFilter('config-incremental-alter-configs', ApiKey.IncrementalAlterConfigs, (req, chain) => onIncremental(ctx, req.body, chain));
}

async function onIncremental(
  ctx: ConfigContext,
  body: IncrementalAlterConfigsRequest,
  chain: RequestContext<IncrementalAlterConfigs>,
): Promise<RequestOutcome<IncrementalAlterConfigs>> {
  const touchesOwned = (r: IncrementalResource) => r.resourceType === ConfigResourceType.TOPIC && r.configs.some((c) => isOwnedConfig(c.name));
  if (!body.resources.some(touchesOwned)) return chain.forward();
  await ctx.sync.sync().catch((err) => ctx.log.debug('topic config store not read before IncrementalAlterConfigs', { err }));
  const repeated = repeatedTopics(body.resources);
  const plans = body.resources.map((r): ResourcePlan<IncrementalResource> => {
    if (r.resourceType === ConfigResourceType.TOPIC && repeated.has(r.resourceName)) return { refused: REPEATED_RESOURCE };
    return touchesOwned(r) ? plan(ctx, r) : { forward: r };
  });
  const run = routeAlter(ctx, body, plans, async (resource, validateOnly) => {
    const client = await ctx.links.any('admin');
    const answer = await client.request(ApiKey.IncrementalAlterConfigs, client.version(ApiKey.IncrementalAlterConfigs), {
      resources: [resource],
      validateOnly,
    });
    return answer.responses[0];
  });
  if ('answer' in run) return chain.respond({ throttleTimeMs: 0, responses: run.answer });
  return chain.forward({
    body: { ...body, resources: run.forward },
    response: async (res, back) => back.forward({ ...res.body, responses: await run.merge(res.body.responses) }),
  });
}

function plan(ctx: ConfigContext, r: IncrementalResource): ResourcePlan<IncrementalResource> {
  const topic = r.resourceName;
  const names = r.configs.map((c) => c.name);
  if (names.some((n, i) => isOwnedConfig(n) && names.indexOf(n) !== i)) {
    return { refused: { errorCode: ErrorCode.INVALID_REQUEST, errorMessage: 'Error due to duplicate config keys' } };
  }
  const nulls = r.configs.filter((c) => c.value === null && c.configOperation !== AlterOp.DELETE).map((c) => c.name);
  if (nulls.some(isOwnedConfig))
    return { refused: { errorCode: ErrorCode.INVALID_REQUEST, errorMessage: `Null value not supported for : ${nulls.join(', ')}` } };
  if (ctx.state.isStatic(topic)) return { refused: staticTopic(topic) };
  const owned = r.configs.filter((c) => isOwnedConfig(c.name));
  const current = ctx.state.overrides(topic);
  const applied = applyIncrementalOps(current, owned);
  if (!applied.ok) return { refused: { errorCode: applied.errorCode, errorMessage: applied.message } };
  const problem = validateOverrides(applied.overrides, ctx.defaults);
  if (problem !== null) return { refused: { errorCode: ErrorCode.INVALID_CONFIG, errorMessage: problem } };
  const unavailable = ctx.sync.unavailableReason;
  if (unavailable !== null) return { refused: storeUnavailable(topic, unavailable) };

  const ops: AlterableConfig[] = r.configs.filter((c) => !isOwnedConfig(c.name));
  const before = upstreamConfigs(current, ctx.defaults);
  const after = upstreamConfigs(applied.overrides, ctx.defaults);
  for (const name of UPSTREAM_CONFIGS) {
    if (before[name] === after[name] && !owned.some((c) => c.name === name)) continue;
    const value = after[name];
    ops.push(value === null ? { name, configOperation: AlterOp.DELETE, value: null } : { name, configOperation: AlterOp.SET, value });
  }
  const plan = { forward: { ...r, configs: ops }, store: { topic, overrides: applied.overrides } };
  if (!keepsForever(applied.overrides, ctx.defaults) || !ops.some((c) => isRetentionLimit(c.name))) return plan;
  // Without the limits the topic falls back to the store's default retention, its longest.
  const withoutRetention = ops.map((c) => (isRetentionLimit(c.name) ? { name: c.name, configOperation: AlterOp.DELETE, value: null } : c));
  return { ...plan, withoutRetention: { ...r, configs: withoutRetention } };
}
