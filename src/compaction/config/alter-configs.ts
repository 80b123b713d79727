/**
 * AlterConfigs (the old whole-state API, the only one kafkajs has): a topic's configs become
 * exactly the given set. kcompact takes the owned ones as the topic's new overrides and sends
 * the upstream the rest, with segment settings and the retention the policy needs.
 */
import { ErrorCode } from '../../protocol/errors.js';
import type { InterceptedRequest, Interception, RequestInterceptor } from '../../proxy/interceptor.js';
import { REPEATED_RESOURCE, repeatedTopics, runAlter, TOPIC_RESOURCE, type ResourcePlan } from './alter-flow.js';
import type { ConfigContext } from './config-context.js';
import { isOwnedConfig } from './definitions.js';
import { forwardedConfigs } from './effective-policy.js';
import { staticTopic, storeUnavailable } from './refusals.js';
import { validateOverrides } from './validate.js';

interface AlterConfigsResource {
  resourceType: number;
  resourceName: string;
  configs: { name: string; value: string | null }[];
}

interface AlterConfigsRequest {
  resources: AlterConfigsResource[];
  validateOnly: boolean;
}

export function alterConfigsInterceptor(ctx: ConfigContext): RequestInterceptor {
  return { intercept: (req) => interceptAlterConfigs(ctx, req) };
}

async function interceptAlterConfigs(ctx: ConfigContext, req: InterceptedRequest): Promise<Interception> {
  const body = req.body<AlterConfigsRequest>();
  if (!body.resources.some((r) => r.resourceType === TOPIC_RESOURCE)) return { forward: true };
  await ctx.sync.sync().catch((err) => ctx.log.debug('topic config store not read before AlterConfigs', { err }));
  const repeated = repeatedTopics(body.resources);
  const plans = body.resources.map((r): ResourcePlan<AlterConfigsResource> => {
    if (r.resourceType !== TOPIC_RESOURCE) return { forward: r };
    // Kafka 4.4 never answers an AlterConfigs naming a topic twice; refusing it is kinder.
    if (repeated.has(r.resourceName)) return { refused: REPEATED_RESOURCE };
    return plan(ctx, r);
  });
  return runAlter(ctx, req, body, plans);
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
  return {
    forward: { ...r, configs: [...others, ...forwardedConfigs(owned, ctx.defaults)] },
    store: { topic, overrides: owned },
  };
}
