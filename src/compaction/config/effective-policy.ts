/**
 * A topic's effective compaction settings from its overrides (raw values, as a client gave them)
 * and kcompact's broker defaults, and the retention the upstream must hold for it.
 */
import type { TopicPolicy } from '../policy.js';
import type { BrokerDefaults } from './broker-defaults.js';
import {
  CLEANUP_POLICY,
  DELETE_RETENTION_MS,
  MAX_COMPACTION_LAG_MS,
  MIN_CLEANABLE_DIRTY_RATIO,
  MIN_COMPACTION_LAG_MS,
  parseConfigValue,
  POLICY_COMPACT,
  POLICY_DELETE,
  RETENTION_BYTES,
  RETENTION_MS,
  SEGMENT_BYTES,
  SEGMENT_MS,
  TOPIC_CONFIG,
  TOPIC_CONFIGS,
  type ConfigValue,
} from './definitions.js';

/** Raw values of the owned configs a topic overrides, by config name. */
export type TopicOverrides = Readonly<Record<string, string>>;

/** The override's value when it parses, else the broker default (stored values were validated when written). */
export function effectiveValue(name: string, overrides: TopicOverrides, defaults: BrokerDefaults): ConfigValue {
  const def = TOPIC_CONFIG.get(name)!;
  const raw = overrides[name];
  if (raw !== undefined) {
    const parsed = parseConfigValue(def, raw);
    if (parsed.ok) return parsed.value;
  }
  return defaults.value(def);
}

function cleanupPolicy(overrides: TopicOverrides, defaults: BrokerDefaults): readonly string[] {
  return effectiveValue(CLEANUP_POLICY, overrides, defaults) as readonly string[];
}

/** Every setting of the topic, whatever its policy. */
export function topicPolicy(overrides: TopicOverrides, defaults: BrokerDefaults): TopicPolicy {
  const value = (name: string) => Number(effectiveValue(name, overrides, defaults));
  const policy = cleanupPolicy(overrides, defaults);
  return {
    compact: policy.includes(POLICY_COMPACT),
    delete: policy.includes(POLICY_DELETE),
    deleteRetentionMs: value(DELETE_RETENTION_MS),
    minCompactionLagMs: value(MIN_COMPACTION_LAG_MS),
    maxCompactionLagMs: value(MAX_COMPACTION_LAG_MS),
    minCleanableDirtyRatio: value(MIN_CLEANABLE_DIRTY_RATIO),
    segmentMs: value(SEGMENT_MS),
    segmentBytes: value(SEGMENT_BYTES),
    retentionMs: value(RETENTION_MS),
    retentionBytes: value(RETENTION_BYTES),
  };
}

export const UPSTREAM_RETENTION_CONFIGS = [RETENTION_MS, RETENTION_BYTES] as const;

/** Without "delete" in the policy (compact alone, or the empty policy that means infinite retention) nothing may expire. */
export function keepsForever(overrides: TopicOverrides, defaults: BrokerDefaults): boolean {
  return !cleanupPolicy(overrides, defaults).includes(POLICY_DELETE);
}

/**
 * What the upstream topic must carry for retention.ms and retention.bytes: "-1" when the topic
 * keeps everything, so the store never drops data by age or size; otherwise the topic's own
 * override, or null for none.
 */
export function upstreamRetention(overrides: TopicOverrides, defaults: BrokerDefaults): Record<(typeof UPSTREAM_RETENTION_CONFIGS)[number], string | null> {
  const keepForever = keepsForever(overrides, defaults);
  return {
    [RETENTION_MS]: keepForever ? '-1' : overrides[RETENTION_MS] ?? null,
    [RETENTION_BYTES]: keepForever ? '-1' : overrides[RETENTION_BYTES] ?? null,
  } as Record<(typeof UPSTREAM_RETENTION_CONFIGS)[number], string | null>;
}

/**
 * The owned configs the upstream topic gets in a create or a whole-state alter: segment settings
 * as given (the store rolls and expires its own segments), retention as upstreamRetention says.
 */
export function forwardedConfigs(overrides: TopicOverrides, defaults: BrokerDefaults): { name: string; value: string }[] {
  const out: { name: string; value: string }[] = [];
  for (const def of TOPIC_CONFIGS) {
    if (def.upstream !== 'forwarded' || (UPSTREAM_RETENTION_CONFIGS as readonly string[]).includes(def.name)) continue;
    const value = overrides[def.name];
    if (value !== undefined) out.push({ name: def.name, value });
  }
  for (const [name, value] of Object.entries(upstreamRetention(overrides, defaults))) if (value !== null) out.push({ name, value });
  return out;
}
