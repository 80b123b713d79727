/**
 * A topic's effective compaction settings from its overrides (raw values, as a client gave them)
 * and kcompact's broker defaults, and the retention the upstream must hold for it.
 */
import type { TopicPolicy } from '../../engine/api/topic-policy.js';
import type { BrokerDefaults, DefaultValues } from './broker-defaults.js';
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
export function effectiveValue(name: string, overrides: TopicOverrides, defaults: DefaultValues): ConfigValue {
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
    // The store's side: learned from the store (config/store-retention.ts), not from the topic's configs.
    storeRetentionMs: -1,
    carryAfterMs: -1,
  };
}

/** The owned configs the upstream topic carries as well. */
export const UPSTREAM_CONFIGS: readonly string[] = TOPIC_CONFIGS.filter((def) => def.upstream === 'forwarded').map((def) => def.name);

/** Without "delete" in the policy (compact alone, or the empty policy that means infinite retention) nothing may expire. */
export function keepsForever(overrides: TopicOverrides, defaults: BrokerDefaults): boolean {
  return !cleanupPolicy(overrides, defaults).includes(POLICY_DELETE);
}

/**
 * What the upstream topic must carry for each of UPSTREAM_CONFIGS, null for no override.
 *
 * A topic that keeps everything gets retention -1, so the store never drops data by age or
 * size, and not its segment overrides as given: kcompact compacts over its own virtual segments,
 * and a short segment.ms set for prompt compaction would leave a store nobody carries for rolling
 * small segments that it keeps forever and never merges (a thousand partitions at
 * segment.ms=60000 is a thousand more open files a minute). A replica that carries sets the
 * store's segments itself, in requests of its own (store-segments.ts). A topic that expires data
 * gets its own overrides, since the store's segments are then what retention deletes, as on Kafka.
 */
export function upstreamConfigs(overrides: TopicOverrides, defaults: BrokerDefaults): Record<string, string | null> {
  const keepForever = keepsForever(overrides, defaults);
  const out: Record<string, string | null> = {};
  for (const name of UPSTREAM_CONFIGS) {
    if (!keepForever) out[name] = overrides[name] ?? null;
    else out[name] = name === RETENTION_MS || name === RETENTION_BYTES ? '-1' : null;
  }
  return out;
}

/** The upstream's overrides for a create or a whole-state alter: upstreamConfigs without the nulls. */
export function forwardedConfigs(overrides: TopicOverrides, defaults: BrokerDefaults): { name: string; value: string }[] {
  const out: { name: string; value: string }[] = [];
  for (const [name, value] of Object.entries(upstreamConfigs(overrides, defaults))) if (value !== null) out.push({ name, value });
  return out;
}
