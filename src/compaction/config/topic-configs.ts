/**
 * The topic-config layer, assembled: broker defaults, static topics, the configs topic with its
 * SQLite cache, and the filters for the topic admin APIs. The coordinator puts `filters` in the
 * proxy's chain and passes `view` to whatever needs to know which topics are compacted.
 */
import type { Logger } from '../../common/log.js';
import type { Filter } from '../../proxy/filter/filter.js';
import type { TopicIds } from '../../proxy/topic-ids.js';
import type { TopicConfigView } from '../../engine/api/topic-policy.js';
import { alterConfigsFilter } from './alter-configs.js';
import { BrokerDefaults } from './broker-defaults.js';
import { ConfigCache } from './config-cache.js';
import type { CarryingRule, ConfigContext } from './config-context.js';
import { ConfigSync } from './config-sync.js';
import { CONFIGS_TOPIC, ConfigsTopic } from './configs-topic.js';
import { TopicConfigError } from './config-error.js';
import { createPartitionsFilter } from './create-partitions.js';
import { createTopicsFilter } from './create-topics.js';
import { deleteTopicsFilter } from './delete-topics.js';
import { describeConfigsFilter } from './describe-configs.js';
import { incrementalAlterConfigsFilter } from './incremental-alter-configs.js';
import { StoreSegments } from './store-segments.js';
import { TopicConfigState, type StaticTopic } from './topic-config-state.js';
import type { UpstreamClusterClient } from '../../upstream/upstream-cluster-client.js';
import type { UpstreamConnector } from '../../upstream/upstream-connector.js';
import { connectCluster, type ConnectionOptions } from '../../upstream/connection-options.js';
import { DEFAULT_CLEANER } from '../../engine/api/engine-options.js';

export type { StaticTopic } from './topic-config-state.js';
export { TopicConfigError };
export { CONFIGS_TOPIC } from './configs-topic.js';

/** The config layer's settings: which topics are compacted and how, and how the store's retention is met. */
export interface ConfigLayerOptions {
  /** Topics whose configs come from kcompact's configuration (the topics setting); they win over stored configs. */
  staticTopics: readonly StaticTopic[];
  /** kcompact's broker-level defaults by Kafka's broker config names (log.cleanup.policy, log.roll.hours, ...). */
  brokerConfigs: Readonly<Record<string, string>>;
  /** How often the configs topic is polled for changes made through other replicas. */
  pollIntervalMs: number;
  /** Share of a store's capped retention at which records are carried again. */
  carryRetentionShare: number;
  /** The store's retention where it cannot describe configs; unset: learned from its DescribeConfigs. */
  storeRetentionMs?: number;
}

export const DEFAULT_CONFIG_LAYER: Readonly<ConfigLayerOptions> = {
  staticTopics: [],
  brokerConfigs: {},
  pollIntervalMs: 500,
  // A whole half of the retention for a pass to go wrong and be retried.
  carryRetentionShare: 0.5,
};

/** The config layer's options with the defaults above for what is not given (tests; the proxy gives all). */
export function configLayerOptions(given: Partial<ConfigLayerOptions>): ConfigLayerOptions {
  return {
    staticTopics: given.staticTopics ?? DEFAULT_CONFIG_LAYER.staticTopics,
    brokerConfigs: given.brokerConfigs ?? DEFAULT_CONFIG_LAYER.brokerConfigs,
    pollIntervalMs: given.pollIntervalMs ?? DEFAULT_CONFIG_LAYER.pollIntervalMs,
    carryRetentionShare: given.carryRetentionShare ?? DEFAULT_CONFIG_LAYER.carryRetentionShare,
    ...(given.storeRetentionMs !== undefined && { storeRetentionMs: given.storeRetentionMs }),
  };
}

