/**
 * The topic configs in force, in memory: static topics from kcompact's own configuration (they
 * win), and the configs topic's records applied in offset order. This is what the rest of
 * kcompact reads through TopicConfigView.
 */
import type { Logger } from '../../common/log.js';
import type { TopicIds } from '../../proxy/topic-ids.js';
import type { TopicConfigView, TopicPolicy } from '../../engine/api/topic-policy.js';
import { brokerDefaultValues, type BrokerDefaults, type DefaultValues } from './broker-defaults.js';
import { TopicConfigError } from './config-error.js';
import { isOwnedConfig } from './definitions.js';
import { topicPolicy, type TopicOverrides } from './effective-policy.js';
import type { StoredTopic } from './stored-topic.js';
import { validateOverrides } from './validate.js';

/** A topic whose configs come from kcompact's configuration, for stores without admin APIs. */
export interface StaticTopic {
  topic: string;
  configs: Readonly<Record<string, string>>;
}

/** The last record for a topic name; configs null once it was deleted (kept so older records cannot revive it). */
export interface StoredEntry {
  offset: number;
  topicId?: string;
  configs: Record<string, string> | null;
}

interface Resolved {
  configs: TopicOverrides;
  policy: TopicPolicy;
}

/** Throws TopicConfigError naming the first static topic listed twice, or with a config kcompact does not handle or cannot use. */
function checkStaticTopics(staticTopics: readonly StaticTopic[], defaults: DefaultValues): void {
  const seen = new Set<string>();
  for (const { topic, configs } of staticTopics) {
    if (seen.has(topic)) throw new TopicConfigError(`static topic ${topic} is listed twice`);
    seen.add(topic);
    for (const name of Object.keys(configs)) {
      if (!isOwnedConfig(name)) throw new TopicConfigError(`static topic ${topic}: ${name} is not a config kcompact handles; set it on the upstream`);
    }
    const problem = validateOverrides(configs, defaults);
    if (problem !== null) throw new TopicConfigError(`static topic ${topic}: ${problem}`);
  }
}

/**
 * The static topics (the topics setting) as TopicConfigState will take them, under these broker
 * configs: throws TopicConfigError as its constructor would, for the broker configs first.
 */
export function validateStaticTopics(staticTopics: readonly StaticTopic[], brokerConfigs: Readonly<Record<string, string>>): void {
  checkStaticTopics(staticTopics, brokerDefaultValues(brokerConfigs));
}

export class TopicConfigState implements TopicConfigView {
  private readonly statics = new Map<string, Resolved>();
  private readonly stored = new Map<string, StoredEntry & { resolved: Resolved | null; applies: boolean }>();
  private readonly listeners = new Set<(topic: string) => void>();

  constructor(
    private readonly defaults: BrokerDefaults,
    private readonly topicIds: TopicIds,
    staticTopics: readonly StaticTopic[],
    private readonly log: Logger,
  ) {
    checkStaticTopics(staticTopics, defaults);
    for (const { topic, configs } of staticTopics) this.statics.set(topic, this.resolve(configs));
  }

  compacted(topic: string): TopicPolicy | undefined {
    const policy = this.inForce(topic)?.policy;
    return policy?.compact ? policy : undefined;
  }

  compactedTopics(): string[] {
    const names = new Set<string>();
    for (const [topic, r] of this.statics) if (r.policy.compact) names.add(topic);
    for (const topic of this.stored.keys()) if (this.compacted(topic)) names.add(topic);
    return [...names];
  }

  onChange(listener: (topic: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  isStatic(topic: string): boolean {
    return this.statics.has(topic);
  }

  /** The owned overrides in force for the topic: static, else stored for its current incarnation, else none. */
  overrides(topic: string): TopicOverrides {
    return this.inForce(topic)?.configs ?? {};
  }

  /** The last stored record for the name, whether or not it applies to the topic now. */
  entry(topic: string): StoredEntry | undefined {
    const e = this.stored.get(topic);
    return e && { offset: e.offset, topicId: e.topicId, configs: e.configs };
  }

  /** Applies the record at offset unless the name already holds a later one; true when it did. */
  apply(offset: number, topic: string, value: StoredTopic | null): boolean {
    const current = this.stored.get(topic);
    if (current && current.offset >= offset) return false;
    const resolved = value === null ? null : this.resolve(value.configs);
    this.stored.set(topic, {
      offset,
      topicId: value?.topicId,
      configs: value === null ? null : { ...value.configs },
      resolved,
      applies: this.belongs(topic, value?.topicId),
    });
    this.emit(topic);
    return true;
  }

  /** Every stored record, for a fresh start after the configs topic was replaced. */
  clear(): void {
    const names = [...this.stored.keys()];
    this.stored.clear();
    for (const topic of names) this.emit(topic);
  }

  /** Announces topics whose stored configs stopped (or started) applying because the upstream's topic id changed. */
  recheckTopicIds(): void {
    for (const [topic, e] of this.stored) {
      const applies = this.belongs(topic, e.topicId);
      if (applies === e.applies) continue;
      e.applies = applies;
      this.emit(topic);
    }
  }

  /** Stored topics that carry a topic id, whose current id is worth learning. */
  topicsWithIds(): string[] {
    return [...this.stored].filter(([, e]) => e.topicId !== undefined && e.configs !== null).map(([t]) => t);
  }

  private inForce(topic: string): Resolved | null | undefined {
    const fixed = this.statics.get(topic);
    if (fixed) return fixed;
    const e = this.stored.get(topic);
    return e && this.belongs(topic, e.topicId) ? e.resolved : undefined;
  }

  /** Whether configs stored for a topic id belong to the topic now under that name (unknown ids match). */
  private belongs(topic: string, storedId: string | undefined): boolean {
    const current = this.topicIds.id(topic);
    return storedId === undefined || current === undefined || current === storedId;
  }

  private resolve(configs: TopicOverrides): Resolved {
    const owned: Record<string, string> = {};
    for (const [name, value] of Object.entries(configs)) if (isOwnedConfig(name)) owned[name] = value;
    return { configs: owned, policy: topicPolicy(owned, this.defaults) };
  }

  private emit(topic: string): void {
    for (const listener of this.listeners) {
      try {
        listener(topic);
      } catch (err) {
        this.log.error('a topic config listener failed', { topic, err });
      }
    }
  }
}
