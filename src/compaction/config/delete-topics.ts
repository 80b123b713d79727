/**
 * DeleteTopics: once the upstream has deleted a topic, its stored configs are dropped (a null
 * record), so a topic created later under the same name starts with Kafka's defaults. Topics
 * named by id (v6) are resolved to names before the request goes out, while the id is known.
 */
import { ErrorCode } from '../../protocol/errors.js';
import type { InterceptedRequest, Interception, RequestInterceptor } from '../../proxy/interceptor.js';
import type { ConfigContext } from './config-context.js';
import { responseBody } from './frames.js';

interface DeleteTopicsRequest {
  topics?: { name: string | null; topicId: string }[];
  topicNames?: string[];
}

interface DeleteTopicsResponse {
  responses: { name: string | null; topicId?: string; errorCode: number }[];
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
  if (!names.some((n) => ctx.state.entry(n)?.configs)) return { forward: true };
  return {
    forward: true,
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
      return frame;
    },
  };
}
