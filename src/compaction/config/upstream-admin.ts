/**
 * Admin requests the config layer makes on its own connection to the upstream, around a client's
 * request: learning a topic's id, checking the retention a compacted topic really got, undoing a
 * topic it could not finish, and asking which errors the upstream would give before configs.
 */
import { ErrorCode, ProtocolError } from '../../protocol/errors.js';
import { ConfigResourceType } from '../../protocol/config-resource.js';
import { ApiKey, type CreateTopicsRequestCreatableReplicaAssignment } from '../../protocol/messages.js';
import { UpstreamError } from '../../upstream/error-class.js';
import { ZERO_UUID } from '../../proxy/topic-ids.js';
import type { ConfigContext } from './config-context.js';
import { RETENTION_BYTES, RETENTION_MS } from './definitions.js';

/** The resource type of a topic in DescribeConfigs. */

/** The topic's id in the upstream now (the proxy's ids learn it: they watch ctx.links), or undefined when it has none. */
async function currentTopicId(ctx: ConfigContext, topic: string): Promise<string | undefined> {
  const answer = await ctx.links.metadata([topic]);
  const t = answer.topics.find((x) => x.name === topic);
  if (!t || t.errorCode !== ErrorCode.NONE || t.topicId === ZERO_UUID) return undefined;
  return t.topicId;
}

/** retention.ms and retention.bytes as the upstream reports them; null when it cannot describe configs. */
export async function upstreamRetentionOf(ctx: ConfigContext, topic: string): Promise<Record<string, string | null> | null> {
  const client = await ctx.links.any('admin');
  let version: number;
  try {
    version = client.version(ApiKey.DescribeConfigs);
  } catch (err) {
    if (err instanceof ProtocolError) return null;
    throw err;
  }
  const answer = await client.request(ApiKey.DescribeConfigs, version, {
    resources: [{ resourceType: ConfigResourceType.TOPIC, resourceName: topic, configurationKeys: [RETENTION_MS, RETENTION_BYTES] }],
    includeSynonyms: false,
    includeDocumentation: false,
  });
  const result = answer.results[0];
  if (!result || result.errorCode !== ErrorCode.NONE) return null;
  const values: Record<string, string | null> = {};
  for (const c of result.configs) values[c.name] = c.value;
  return values;
}

/** Deletes a topic the proxy created for a client but could not finish setting up. */
export async function deleteUpstreamTopic(ctx: ConfigContext, topic: string): Promise<void> {
  const client = await ctx.links.controller('admin');
  const version = client.version(ApiKey.DeleteTopics);
  const answer = await client.request(
    ApiKey.DeleteTopics,
    version,
    version >= 6
      ? { topics: [{ name: topic, topicId: ZERO_UUID }], timeoutMs: ctx.requestTimeoutMs }
      : { topicNames: [topic], timeoutMs: ctx.requestTimeoutMs },
  );
  const code = answer.responses[0]?.errorCode ?? ErrorCode.UNKNOWN_SERVER_ERROR;
  if (code !== ErrorCode.NONE && code !== ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) throw new UpstreamError(`deleting topic ${topic} in the upstream`, code);
}

export interface TopicSpec {
  name: string;
  numPartitions: number;
  replicationFactor: number;
  /** As the client's CreateTopics request carried them (decoded). */
  assignments: readonly unknown[];
}

/**
 * Kafka refuses a bad topic name or an existing topic before it looks at configs. For topics
 * whose configs kcompact refuses, the upstream is asked (validateOnly, without those configs)
 * whether it has one of these earlier errors; those are the ones to report.
 */
const BEFORE_CONFIG_ERRORS = new Set<number>([ErrorCode.INVALID_TOPIC_EXCEPTION, ErrorCode.TOPIC_ALREADY_EXISTS, ErrorCode.TOPIC_AUTHORIZATION_FAILED]);

export async function errorsBeforeConfigs(
  ctx: ConfigContext,
  topics: readonly TopicSpec[],
): Promise<Map<string, { errorCode: number; errorMessage: string | null }>> {
  const found = new Map<string, { errorCode: number; errorMessage: string | null }>();
  if (topics.length === 0) return found;
  try {
    const client = await ctx.links.controller('admin');
    const answer = await client.request(ApiKey.CreateTopics, client.version(ApiKey.CreateTopics), {
      topics: topics.map((t) => ({ ...t, assignments: t.assignments as CreateTopicsRequestCreatableReplicaAssignment[], configs: [] })),
      timeoutMs: ctx.requestTimeoutMs,
      validateOnly: true,
    });
    for (const r of answer.topics) {
      if (BEFORE_CONFIG_ERRORS.has(r.errorCode)) found.set(r.name, { errorCode: r.errorCode, errorMessage: r.errorMessage });
    }
  } catch (err) {
    // Only the precedence between errors is at stake: report kcompact's own.
    ctx.log.debug('could not ask the upstream about topics with refused configs', { err });
  }
  return found;
}

/**
 * The id to store with a topic's configs. The upstream is asked rather than trusting the ids the
 * proxy has seen: a topic re-created behind the proxy's back would otherwise get configs tied to
 * its old id, which would then never apply.
 */
export async function topicIdFor(ctx: ConfigContext, topic: string): Promise<string | undefined> {
  return (await currentTopicId(ctx, topic).catch(() => undefined)) ?? ctx.topicIds.id(topic);
}