export interface TopicConfigsOptions {
  layer: ConfigLayerOptions;
  /** The store; its timeout is that of the layer's own requests too. */
  connection: ConnectionOptions;
  /** Holds the SQLite cache (topic-configs.sqlite). */
  dataDir: string;
  /** The proxy's topic ids (ProxyServer.topics). */
  topicIds: TopicIds;
  log: Logger;
  /** TLS and SASL of the config layer's upstream connections. */
  connector?: UpstreamConnector;
  /** The proxy's upstream client, shared; without it the layer opens its own from the settings above. */
  client?: UpstreamClusterClient;
  /** How survivors are carried where the store caps retention (default: the layer's share, the cleaner's default rounds). */
  carrying?: CarryingRule;
  /**
   * Whether this replica sets the store's segments of compact-only topics, so that what a pass
   * lets go is freed (store-segments.ts): only where it carries (default false).
   */
  storeSegments?: boolean;
}

export interface TopicConfigs {
  view: TopicConfigView;
  /** The topic admin APIs' filters, in chain order (each hooks its own API). */
  filters: Filter[];
  /** Settles once the configs topic has been read to its end (or the upstream proved unable to hold it). */
  caughtUp: Promise<void>;
  close(): Promise<void>;
}

/**
 * The configs topic is one of the topics kcompact compacts, with Kafka's defaults: every replica
 * indexes it, and passes carry its records where the store caps retention (docs/carrying.md),
 * so a replica started after the originals expired still learns every topic's configs.
 */
function withConfigsTopic(statics: readonly StaticTopic[]): StaticTopic[] {
  if (statics.some((t) => t.topic === CONFIGS_TOPIC)) {
    throw new TopicConfigError(`${CONFIGS_TOPIC} is kcompact's own configs topic and compacted by kcompact itself: remove it from the static topics`);
  }
  return [...statics, { topic: CONFIGS_TOPIC, configs: { 'cleanup.policy': 'compact' } }];
}

/**
 * Resolves once the view can be trusted: right away when the cache holds a checkpoint (the
 * topic is then caught up in the background), else after the configs topic was read to its end.
 * Throws TopicConfigError for unusable brokerConfigs or staticTopics.
 */
export async function createTopicConfigs(opts: TopicConfigsOptions): Promise<TopicConfigs> {
  const log = opts.log.child({ component: 'topic-configs' });
  const defaults = new BrokerDefaults(opts.layer.brokerConfigs);
  const state = new TopicConfigState(defaults, opts.topicIds, withConfigsTopic(opts.layer.staticTopics), log);
  const requestTimeoutMs = opts.connection.requestTimeoutMs;
  const cache = ConfigCache.open(opts.dataDir, log);
  const cached = cache.load();
  for (const [topic, e] of cached.entries) state.apply(e.offset, topic, e.configs === null ? null : { topicId: e.topicId, configs: e.configs });
  const links = opts.client ?? connectCluster(opts.connection, { clientId: 'kcompact-topic-configs', connector: opts.connector, log });
  opts.topicIds.watch(links);
  const sync = new ConfigSync(
    new ConfigsTopic(links, log, requestTimeoutMs),
    cache,
    state,
    links,
    { nextOffset: cached.nextOffset ?? 0, storeTopicId: cached.storeTopicId },
    { pollIntervalMs: opts.layer.pollIntervalMs, log },
  );
  const storeSegments = opts.storeSegments ? new StoreSegments({ configs: state, defaults, links, log, caughtUp: sync.caughtUp }) : undefined;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    storeSegments?.close();
    if (links !== opts.client) links.close();
    await sync.close();
    cache.close();
  };
  sync.start();
  if (cached.nextOffset === null) await sync.caughtUp;
  const carrying = opts.carrying ?? { share: opts.layer.carryRetentionShare, backoffMs: DEFAULT_CLEANER.backoffMs };
  const ctx: ConfigContext = { state, sync, links, defaults, topicIds: opts.topicIds, log, requestTimeoutMs, carrying, storeSegments };
  storeSegments?.start();
  const filters = [
    createTopicsFilter(ctx),
    describeConfigsFilter(ctx),
    alterConfigsFilter(ctx),
    incrementalAlterConfigsFilter(ctx),
    deleteTopicsFilter(ctx),
    createPartitionsFilter,
  ];
  return { view: state, filters, caughtUp: sync.caughtUp, close };
}
