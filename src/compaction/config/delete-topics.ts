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
import type { InterceptedRequest, Interception, RequestInterceptor } from '../../proxy/interceptor.js';
import type { ConfigContext } from './config-context.js';
import { CONFIGS_TOPIC } from './configs-topic.js';
import { requestFrame, responseBody, responseFrame } from './frames.js';
import { configsTopicKept } from './refusals.js';

interface DeleteTopicsRequest {
  topics?: { name: string | null; topicId: string }[];
  topicNames?: string[];
}

interface DeleteTopicsResult {
  name: string | null;
  topicId?: string;
  errorCode: number;
  errorMessage?: string | null;
}

interface DeleteTopicsResponse {
  throttleTimeMs?: number;
  responses: DeleteTopicsResult[];
}

export function deleteTopicsInterceptor(ctx: ConfigContext): RequestInterceptor {
  return { intercept: (req) => interceptDeleteTopics(ctx, req) };
}

function interceptDeleteTopics(ctx: ConfigContext, req: InterceptedRequest): Interception {
  const body = req.body<DeleteTopicsRequest>();
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
    if (rest.topicNames?.length === 0 || rest.topics?.length === 0) return { respond: responseFrame(req, { throttleTimeMs: 0, responses: refused }) };
    return forward(ctx, req, names, byId, requestFrame(req, rest), refused);
  }
  return forward(ctx, req, names, byId, undefined, []);
}

function forward(
  ctx: ConfigContext,
  req: InterceptedRequest,
  names: string[],
  byId: Map<string, string>,
  frame: Buffer | undefined,
  refused: DeleteTopicsResult[],
): Interception {
  if (refused.length === 0 && !names.some((n) => ctx.state.entry(n)?.configs)) return { forward: true };
  return {
    forward: true,
    frame,
    response: async (frame) => {
      const answer = responseBody<DeleteTopicsResponse>(req, frame);
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
      if (refused.length === 0) return frame;
      return responseFrame(req, { ...answer, responses: [...answer.responses, ...refused] });
    },
  };
}

const namesConfigsTopic = (ctx: ConfigContext, t: { name: string | null; topicId: string }) => (t.name ?? ctx.topicIds.name(t.topicId)) === CONFIGS_TOPIC;

/** A refusal for each mention of the configs topic, named as the request named it. */
function refusedResults(ctx: ConfigContext, body: DeleteTopicsRequest): DeleteTopicsResult[] {
  const refusal = configsTopicKept();
  const results: DeleteTopicsResult[] = [];
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
