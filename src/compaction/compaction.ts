/**
 * Compaction for the proxy, assembled: the topic-config layer (which topics are compacted, kept
 * in the upstream), the engine (key index, indexer and cleaner in a worker thread), and the
 * filters clients meet (configs, produce guard, fetch view).
 */
import type { Logger } from '../common/log.js';
import type { HostPort } from '../common/host-port.js';
import type { Filter } from '../proxy/filter/filter.js';
import type { TopicIds } from '../proxy/topic-ids.js';
import { createTopicConfigs, type StaticTopic, type TopicConfigs } from './config/topic-configs.js';
import type { CompactionEngine } from '../engine/api/engine-handle.js';
import { startCompactionEngine } from './engine-client/compaction-engine.js';
import type { IndexerOptions } from '../engine/api/engine-options.js';
import type { KeyIdentityRules } from '../engine/api/key-identity-rules.js';
import { createProduceGuard } from './produce-guard/produce-guard.js';
import { createFetchView, type FetchView } from './fetch-view/fetch-view.js';
import { createListOffsetsView } from './list-offsets/list-offsets-view.js';
import { endsWithOwnRecords } from './list-offsets/store-tail.js';
import { createShareFetchView, type ShareFetchView } from './fetch-view/share-fetch-view.js';
import { UpstreamPartitionReads } from './fetch-view/upstream-partition-reads.js';
import type { TopicPolicy } from '../engine/api/topic-policy.js';
import type { UpstreamConnector } from '../upstream/upstream-connector.js';
import { UpstreamClusterClient } from '../upstream/upstream-cluster-client.js';
import type { CarrierGroupSettings } from '../engine/api/engine-protocol.js';
import { StoreRetention } from './config/store-retention.js';

/** Carry again at half the store's retention: a whole half for a pass to go wrong and be retried. */
export const DEFAULT_CARRY_SHARE = 0.5;

