/**
 * Compaction for the proxy, assembled: the topic-config layer (which topics are compacted, kept
 * in the upstream), the engine (key index, indexer and cleaner in a worker thread), and the
 * filters clients meet (configs, produce guard, fetch view).
 */
import type { Logger } from '../common/log.js';
import type { Filter } from '../proxy/filter/filter.js';
import type { TopicIds } from '../proxy/topic-ids.js';
import { createTopicConfigs, type ConfigLayerOptions, type TopicConfigs } from './config/topic-configs.js';
import type { CompactionEngine } from '../engine/api/engine-handle.js';
import { startCompactionEngine } from './engine-client/compaction-engine.js';
import type { EngineOptions } from '../engine/api/engine-options.js';
import { createProduceGuard } from './produce-guard/produce-guard.js';
import { createFetchView, type FetchView, type FetchViewOptions } from './fetch-view/fetch-view.js';
import { createListOffsetsView } from './list-offsets/list-offsets-view.js';
import { endsWithOwnRecords } from './list-offsets/store-tail.js';
import { createShareFetchView, type ShareFetchView } from './fetch-view/share-fetch-view.js';
import { UpstreamPartitionReads } from './fetch-view/upstream-partition-reads.js';
import type { TopicPolicy } from '../engine/api/topic-policy.js';
import { UpstreamConnector } from '../upstream/upstream-connector.js';
import type { UpstreamClusterClient } from '../upstream/upstream-cluster-client.js';
import { connectCluster } from '../upstream/connection-options.js';
import { StoreRetention } from './config/store-retention.js';

/** Compaction's settings, one object per component, as the settings build them (config/settings.ts). */
export interface CompactionOptions {
  /** Goes to the worker thread whole; its connection, data directory, cleaner and carry settings serve the main thread too. */
  engine: EngineOptions;
  configLayer: ConfigLayerOptions;
  fetchView: FetchViewOptions;
}

/** What compaction works with besides its settings. */
export interface CompactionDeps {
  topicIds: TopicIds;
  log: Logger;
  /**
   * The proxy's connector (TLS and SASL, its files watched) for every upstream connection this
   * thread makes; without it compaction builds its own from the connection's security settings.
   */
  upstreamConnector?: UpstreamConnector;
  /**
   * The proxy's upstream client, shared by the config layer and the fetch view's and produce
   * guard's reads; without it compaction opens its own (the worker thread always does).
   */
  upstreamClient?: UpstreamClusterClient;
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

export async function startCompaction(opts: CompactionOptions, deps: CompactionDeps): Promise<Compaction> {
  const { engine: engineOptions, configLayer } = opts;
  const { log, topicIds } = deps;
  const ownConnector = deps.upstreamClient || deps.upstreamConnector ? undefined : new UpstreamConnector(engineOptions.connection.security, log);
  const upstream =
    deps.upstreamClient ?? connectCluster(engineOptions.connection, { clientId: 'kcompact', connector: deps.upstreamConnector ?? ownConnector, log });
  const closeUpstream = () => {
    if (upstream !== deps.upstreamClient) upstream.close();
    ownConnector?.close();
  };
  // The config layer reads the store while the worker thread starts: neither waits for the other.
  const [configsStarted, engineStarted] = await Promise.allSettled([
    createTopicConfigs({
      layer: configLayer,
      connection: engineOptions.connection,
      dataDir: engineOptions.dataDir,
      topicIds,
      log,
      client: upstream,
      carrying: {
        share: configLayer.carryRetentionShare,
        backoffMs: engineOptions.cleaner.backoffMs,
        // A replica that never carries leaves the rate to the ones that do.
        bytesPerSecond: engineOptions.election ? engineOptions.carry.bytesPerSecond : 0,
      },
      // A replica that carries sets the store's segments, so that what its passes let go is freed.
      storeSegments: engineOptions.election !== undefined,
    }),
    startCompactionEngine(engineOptions, log),
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
    log,
    share: configLayer.carryRetentionShare,
    ...(configLayer.storeRetentionMs !== undefined && { fallbackMs: configLayer.storeRetentionMs }),
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
      .catch((err: unknown) => log.debug("learning the store's retention failed", { err }))
      .finally(() => (learning = undefined));
  };
  // Not awaited: an upstream slow to answer must not hold the proxy's start; policies follow when learned.
  void learnRetention();
  pushPolicies();
  const unsubscribe = configs.view.onChange(() => {
    pushPolicies();
    void learnRetention();
  });
  const retentionTimer = setInterval(learnRetention, Math.min(60_000, Math.max(1_000, engineOptions.cleaner.backoffMs)));
  retentionTimer.unref();

  const pool = new UpstreamPartitionReads({ upstream, topicIds });
  const produceGuard = createProduceGuard({
    config: configs.view,
    topicIds,
    log,
    resolveTopicIds: (ids) => pool.resolveTopicIds(ids),
    logStartOffset: (topic, partition) => pool.logStartOffset(topic, partition),
    used: (topic, partition) => engine.index.used(topic, partition),
  });
  const fetchView = createFetchView({
    config: configs.view,
    index: engine.index,
    topicIds,
    upstream: pool,
    log,
    ...opts.fetchView,
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
    topicIds,
    resolveTopicIds: (ids) => pool.resolveTopicIds(ids),
    logStartOffset: (topic, partition) => pool.logStartOffset(topic, partition),
    log,
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
