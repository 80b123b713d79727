/**
 * The topic-config layer, assembled: broker defaults, static topics, the configs topic with its
 * SQLite cache, and the filters for the topic admin APIs. The coordinator puts `filters` in the
 * proxy's chain and passes `view` to whatever needs to know which topics are compacted.
 */
import type { Logger } from '../../common/log.js';
import type { HostPort } from '../../common/host-port.js';
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
import { UpstreamClusterClient } from '../../upstream/upstream-cluster-client.js';
import type { UpstreamConnector } from '../../upstream/upstream-connector.js';

export type { StaticTopic } from './topic-config-state.js';
export { TopicConfigError };
export { CONFIGS_TOPIC } from './configs-topic.js';

export interface TopicConfigsOptions {
  upstream: readonly HostPort[];
  /** Holds the SQLite cache (topic-configs.sqlite). */
  dataDir: string;
  /** Topics whose configs come from kcompact's configuration; they win over stored configs. */
  staticTopics?: readonly StaticTopic[];
  /** kcompact's broker-level defaults by Kafka's broker config names (log.cleanup.policy, log.roll.hours, ...). */
  brokerConfigs?: Readonly<Record<string, string>>;
  /** The proxy's topic ids (ProxyServer.topics). */
  topicIds: TopicIds;
  log: Logger;
  /** How often the configs topic is polled for changes made through other replicas (default 500). */
  pollIntervalMs?: number;
  requestTimeoutMs?: number;
  maxFrameBytes?: number;
  /** TLS and SASL of the config layer's upstream connections. */
  connector?: UpstreamConnector;
  /** The proxy's upstream client, shared; without it the layer opens its own from the settings above. */
  client?: UpstreamClusterClient;
  /** How survivors are carried where the store caps retention (default: half the retention, 15 s rounds). */
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
  const defaults = new BrokerDefaults(opts.brokerConfigs);
  const state = new TopicConfigState(defaults, opts.topicIds, withConfigsTopic(opts.staticTopics ?? []), log);
  const requestTimeoutMs = opts.requestTimeoutMs ?? 30_000;
  const cache = ConfigCache.open(opts.dataDir, log);
  const cached = cache.load();
  for (const [topic, e] of cached.entries) state.apply(e.offset, topic, e.configs === null ? null : { topicId: e.topicId, configs: e.configs });
  const links =
    opts.client ??
    new UpstreamClusterClient({
      bootstrap: opts.upstream,
      clientId: 'kcompact-topic-configs',
      requestTimeoutMs,
      maxFrameBytes: opts.maxFrameBytes ?? 100 * 1024 * 1024,
      connector: opts.connector,
      log,
    });
  opts.topicIds.watch(links);
  const sync = new ConfigSync(
    new ConfigsTopic(links, log, requestTimeoutMs),
    cache,
    state,
    links,
    { nextOffset: cached.nextOffset ?? 0, storeTopicId: cached.storeTopicId },
    { pollIntervalMs: opts.pollIntervalMs ?? 500, log },
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
  const carrying = opts.carrying ?? { share: 0.5, backoffMs: 15_000 };
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