export interface CompactionOptions {
  upstream: HostPort[];
  dataDir: string;
  topicIds: TopicIds;
  log: Logger;
  maxFrameBytes: number;
  requestTimeoutMs: number;
  /** Pause between cleaner rounds (Kafka's log.cleaner.backoff.ms). */
  cleanerBackoffMs: number;
  /** The group in which replicas elect each partition's carrier (docs/carrying.md); without one, this replica never carries. */
  carrierGroup?: CarrierGroupSettings;
  /** Whether only the partitions this replica carries or its clients use are indexed (default true); false indexes every one. */
  indexOnDemand?: boolean;
  /** How long a partition this replica does not carry stays indexed after its clients' last use. */
  indexIdleMs?: number;
  /** Share of a store's capped retention at which records are carried again (default 0.5). */
  carryRetentionShare?: number;
  /** The store's retention where it cannot describe configs (unset: it keeps everything). */
  storeRetentionMs?: number;
  /** What this replica's carry passes may write (and read) per second, all partitions together; 0 or unset: unbounded. */
  carryBytesPerSecond?: number;
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
  shareFetchView: ShareFetchView;
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
  // The config layer reads the store while the worker thread starts: neither waits for the other.
  const [configsStarted, engineStarted] = await Promise.allSettled([
    createTopicConfigs({
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
      carrying: {
        share: opts.carryRetentionShare ?? DEFAULT_CARRY_SHARE,
        backoffMs: opts.cleanerBackoffMs,
        // A replica that never carries leaves the rate to the ones that do.
        bytesPerSecond: opts.carrierGroup ? (opts.carryBytesPerSecond ?? 0) : 0,
      },
      // A replica that carries sets the store's segments, so that what its passes let go is freed.
      storeSegments: opts.carrierGroup !== undefined,
    }),
    startCompactionEngine({
      upstream: opts.upstream,
      dataDir: opts.dataDir,
      log: opts.log,
      cleanerBackoffMs: opts.cleanerBackoffMs,
      ...(opts.carrierGroup && { carrierGroup: opts.carrierGroup }),
      ...(opts.carryBytesPerSecond !== undefined && { carryBytesPerSecond: opts.carryBytesPerSecond }),
      ...(opts.indexIdleMs !== undefined && { indexIdleMs: opts.indexIdleMs }),
      ...(opts.indexOnDemand !== undefined && { indexOnDemand: opts.indexOnDemand }),
      maxFrameBytes: opts.maxFrameBytes,
      requestTimeoutMs: opts.requestTimeoutMs,
      indexer: opts.indexer,
      keyIdentity: opts.keyIdentity,
      schemaRegistryUrl: opts.schemaRegistryUrl,
      upstreamSecurity: opts.upstreamConnector?.settings,
    }),
  ]);
  if (configsStarted.status === 'rejected' || engineStarted.status === 'rejected') {
    if (engineStarted.status === 'fulfilled') await engineStarted.value.close();
    if (configsStarted.status === 'fulfilled') await configsStarted.value.close();
    closeUpstream();
    throw configsStarted.status === 'rejected' ? configsStarted.reason : (engineStarted as PromiseRejectedResult).reason;
  }
  const configs = configsStarted.value;
  const engine = engineStarted.value;
  const retention = new StoreRetention({
    links: upstream,
    log: opts.log,
    share: opts.carryRetentionShare ?? DEFAULT_CARRY_SHARE,
    ...(opts.storeRetentionMs !== undefined && { fallbackMs: opts.storeRetentionMs }),
  });
  // The engine drops the index of any topic missing from the map, so it always gets the whole set.
  const pushPolicies = () => {
    const policies = new Map<string, TopicPolicy>();
    for (const topic of configs.view.compactedTopics()) {
      const policy = configs.view.compacted(topic);
      if (policy) policies.set(topic, retention.apply(topic, policy));
    }
    engine.setPolicies(policies);
  };
  // One ask at a time: a store slow to answer gets no pile of them.
  let learning: Promise<unknown> | undefined;
  const learnRetention = () => {
    learning ??= retention
      .refresh(configs.view.compactedTopics())
      .then((changed) => changed && pushPolicies())
      .catch((err: unknown) => opts.log.debug("learning the store's retention failed", { err }))
      .finally(() => (learning = undefined));
  };
  // Not awaited: an upstream slow to answer must not hold the proxy's start; policies follow when learned.
  void learnRetention();
  pushPolicies();
  const unsubscribe = configs.view.onChange(() => {
    pushPolicies();
    void learnRetention();
  });
  const retentionTimer = setInterval(learnRetention, Math.min(60_000, Math.max(1_000, opts.cleanerBackoffMs)));
  retentionTimer.unref();

  const pool = new UpstreamPartitionReads({ upstream, topicIds: opts.topicIds });
  const produceGuard = createProduceGuard({
    config: configs.view,
    topicIds: opts.topicIds,
    log: opts.log,
    resolveTopicIds: (ids) => pool.resolveTopicIds(ids),
    logStartOffset: (topic, partition) => pool.logStartOffset(topic, partition),
    used: (topic, partition) => engine.index.used(topic, partition),
  });
  const fetchView = createFetchView({
    config: configs.view,
    index: engine.index,
    topicIds: opts.topicIds,
    upstream: pool,
    log: opts.log,
    cacheBytes: opts.viewCacheBytes,
  });

  const listOffsetsView = createListOffsetsView({
    config: configs.view,
    index: engine.index,
    offsetForTime: (topic, partition, timestamp) => engine.offsetForTime(topic, partition, timestamp),
    logStartOffset: (topic, partition) => pool.logStartOffset(topic, partition),
    endsWithOwnRecords: (topic, partition, end) => endsWithOwnRecords(pool, topic, partition, end),
  });
  const shareFetchView = createShareFetchView({
    config: configs.view,
    index: engine.index,
    topicIds: opts.topicIds,
    resolveTopicIds: (ids) => pool.resolveTopicIds(ids),
    logStartOffset: (topic, partition) => pool.logStartOffset(topic, partition),
    log: opts.log,
  });
  const filters = [...configs.filters, produceGuard, fetchView, shareFetchView, listOffsetsView];
  return {
    filters,
    configs,
    engine,
    fetchView,
    shareFetchView,
    close: async () => {
      unsubscribe();
      clearInterval(retentionTimer);
      // First: requests in flight on the proxy's own connections end now, not at their timeout.
      closeUpstream();
      await engine.close();
      await configs.close();
    },
  };
}
