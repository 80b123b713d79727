/**
 * The topic configs kcompact owns, as Apache Kafka 4.4 defines them (LogConfig, TopicConfig,
 * ServerTopicConfigSynonyms): types, defaults, validators with Kafka's exact messages,
 * documentation and the broker configs that supply their defaults. The one place for these facts;
 * everything else in the config layer reads them from here.
 */
import { javaDoubleToString, javaTrim, parseJavaDouble, parseJavaInt, parseJavaList, parseJavaLong } from './java-values.js';

export type ConfigType = 'INT' | 'LONG' | 'DOUBLE' | 'LIST';

/** DescribeConfigs' ConfigType ids. */
export const CONFIG_TYPE_ID: Record<ConfigType, number> = { INT: 3, LONG: 5, DOUBLE: 6, LIST: 7 };

/** DescribeConfigs' ConfigSource ids (CreateTopics uses the same). */
export const ConfigSource = {
  DYNAMIC_TOPIC_CONFIG: 1,
  STATIC_BROKER_CONFIG: 4,
  DEFAULT_CONFIG: 5,
} as const;

/** INT and DOUBLE as numbers, LONG as bigint (it spans 64 bits), LIST as its items. */
export type ConfigValue = number | bigint | readonly string[];

/** Checks a parsed value; returns Kafka's complete error message, or null when valid. */
type Check = (def: { name: string; type: ConfigType }, value: ConfigValue) => string | null;

export interface BrokerSynonym {
  name: string;
  type: ConfigType;
  /** Milliseconds per unit for the .minutes/.hours forms. */
  msPerUnit?: bigint;
  /** The broker default as Kafka describes it; null where the broker config has no default. */
  defaultValue: string | null;
}

export interface TopicConfigDef {
  name: string;
  type: ConfigType;
  defaultValue: ConfigValue;
  check: Check | null;
  documentation: string;
  /** The broker configs that supply the default, highest priority first. */
  synonyms: readonly BrokerSynonym[];
  /**
   * 'never': only kcompact acts on it, so it never reaches the upstream. 'forwarded': the
   * upstream carries it too where its segments and retention matter (a topic that expires
   * data), rewritten where compaction needs the data kept (effective-policy.ts).
   */
  upstream: 'never' | 'forwarded';
}

export const CLEANUP_POLICY = 'cleanup.policy';
export const DELETE_RETENTION_MS = 'delete.retention.ms';
export const MIN_COMPACTION_LAG_MS = 'min.compaction.lag.ms';
export const MAX_COMPACTION_LAG_MS = 'max.compaction.lag.ms';
export const MIN_CLEANABLE_DIRTY_RATIO = 'min.cleanable.dirty.ratio';
export const SEGMENT_MS = 'segment.ms';
export const SEGMENT_BYTES = 'segment.bytes';
export const RETENTION_MS = 'retention.ms';
export const RETENTION_BYTES = 'retention.bytes';

export const POLICY_COMPACT = 'compact';
export const POLICY_DELETE = 'delete';
const POLICY_VALUES = [POLICY_COMPACT, POLICY_DELETE];

const HOUR_MS = 3_600_000n;
const MINUTE_MS = 60_000n;

/** The value as Java prints it (ConfigDef.convertToString). */
export function formatConfigValue(type: ConfigType, value: ConfigValue): string {
  if (type === 'LIST') return (value as readonly string[]).join(',');
  if (type === 'DOUBLE') return javaDoubleToString(value as number);
  return String(value);
}

function invalid(name: string, shown: string, why: string): string {
  return `Invalid value ${shown} for configuration ${name}: ${why}`;
}

/** ConfigDef.Range: compared as doubles, the bound printed as the Java Integer it was given as. */
function atLeast(min: number): Check {
  return (def, value) => (Number(value) < min ? invalid(def.name, formatConfigValue(def.type, value), `Value must be at least ${min}`) : null);
}

function between(min: number, max: number): Check {
  return (def, value) => {
    const shown = formatConfigValue(def.type, value);
    if (Number(value) < min) return invalid(def.name, shown, `Value must be at least ${min}`);
    if (Number(value) > max) return invalid(def.name, shown, `Value must be no more than ${max}`);
    return null;
  };
}

/** ConfigDef.ValidList as Kafka 4.4 applies it: items in order, an empty item is its own error. */
function validList(allowed: readonly string[]): Check {
  return ({ name }, value) => {
    for (const item of value as readonly string[]) {
      if (item === '') return `Configuration '${name}' values must not be empty.`;
      if (!allowed.includes(item)) return invalid(name, item, `String must be one of: ${allowed.join(', ')}`);
    }
    return null;
  };
}

