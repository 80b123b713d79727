/**
 * DescribeConfigs: the upstream answers, and kcompact's view replaces its entries for the owned
 * configs of each topic (or adds those it lacks), rendered as Kafka 4.4 renders them. The -1
 * retention a compacted topic carries upstream is kcompact's doing and stays hidden: the topic's
 * own setting, or the default, is shown instead.
 */
import { ErrorCode } from '../../protocol/errors.js';
import { ConfigResourceType } from '../../protocol/config-resource.js';
import { ApiKey, type DescribeConfigsRequest, type DescribeConfigsResponseResourceResult as DescribedConfig } from '../../protocol/messages.js';
import { requestFilter, type Filter, type RequestContext, type RequestOutcome } from '../../proxy/filter/filter.js';
import type { ConfigContext } from './config-context.js';
import { ConfigSource, isOwnedConfig, parseConfigValue, TOPIC_CONFIGS } from './definitions.js';
import { describeEntry, type DescribeOptions } from './describe-entry.js';
import { keepsForever, type TopicOverrides } from './effective-policy.js';

type DescribeConfigs = typeof ApiKey.DescribeConfigs;

export function describeConfigsFilter(ctx: ConfigContext): Filter {
  return requestFilter('config-describe-configs', ApiKey.DescribeConfigs, (req, chain) => onDescribeConfigs(ctx, req.body, chain));
}

function onDescribeConfigs(ctx: ConfigContext, body: DescribeConfigsRequest, chain: RequestContext<DescribeConfigs>): RequestOutcome<DescribeConfigs> {
  const keys = new Map<string, string[] | null>();
  for (const r of body.resources) if (r.resourceType === ConfigResourceType.TOPIC && !keys.has(r.resourceName)) keys.set(r.resourceName, r.configurationKeys);
  if (keys.size === 0) return chain.forward();
  const opts: DescribeOptions = { includeSynonyms: body.includeSynonyms, includeDocumentation: body.includeDocumentation ?? false };
  return chain.forward({
    response: (res, back) => {
      const answer = res.body;
      for (const result of answer.results) {
        if (result.resourceType !== ConfigResourceType.TOPIC || result.errorCode !== ErrorCode.NONE || !keys.has(result.resourceName)) continue;
        result.configs = mergeOwned(ctx, result.resourceName, result.configs, keys.get(result.resourceName)!, opts);
      }
      return back.forward(answer);
    },
  });
}

/** The upstream's entries with the owned configs (those asked for) in kcompact's rendering, in the upstream's order. */
export function mergeOwned(
  ctx: Pick<ConfigContext, 'state' | 'defaults'>,
  topic: string,
  upstream: DescribedConfig[],
  keys: readonly string[] | null,
  opts: DescribeOptions,
): DescribedConfig[] {
  const overrides = withUpstreamOverrides(ctx, topic, upstream);
  const wanted = TOPIC_CONFIGS.filter((d) => !keys || keys.length === 0 || keys.includes(d.name));
  const rendered = new Map(wanted.map((d) => [d.name, describeEntry(d, overrides[d.name], ctx.defaults, opts)]));
  const merged: DescribedConfig[] = [];
  for (const c of upstream) {
    const ours = rendered.get(c.name);
    if (ours) {
      merged.push(ours);
      rendered.delete(c.name);
    } else if (!isOwnedConfig(c.name)) {
      // An owned config the client did not ask for (a store that ignores the key list) stays out.
      merged.push(c);
    }
  }
  return [...merged, ...rendered.values()];
}

/**
 * kcompact's overrides, plus retention and segment overrides the upstream holds that kcompact
 * did not set (made on the upstream directly): they are real for a topic that expires data.
 * A topic that keeps everything shows only kcompact's, since its upstream retention is -1 by design.
 */
function withUpstreamOverrides(ctx: Pick<ConfigContext, 'state' | 'defaults'>, topic: string, upstream: readonly DescribedConfig[]): TopicOverrides {
  const overrides = ctx.state.overrides(topic);
  if (keepsForever(overrides, ctx.defaults)) return overrides;
  const merged: Record<string, string> = { ...overrides };
  for (const def of TOPIC_CONFIGS) {
    if (def.upstream !== 'forwarded' || merged[def.name] !== undefined) continue;
    const theirs = upstream.find((c) => c.name === def.name);
    if (theirs?.configSource === ConfigSource.DYNAMIC_TOPIC_CONFIG && theirs.value !== null && parseConfigValue(def, theirs.value).ok) {
      merged[def.name] = theirs.value;
    }
  }
  return merged;
}
