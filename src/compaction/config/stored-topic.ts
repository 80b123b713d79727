/**
 * One record of the configs topic: key = topic name (UTF-8), value = JSON
 * {"topicId"?: "<base64url uuid>", "configs": {"<name>": "<raw value>"}}, or null once the topic
 * is deleted. The last record per key wins. The topic id ties the configs to one incarnation of
 * the topic: a topic deleted and re-created elsewhere gets a new id and does not inherit them.
 */

export interface StoredTopic {
  topicId?: string;
  configs: Record<string, string>;
}

export function encodeStoredTopic(topic: StoredTopic | null): Buffer | null {
  if (topic === null) return null;
  return Buffer.from(JSON.stringify(topic.topicId === undefined ? { configs: topic.configs } : { topicId: topic.topicId, configs: topic.configs }));
}

/** The stored topic, or an Error describing why the value is not one (written by something else). */
export function decodeStoredTopic(value: Buffer | null): StoredTopic | null | Error {
  if (value === null) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value.toString('utf8'));
  } catch (err) {
    return new Error(`not JSON: ${(err as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null) return new Error('not a JSON object');
  const { topicId, configs } = parsed as { topicId?: unknown; configs?: unknown };
  if (topicId !== undefined && typeof topicId !== 'string') return new Error('topicId is not a string');
  if (typeof configs !== 'object' || configs === null || Array.isArray(configs)) return new Error('configs is not an object');
  for (const v of Object.values(configs)) if (typeof v !== 'string') return new Error('a config value is not a string');
  return topicId === undefined ? { configs: configs as Record<string, string> } : { topicId, configs: configs as Record<string, string> };
}
