/**
 * DeleteTopics: once the upstream has deleted a topic, its stored configs are dropped (a null
 * record), so a topic created later under the same name starts with Kafka's defaults. Topics
 * named by id (v6) are resolved to names before the request goes out, while the id is known.
 *
 * The configs topic itself is refused (POLICY_VIOLATION) and the rest of the request goes on: a
 * delete by pattern, such as `kafka-topics --delete --topic '.*'`, would otherwise take every
 * compacted topic's configs with it.
 */
import { ErrorCode } from '../../protocol/errors.js';
import {
  ApiKey,
  type DeleteTopicsRequest,
  type DeleteTopicsRequestDeleteTopicState as DeleteTopicState,
  type DeleteTopicsResponseDeletableTopicResult as DeletableTopicResult,
} from '../../protocol/messages.js';
import { requestFilter, type Filter, type RequestContext, type RequestOutcome } from '../../proxy/filter/filter.js';
import type { ConfigContext } from './config-context.js';
import { CONFIGS_TOPIC } from './configs-topic.js';
import { configsTopicKept } from './refusals.js';

type DeleteTopics = typeof ApiKey.DeleteTopics;

export function deleteTopicsFilter(ctx: ConfigContext): Filter {
  return requestFilter('config-delete-topics', ApiKey.DeleteTopics, (req, chain) => onDeleteTopics(ctx, req.body, chain));
}

function onDeleteTopics(ctx: ConfigContext, body: DeleteTopicsRequest, chain: RequestContext<DeleteTopics>): RequestOutcome<DeleteTopics> {
  const byId = new Map<string, string>();
  const names = body.topicNames ? [...body.topicNames] : [];
  for (const t of body.topics ?? []) {
    const name = t.name ?? ctx.topicIds.name(t.topicId);
    if (name === undefined) continue;
    names.push(name);
    byId.set(t.topicId, name);
  }
  const refused = refusedResults(ctx, body);
  if (refused.length > 0) {
    const rest = withoutConfigsTopic(ctx, body);
    if (rest.topicNames?.length === 0 || rest.topics?.length === 0) return chain.respond({ throttleTimeMs: 0, responses: refused });
    return forward(ctx, chain, names, byId, rest, refused);
  }
  return forward(ctx, chain, names, byId, undefined, []);
}

function forward(
  ctx: ConfigContext,
  chain: RequestContext<DeleteTopics>,
  names: string[],
  byId: Map<string, string>,
  body: DeleteTopicsRequest | undefined,
  refused: DeletableTopicResult[],
): RequestOutcome<DeleteTopics> {
  if (refused.length === 0 && !names.some((n) => ctx.state.entry(n)?.configs)) return chain.forward();
  return chain.forward({
    body,
    response: async (res, back) => {
      const answer = res.body;
      for (const r of answer.responses) {
        if (r.errorCode !== ErrorCode.NONE) continue;
        const name = r.name ?? (r.topicId === undefined ? undefined : byId.get(r.topicId));
        if (name === undefined || !ctx.state.entry(name)?.configs) continue;
        try {
          await ctx.sync.write(name, null);
        } catch (err) {
          // The topic is gone either way; its stored configs carry the old topic id, so a topic
          // re-created under the name does not take them over once its new id is seen.
          ctx.log.error('could not drop the stored configs of a deleted topic', { topic: name, err });
        }
      }
      if (refused.length === 0) return back.forward();
      return back.forward({ ...answer, responses: [...answer.responses, ...refused] });
    },
  });
}

const namesConfigsTopic = (ctx: ConfigContext, t: DeleteTopicState) => (t.name ?? ctx.topicIds.name(t.topicId)) === CONFIGS_TOPIC;

/** A refusal for each mention of the configs topic, named as the request named it. */
function refusedResults(ctx: ConfigContext, body: DeleteTopicsRequest): DeletableTopicResult[] {
  const refusal = configsTopicKept();
  const results: DeletableTopicResult[] = [];
  for (const name of body.topicNames ?? []) if (name === CONFIGS_TOPIC) results.push({ name, ...refusal });
  for (const t of body.topics ?? []) if (namesConfigsTopic(ctx, t)) results.push({ name: CONFIGS_TOPIC, topicId: t.topicId, ...refusal });
  return results;
}

function withoutConfigsTopic(ctx: ConfigContext, body: DeleteTopicsRequest): DeleteTopicsRequest {
  return {
    ...body,
    ...(body.topicNames ? { topicNames: body.topicNames.filter((n) => n !== CONFIGS_TOPIC) } : {}),
    ...(body.topics ? { topics: body.topics.filter((t) => !namesConfigsTopic(ctx, t)) } : {}),
  };
}
