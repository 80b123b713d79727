/**
 * Compaction for the proxy, assembled: the topic-config layer (which topics are compacted, kept
 * in the upstream), the engine (key index, indexer and cleaner in a worker thread), and the
 * filters clients meet (configs, produce guard, fetch view).
 */
import type { Logger } from '../ops/log.js';
import type { HostPort } from '../proxy/broker-map.js';
import type { Filter } from '../proxy/filter/filter.js';
import type { TopicIds } from '../proxy/topic-ids.js';
import { createTopicConfigs, type StaticTopic, type TopicConfigs } from './config/topic-configs.js';
import { startCompactionEngine, type CompactionEngine } from './worker/compaction-engine.js';
import type { IndexerOptions } from './indexer/indexer.js';
import type { KeyIdentityRules } from './key-identity/key-identity-rules.js';
import { createProduceGuard } from './produce-guard/produce-guard.js';
import { createFetchView, type FetchView } from './fetch-view/fetch-view.js';
import { createListOffsetsView } from './offsets/list-offsets-view.js';
import { UpstreamPartitionReads } from './fetch-view/upstream-partition-reads.js';
import type { TopicPolicy } from './policy.js';
import type { UpstreamConnector } from '../upstream/upstream-connector.js';
import { UpstreamClusterClient } from '../upstream/upstream-cluster-client.js';

export interface CompactionOptions {
  upstream: HostPort[];
  dataDir: string;
  topicIds: TopicIds;
  log: Logger;
  maxFrameBytes: number;
  requestTimeoutMs: number;
  /** Pause between cleaner rounds (Kafka's log.cleaner.backoff.ms). */
  cleanerBackoffMs: number;
  /** Whether this replica carries survivors forward (docs/carrying.md). */
  carry?: boolean;
  /** Topics compacted by kcompact's own configuration (for stores without admin APIs). */
  staticTopics?: readonly StaticTopic[];
  /** Broker-level defaults by Kafka's broker config names (log.cleanup.policy, log.cleaner.delete.retention.ms, ...). */
  brokerConfigs?: Readonly<Record<string, string>>;
  /** How often configs changed through other replicas are picked up. */
  configPollIntervalMs?: number;
  /** Indexer fetch tuning (tests shorten waits). */
  indexer?: IndexerOptions;
  /** How keys compare per topic (the keyIdentity setting) and the schema registry "registry" decodes with. */
  keyIdentity?: KeyIdentityRules;
  schemaRegistryUrl?: string;
  /** TLS and SASL of every upstream connection compaction makes (the worker builds its own from its settings). */
  upstreamConnector?: UpstreamConnector;
  /**
   * The proxy's upstream client, shared by the config layer and the fetch view's and produce
   * guard's reads; without it compaction opens its own (the worker thread always does).
   */
  upstreamClient?: UpstreamClusterClient;
  /** Memory for compacted reads served again (the viewCacheBytes setting). */
  viewCacheBytes?: number;
}

export interface Compaction {
  /** What compaction does to client traffic, in chain order. */
  filters: Filter[];
  configs: TopicConfigs;
  engine: CompactionEngine;
  /** The Fetch view, for its counters. */
  fetchView: FetchView;
  close(): Promise<void>;
}

export async function startCompaction(opts: CompactionOptions): Promise<Compaction> {
  const upstream =
    opts.upstreamClient ??
    new UpstreamClusterClient({
      bootstrap: opts.upstream,
      clientId: 'kcompact',
      maxFrameBytes: opts.maxFrameBytes,
      requestTimeoutMs: opts.requestTimeoutMs,
      connector: opts.upstreamConnector,
      log: opts.log,
    });
  const closeUpstream = () => {
    if (upstream !== opts.upstreamClient) upstream.close();
  };
  const configs = await createTopicConfigs({
    upstream: opts.upstream,
    dataDir: opts.dataDir,
    staticTopics: opts.staticTopics,
    brokerConfigs: opts.brokerConfigs,
    topicIds: opts.topicIds,
    log: opts.log,
    pollIntervalMs: opts.configPollIntervalMs,
    requestTimeoutMs: opts.requestTimeoutMs,
    maxFrameBytes: opts.maxFrameBytes,
    connector: opts.upstreamConnector,
    client: upstream,
  }).catch((err: unknown) => {
    closeUpstream();
    throw err;
  });
  let engine: CompactionEngine;
  try {
    engine = await startCompactionEngine({
      upstream: opts.upstream,
      dataDir: opts.dataDir,
      log: opts.log,
      cleanerBackoffMs: opts.cleanerBackoffMs,
      carry: opts.carry ?? false,
      maxFrameBytes: opts.maxFrameBytes,
      requestTimeoutMs: opts.requestTimeoutMs,
      indexer: opts.indexer,
      keyIdentity: opts.keyIdentity,
      schemaRegistryUrl: opts.schemaRegistryUrl,
      upstreamSecurity: opts.upstreamConnector?.settings,
    });
  } catch (err) {
    await configs.close();
    closeUpstream();
    throw err;
  }
  // The engine drops the index of any topic missing from the map, so it always gets the whole set.
  const pushPolicies = () => {
    const policies = new Map<string, TopicPolicy>();
    for (const topic of configs.view.compactedTopics()) {
      const policy = configs.view.compacted(topic);
      if (policy) policies.set(topic, policy);
    }
    engine.setPolicies(policies);
  };
  pushPolicies();
  const unsubscribe = configs.view.onChange(pushPolicies);

  const pool = new UpstreamPartitionReads({ upstream, topicIds: opts.topicIds });
  const produceGuard = createProduceGuard({
    config: configs.view,
    topicIds: opts.topicIds,
    log: opts.log,
    resolveTopicIds: (ids) => pool.resolveTopicIds(ids),
    logStartOffset: (topic, partition) => pool.logStartOffset(topic, partition),
  });
  const fetchView = createFetchView({
    config: configs.view,
    index: engine.index,
    topicIds: opts.topicIds,
    upstream: pool,
    log: opts.log,
    cacheBytes: opts.viewCacheBytes,
    carrying: opts.carry ?? false,
  });

  const listOffsetsView = createListOffsetsView({
    config: configs.view,
    index: engine.index,
    offsetForTime: (topic, partition, timestamp) => engine.offsetForTime(topic, partition, timestamp),
  });
  const filters = [...configs.filters, produceGuard, fetchView, listOffsetsView];
  return {
    filters,
    configs,
    engine,
    fetchView,
    close: async () => {
      unsubscribe();
      // First: requests in flight on the proxy's own connections end now, not at their timeout.
      closeUpstream();
      await engine.close();
      await configs.close();
    },
  };
}
