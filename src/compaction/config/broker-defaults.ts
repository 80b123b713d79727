/**
 * kcompact's broker-level defaults for the topic configs it owns, named as Kafka names them in
 * server.properties (log.cleanup.policy, log.cleaner.delete.retention.ms, log.roll.hours, ...).
 * They play the part of a Kafka broker's static configs: they supply a topic's value when the
 * topic has no override, and DescribeConfigs shows them as STATIC_BROKER_CONFIG synonyms.
 */
import { TopicConfigError } from './config-error.js';
import {
  ConfigSource,
  formatConfigValue,
  parseConfigValue,
  parseTyped,
  RETENTION_MS,
  TOPIC_CONFIGS,
  type BrokerSynonym,
  type ConfigValue,
  type TopicConfigDef,
} from './definitions.js';

export interface SynonymEntry {
  name: string;
  value: string;
  source: number;
}

interface StaticDefault {
  synonym: BrokerSynonym;
  raw: string;
  value: ConfigValue;
}

const SYNONYM_OWNER = new Map<string, TopicConfigDef>(TOPIC_CONFIGS.flatMap((d) => d.synonyms.map((s) => [s.name, d] as const)));

/** A topic config's value where the topic has no override: what validation and policies read. */
export interface DefaultValues {
  value(def: TopicConfigDef): ConfigValue;
}

/** Throws TopicConfigError for a name that is no synonym of an owned topic config, or a bad value. */
function staticDefaults(configs: Readonly<Record<string, string>>): Map<string, StaticDefault> {
  for (const name of Object.keys(configs)) {
    if (!SYNONYM_OWNER.has(name)) {
      const known = [...SYNONYM_OWNER.keys()].join(', ');
      throw new TopicConfigError(`broker config ${name} is not one kcompact knows; it takes: ${known}`);
    }
  }
  const statics = new Map<string, StaticDefault>();
  for (const def of TOPIC_CONFIGS) {
    const synonym = def.synonyms.find((s) => Object.hasOwn(configs, s.name));
    if (!synonym) continue;
    const raw = configs[synonym.name]!;
    statics.set(def.name, { synonym, raw, value: topicValue(def, synonym, raw) });
  }
  return statics;
}

/**
 * The topic configs' values under these broker configs (the brokerConfigs setting), for checking
 * static topics against them. Throws TopicConfigError as validateBrokerConfigs does.
 */
export function brokerDefaultValues(configs: Readonly<Record<string, string>>): DefaultValues {
  const statics = staticDefaults(configs);
  return { value: (def) => statics.get(def.name)?.value ?? def.defaultValue };
}

/** Throws TopicConfigError naming the first broker config that is not one kcompact knows, or has a bad value. */
export function validateBrokerConfigs(configs: Readonly<Record<string, string>>): void {
  staticDefaults(configs);
}

export class BrokerDefaults implements DefaultValues {
  private readonly raw: ReadonlyMap<string, string>;
  private readonly statics: ReadonlyMap<string, StaticDefault>;

  /** Throws TopicConfigError for a name that is no synonym of an owned topic config, or a bad value. */
  constructor(configs: Readonly<Record<string, string>> = {}) {
    this.statics = staticDefaults(configs);
    this.raw = new Map(Object.entries(configs));
  }

  /** The value of def for a topic without an override. */
  value(def: TopicConfigDef): ConfigValue {
    return this.statics.get(def.name)?.value ?? def.defaultValue;
  }

  /**
   * The broker synonyms DescribeConfigs lists for def: set broker configs (STATIC_BROKER_CONFIG)
   * then Kafka's own defaults (DEFAULT_CONFIG), each in priority order, minus everything before
   * the first entry for the highest-priority name. That last step is Kafka's
   * (ConfigHelper.configSynonyms' dropWhile): it is why retention.ms and segment.ms list no
   * synonym at all while only log.retention.hours / log.roll.hours are set or defaulted.
   */
  synonyms(def: TopicConfigDef): SynonymEntry[] {
    const entries: SynonymEntry[] = [];
    for (const s of def.synonyms) {
      const raw = this.raw.get(s.name);
      if (raw !== undefined) entries.push({ name: s.name, value: raw, source: ConfigSource.STATIC_BROKER_CONFIG });
    }
    for (const s of def.synonyms) {
      if (s.defaultValue !== null) entries.push({ name: s.name, value: s.defaultValue, source: ConfigSource.DEFAULT_CONFIG });
    }
    const first = entries.findIndex((e) => e.name === def.synonyms[0]!.name);
    return first < 0 ? [] : entries.slice(first);
  }

  /**
   * def's value and source without an override as Kafka's controller reports them in a
   * CreateTopics response: the raw broker setting (minutes and hours turned into milliseconds),
   * or Kafka's default.
   */
  created(def: TopicConfigDef): { value: string; source: number } {
    const s = this.statics.get(def.name);
    if (!s) return { value: formatConfigValue(def.type, def.defaultValue), source: ConfigSource.DEFAULT_CONFIG };
    const value = s.synonym.msPerUnit === undefined ? s.raw : String((parseTyped(s.synonym.type, s.raw) as number) * Number(s.synonym.msPerUnit));
    return { value, source: ConfigSource.STATIC_BROKER_CONFIG };
  }
}

/** The broker config's value as the topic config's: hours and minutes become milliseconds. */
function topicValue(def: TopicConfigDef, synonym: BrokerSynonym, raw: string): ConfigValue {
  const typed = parseTyped(synonym.type, raw);
  if (typed === null) throw new TopicConfigError(`broker config ${synonym.name}=${raw} is not a valid ${synonym.type}`);
  let asTopicValue = raw;
  if (synonym.msPerUnit !== undefined) {
    let ms = BigInt(typed as number) * synonym.msPerUnit;
    // KafkaConfig.logRetentionTimeMillis: any negative retention means unlimited.
    if (def.name === RETENTION_MS && ms < 0n) ms = -1n;
    asTopicValue = String(ms);
  }
  const parsed = parseConfigValue(def, asTopicValue);
  if (!parsed.ok) throw new TopicConfigError(`broker config ${synonym.name}=${raw}: ${parsed.message}`);
  return parsed.value;
}
