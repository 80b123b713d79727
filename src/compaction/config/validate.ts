/**
 * Kafka's validation of a topic's owned configs, applied to the complete set a topic would have
 * (a create's configs, or the state after an alter), with the message Kafka reports first.
 */
import type { DefaultValues } from './broker-defaults.js';
import { MAX_COMPACTION_LAG_MS, MIN_COMPACTION_LAG_MS, parseConfigValue, TOPIC_CONFIGS } from './definitions.js';
import { effectiveValue, type TopicOverrides } from './effective-policy.js';

/** The INVALID_CONFIG message for the overrides, or null when Kafka would accept them. */
export function validateOverrides(overrides: TopicOverrides, defaults: DefaultValues): string | null {
  // LogConfig parses in definition order and stops at the first bad value.
  for (const def of TOPIC_CONFIGS) {
    const raw = overrides[def.name];
    if (raw === undefined) continue;
    const parsed = parseConfigValue(def, raw);
    if (!parsed.ok) return parsed.message;
  }
  const minLag = effectiveValue(MIN_COMPACTION_LAG_MS, overrides, defaults) as bigint;
  const maxLag = effectiveValue(MAX_COMPACTION_LAG_MS, overrides, defaults) as bigint;
  if (minLag > maxLag) {
    return `conflict topic config setting ${MIN_COMPACTION_LAG_MS} (${minLag}) > ${MAX_COMPACTION_LAG_MS} (${maxLag})`;
  }
  return null;
}