/** In LogConfig's definition order, which is the order Kafka validates (and reports) them in. */
export const TOPIC_CONFIGS: readonly TopicConfigDef[] = [
  {
    name: SEGMENT_BYTES,
    type: 'INT',
    defaultValue: 1073741824,
    check: atLeast(1048576),
    documentation:
      'This configuration controls the segment file size for the log. Retention and cleaning is always done a file at a time so a larger segment size means fewer files but less granular control over retention. The active segment is rolled once it reaches this size.',
    synonyms: [{ name: 'log.segment.bytes', type: 'INT', defaultValue: '1073741824' }],
    upstream: 'forwarded',
  },
  {
    name: SEGMENT_MS,
    type: 'LONG',
    defaultValue: 604800000n,
    check: atLeast(1),
    documentation:
      "This configuration controls the period of time after which Kafka will force the log to roll even if the segment file isn't full to ensure that retention can delete or compact old data. This forces active segment rolling by time, even if the active segment has not reached <code>segment.bytes</code>. For compacted topics, <code>max.compaction.lag.ms</code> can trigger active segment rolling sooner: the effective time-based roll threshold is the smaller of <code>segment.ms</code> and <code>max.compaction.lag.ms</code>.",
    synonyms: [
      { name: 'log.roll.ms', type: 'LONG', defaultValue: null },
      { name: 'log.roll.hours', type: 'INT', msPerUnit: HOUR_MS, defaultValue: '168' },
    ],
    upstream: 'forwarded',
  },
  {
    name: RETENTION_BYTES,
    type: 'LONG',
    defaultValue: -1n,
    check: null,
    documentation:
      'This configuration controls the maximum size a partition (which consists of log segments) can grow to before we will discard old log segments to free up space if we are using the "delete" retention policy. By default there is no size limit only a time limit. Since this limit is enforced at the partition level, multiply it by the number of partitions to compute the topic retention in bytes. Additionally, retention.bytes configuration operates independently of "segment.ms" and "segment.bytes" configurations. Moreover, it triggers the rolling of new segment if the retention.bytes is configured to zero.',
    synonyms: [{ name: 'log.retention.bytes', type: 'LONG', defaultValue: '-1' }],
    upstream: 'forwarded',
  },
  {
    name: RETENTION_MS,
    type: 'LONG',
    defaultValue: 604800000n,
    check: atLeast(-1),
    documentation:
      'This configuration controls the maximum time we will retain a log before we will discard old log segments to free up space if we are using the "delete" retention policy. This represents an SLA on how soon consumers must read their data. If set to -1, no time limit is applied. Additionally, retention.ms configuration operates independently of "segment.ms" and "segment.bytes" configurations. Moreover, it triggers the rolling of new segment if the retention.ms condition is satisfied.',
    synonyms: [
      { name: 'log.retention.ms', type: 'LONG', defaultValue: null },
      { name: 'log.retention.minutes', type: 'INT', msPerUnit: MINUTE_MS, defaultValue: null },
      { name: 'log.retention.hours', type: 'INT', msPerUnit: HOUR_MS, defaultValue: '168' },
    ],
    upstream: 'forwarded',
  },
  {
    name: DELETE_RETENTION_MS,
    type: 'LONG',
    defaultValue: 86400000n,
    check: atLeast(0),
    documentation:
      'The amount of time to retain delete tombstone markers for <a href="https://kafka.apache.org/documentation/#compaction">log compacted</a> topics. This setting also gives a bound on the time in which a consumer must complete a read if they begin from offset 0 to ensure that they get a valid snapshot of the final stage (otherwise delete tombstones may be collected before they complete their scan).',
    synonyms: [{ name: 'log.cleaner.delete.retention.ms', type: 'LONG', defaultValue: '86400000' }],
    upstream: 'never',
  },
  {
    name: MIN_COMPACTION_LAG_MS,
    type: 'LONG',
    defaultValue: 0n,
    check: atLeast(0),
    documentation: 'The minimum time a message will remain uncompacted in the log. Only applicable for logs that are being compacted.',
    synonyms: [{ name: 'log.cleaner.min.compaction.lag.ms', type: 'LONG', defaultValue: '0' }],
    upstream: 'never',
  },
  {
    name: MAX_COMPACTION_LAG_MS,
    type: 'LONG',
    defaultValue: 9223372036854775807n,
    check: atLeast(1),
    documentation:
      'The maximum time a message will remain ineligible for compaction in the log. Only applicable for logs that are being compacted. Because the active segment is never compacted, for compacted topics this value also drives active segment rolling: the effective time-based roll threshold is the smaller of <code>segment.ms</code> and <code>max.compaction.lag.ms</code>. Active segment rolling moves records out of the active segment, after which <code>max.compaction.lag.ms</code> makes them eligible for compaction even if <code>min.cleanable.dirty.ratio</code> is not met. See <a href="https://kafka.apache.org/documentation/#compaction">log compaction</a>.',
    synonyms: [{ name: 'log.cleaner.max.compaction.lag.ms', type: 'LONG', defaultValue: '9223372036854775807' }],
    upstream: 'never',
  },
  {
    name: MIN_CLEANABLE_DIRTY_RATIO,
    type: 'DOUBLE',
    defaultValue: 0.5,
    check: between(0, 1),
    documentation:
      'This configuration controls how frequently the log compactor will attempt to clean the log (assuming <a href="https://kafka.apache.org/documentation/#compaction">log compaction</a> is enabled). By default we will avoid cleaning a log where more than 50% of the log has been compacted. This ratio bounds the maximum space wasted in the log by duplicates (at 50% at most 50% of the log could be duplicates). A higher ratio will mean fewer, more efficient cleanings but will mean more wasted space in the log. If the max.compaction.lag.ms or the min.compaction.lag.ms configurations are also specified, then the log compactor considers the log to be eligible for compaction as soon as either: (i) the dirty ratio threshold has been met and the log has had dirty (uncompacted) records for at least the min.compaction.lag.ms duration, or (ii) if the log has had dirty (uncompacted) records for at most the max.compaction.lag.ms period.',
    synonyms: [{ name: 'log.cleaner.min.cleanable.ratio', type: 'DOUBLE', defaultValue: '0.5' }],
    upstream: 'never',
  },
  {
    name: CLEANUP_POLICY,
    type: 'LIST',
    defaultValue: [POLICY_DELETE],
    check: validList(POLICY_VALUES),
    documentation:
      'This config designates the retention policy to use on log segments. The "delete" policy (which is the default) will discard old segments when their retention time or size limit has been reached. The "compact" policy will enable <a href="https://kafka.apache.org/documentation/#compaction">log compaction</a>, which retains the latest value for each key. It is also possible to specify both policies in a comma-separated list (e.g. "delete,compact"). In this case, old segments will be discarded per the retention time and size configuration, while retained segments will be compacted. An empty list means infinite retention - no cleanup policies will be applied and log segments will be retained indefinitely. Note that with remote storage enabled, local retention limits (log.local.retention.ms and log.local.retention.bytes) are still applied to local segments.',
    synonyms: [{ name: 'log.cleanup.policy', type: 'LIST', defaultValue: POLICY_DELETE }],
    upstream: 'never',
  },
];

