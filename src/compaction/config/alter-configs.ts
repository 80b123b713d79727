/**
 * AlterConfigs (the old whole-state API, the only one kafkajs has): a topic's configs become
 * exactly the given set. kcompact takes the owned ones as the topic's new overrides and sends
 * the upstream the rest, with segment settings and the retention the policy needs.
 */
import { ErrorCode } from '../../protocol/errors.js';
import { ConfigResourceType } from '../../protocol/config-resource.js';
import { ApiKey, type AlterConfigsRequest, type AlterConfigsRequestResource as AlterConfigsResource } from '../../protocol/messages.js';
import { requestFilter, type Filter, type RequestContext, type RequestOutcome } from '../../proxy/filter/filter.js';
import { REPEATED_RESOURCE, repeatedTopics, routeAlter, type ResourcePlan } from './alter-flow.js';
import type { ConfigContext } from './config-context.js';
import { isOwnedConfig } from './definitions.js';
import { forwardedConfigs, keepsForever } from './effective-policy.js';
import { isRetentionLimit } from './retention-limits.js';
import { staticTopic, storeUnavailable } from './refusals.js';
import { validateOverrides } from './validate.js';

type AlterConfigs = typeof ApiKey.AlterConfigs;

export function alterConfigsFilter(ctx: ConfigContext): Filter {
  return requestFilter('config-alter-configs', ApiKey.AlterConfigs, (req, chain) => onAlterConfigs(ctx, req.body, chain));
}

async function onAlterConfigs(ctx: ConfigContext, body: AlterConfigsRequest, chain: RequestContext<AlterConfigs>): Promise<RequestOutcome<AlterConfigs>> {
  if (!body.resources.some((r) => r.resourceType === ConfigResourceType.TOPIC)) return chain.forward();
  await ctx.sync.sync().catch((err) => ctx.log.debug('topic config store not read before AlterConfigs', { err }));
  const repeated = repeatedTopics(body.resources);
  const plans = body.resources.map((r): ResourcePlan<AlterConfigsResource> => {
    if (r.resourceType !== ConfigResourceType.TOPIC) return { forward: r };
    // Kafka 4.4 never answers an AlterConfigs naming a topic twice; refusing it is kinder.
    if (repeated.has(r.resourceName)) return { refused: REPEATED_RESOURCE };
    return plan(ctx, r);
  });
  const run = routeAlter(ctx, body, plans, async (resource, validateOnly) => {
    const client = await ctx.links.any('admin');
    const answer = await client.request(ApiKey.AlterConfigs, client.version(ApiKey.AlterConfigs), { resources: [resource], validateOnly });
    return answer.responses[0];
  });
  if ('answer' in run) return chain.respond({ throttleTimeMs: 0, responses: run.answer });
  return chain.forward({
    body: { ...body, resources: run.forward },
    response: async (res, back) => back.forward({ ...res.body, responses: await run.merge(res.body.responses) }),
  });
}

function plan(ctx: ConfigContext, r: AlterConfigsResource): ResourcePlan<AlterConfigsResource> {
  const topic = r.resourceName;
  const owned: Record<string, string> = {};
  const nulls = r.configs.filter((c) => c.value === null).map((c) => c.name);
  if (nulls.some(isOwnedConfig))
    return { refused: { errorCode: ErrorCode.INVALID_REQUEST, errorMessage: `Null value not supported for : ${nulls.join(', ')}` } };
  for (const c of r.configs) if (isOwnedConfig(c.name)) owned[c.name] = c.value!;
  const others = r.configs.filter((c) => !isOwnedConfig(c.name));
  if (ctx.state.isStatic(topic)) {
    if (Object.keys(owned).length > 0) return { refused: staticTopic(topic) };
    return { forward: { ...r, configs: [...others, ...forwardedConfigs(ctx.state.overrides(topic), ctx.defaults)] } };
  }
  const problem = validateOverrides(owned, ctx.defaults);
  if (problem !== null) return { refused: { errorCode: ErrorCode.INVALID_CONFIG, errorMessage: problem } };
  const unavailable = ctx.sync.unavailableReason;
  if (unavailable !== null && (Object.keys(owned).length > 0 || ctx.state.entry(topic)?.configs)) return { refused: storeUnavailable(topic, unavailable) };
  const forward = { ...r, configs: [...others, ...forwardedConfigs(owned, ctx.defaults)] };
  return {
    forward,
    store: { topic, overrides: owned },
    // AlterConfigs sets the whole state: a retention left out is the store's default.
    ...(keepsForever(owned, ctx.defaults) && { withoutRetention: { ...forward, configs: forward.configs.filter((c) => !isRetentionLimit(c.name)) } }),
  };
}
