/**
 * How Kafka 4.4 presents one owned config of a topic. DescribeConfigs (the broker's
 * ConfigHelper) shows the parsed value in Java's canonical form, a source taken from the first
 * synonym, and synonyms and documentation when asked. A CreateTopics response (the controller's
 * KafkaConfigSchema) shows the value as it was given, no synonyms.
 */
import type {
  CreateTopicsResponseCreatableTopicConfigs as CreatedConfig,
  DescribeConfigsResponseResourceResult as DescribedConfig,
} from '../../protocol/messages.js';
import type { BrokerDefaults } from './broker-defaults.js';
import { CONFIG_TYPE_ID, ConfigSource, formatConfigValue, parseConfigValue, type TopicConfigDef } from './definitions.js';

export interface DescribeOptions {
  includeSynonyms: boolean;
  includeDocumentation: boolean;
}

export function describeEntry(def: TopicConfigDef, override: string | undefined, defaults: BrokerDefaults, opts: DescribeOptions): DescribedConfig {
  const parsed = override === undefined ? undefined : parseConfigValue(def, override);
  const value = parsed?.ok ? parsed.value : defaults.value(def);
  const shown = formatConfigValue(def.type, value);
  const synonyms = defaults.synonyms(def);
  if (parsed?.ok) synonyms.unshift({ name: def.name, value: shown, source: ConfigSource.DYNAMIC_TOPIC_CONFIG });
  return {
    name: def.name,
    value: shown,
    readOnly: false,
    configSource: synonyms[0]?.source ?? ConfigSource.DEFAULT_CONFIG,
    isSensitive: false,
    synonyms: opts.includeSynonyms ? synonyms : [],
    configType: CONFIG_TYPE_ID[def.type],
    documentation: opts.includeDocumentation ? def.documentation : null,
  };
}

export function createdEntry(def: TopicConfigDef, override: string | undefined, defaults: BrokerDefaults): CreatedConfig {
  const { value, source } = override === undefined ? defaults.created(def) : { value: override, source: ConfigSource.DYNAMIC_TOPIC_CONFIG };
  return { name: def.name, value, readOnly: false, configSource: source, isSensitive: false };
}