export const TOPIC_CONFIG: ReadonlyMap<string, TopicConfigDef> = new Map(TOPIC_CONFIGS.map((d) => [d.name, d]));

/** Whether kcompact handles this topic config (validates, stores and describes it). */
export function isOwnedConfig(name: string): boolean {
  return TOPIC_CONFIG.has(name);
}

export type Parsed = { ok: true; value: ConfigValue } | { ok: false; message: string };

/** Parses a raw value as ConfigDef would (type, then validator); Kafka's message when invalid. */
export function parseConfigValue(def: TopicConfigDef, raw: string): Parsed {
  const value = parseTyped(def.type, raw);
  if (value === null) return { ok: false, message: invalid(def.name, raw, `Not a number of type ${def.type}`) };
  const problem = def.check?.(def, value) ?? null;
  if (problem !== null) return { ok: false, message: problem };
  // Kafka 4.4 keeps the first of repeated list items ("compact,compact" describes as "compact").
  return { ok: true, value: def.type === 'LIST' ? [...new Set(value as string[])] : value };
}

/** ConfigDef.parseType for the types used here; null where Java would throw NumberFormatException. */
export function parseTyped(type: ConfigType, raw: string): ConfigValue | null {
  switch (type) {
    case 'INT':
      return parseJavaInt(javaTrim(raw));
    case 'LONG':
      return parseJavaLong(javaTrim(raw));
    case 'DOUBLE':
      return parseJavaDouble(raw);
    case 'LIST':
      return parseJavaList(raw);
  }
}
