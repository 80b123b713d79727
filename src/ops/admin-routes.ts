/**
 * The management routes behind the admin verbs (`kcompact status`, `inspect`, `compact`,
 * `rebuild-index`). A request about a topic that is not compacted is answered 404 (no such topic
 * upstream) or 409 (a topic kcompact does not compact), naming the compacted ones, so the CLI can
 * say exactly what is wrong.
 */
import type { Compaction } from '../compaction/compaction.js';
import type { TopicConfigView, TopicPolicy } from '../engine/api/topic-policy.js';
import {
  CLEANUP_POLICY,
  DELETE_RETENTION_MS,
  formatConfigValue,
  MAX_COMPACTION_LAG_MS,
  MIN_CLEANABLE_DIRTY_RATIO,
  MIN_COMPACTION_LAG_MS,
  POLICY_COMPACT,
  POLICY_DELETE,
  RETENTION_BYTES,
  RETENTION_MS,
  SEGMENT_BYTES,
  SEGMENT_MS,
  TOPIC_CONFIG,
  type ConfigValue,
} from '../compaction/config/definitions.js';
import { ErrorCode } from '../protocol/errors.js';
import type { HostPort } from '../common/host-port.js';
import type { ProxyServer } from '../proxy/server.js';
import type { UpstreamClusterClient } from '../upstream/upstream-cluster-client.js';
import { summarizeTopics, type InspectReport, type Listeners, type StatusReport } from './admin-reports.js';
import { Reply, type Route } from './management-server.js';

/** The settings the routes report (the proxy's ProxyConfig has them). */
export interface AdminRouteSettings {
  listen: HostPort;
  advertisedHost: string;
  metricsListen: HostPort;
  adminListen: HostPort;
  adminTokenFile?: string;
  dataDir: string;
  upstream: readonly HostPort[];
  cleanerBackoffMs: number;
}

export interface AdminRouteDeps {
  config: AdminRouteSettings;
  /** The proxy's listeners, once they are set up. */
  server: () => ProxyServer | undefined;
  /** Makes a route that needs the compaction engine (the proxy answers for it while the engine starts). */
  withCompaction: (use: (compaction: Compaction, url: URL) => Promise<unknown>) => Route;
  /** The proxy's upstream client, for the questions the routes ask the upstream. */
  upstream: UpstreamClusterClient;
}

/** A request the route refuses, with the HTTP status to answer it with. */
class Refusal extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const address = (a: HostPort) => (a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`);

const LONG_MAX = 9223372036854775807n;

/** TopicPolicy holds numbers, in which Long.MAX_VALUE (max.compaction.lag.ms's default) became 2^63. */
const long = (n: number): bigint => (n >= 2 ** 63 ? LONG_MAX : BigInt(n));

/** The topic's compaction configs in force, by Kafka's names and as Kafka prints them. */
function compactionConfigs(p: TopicPolicy): Record<string, string> {
  const values: [string, ConfigValue][] = [
    [CLEANUP_POLICY, [...(p.compact ? [POLICY_COMPACT] : []), ...(p.delete ? [POLICY_DELETE] : [])]],
    [DELETE_RETENTION_MS, long(p.deleteRetentionMs)],
    [MIN_COMPACTION_LAG_MS, long(p.minCompactionLagMs)],
    [MAX_COMPACTION_LAG_MS, long(p.maxCompactionLagMs)],
    [MIN_CLEANABLE_DIRTY_RATIO, p.minCleanableDirtyRatio],
    [SEGMENT_MS, long(p.segmentMs)],
    [SEGMENT_BYTES, p.segmentBytes],
    [RETENTION_MS, long(p.retentionMs)],
    [RETENTION_BYTES, long(p.retentionBytes)],
  ];
  return Object.fromEntries(values.map(([name, value]) => [name, formatConfigValue(TOPIC_CONFIG.get(name)!.type, value)]));
}

/** Refusals become their own answer; anything else stays a 500 for the management server. */
function guarded(route: (compaction: Compaction, url: URL) => Promise<unknown>): (compaction: Compaction, url: URL) => Promise<unknown> {
  return async (compaction, url) => {
    try {
      return await route(compaction, url);
    } catch (err) {
      if (err instanceof Refusal) return Reply.json(err.status, { error: err.message });
      throw err;
    }
  };
}

export function adminRoutes(deps: AdminRouteDeps): [string, Route][] {
  const { config } = deps;
  const compactedList = (view: TopicConfigView) => {
    const topics = view.compactedTopics().sort();
    return topics.length > 0 ? `compacted topics: ${topics.join(', ')}` : 'no topic is compacted';
  };

  /** Whether the upstream has the topic; undefined when it cannot be asked. */
  async function existsUpstream(topic: string): Promise<boolean | undefined> {
    try {
      const answer = (await deps.upstream.metadata([topic])).topics.find((t) => t.name === topic);
      return answer?.errorCode !== ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
    } catch {
      return undefined;
    }
  }

  const topicOf = (url: URL): string | undefined => url.searchParams.get('topic') || undefined;

  /** The topic's policy; refuses a topic kcompact does not compact, saying whether it exists at all. */
  async function compacted(view: TopicConfigView, topic: string): Promise<TopicPolicy> {
    const policy = view.compacted(topic);
    if (policy) return policy;
    const exists = await existsUpstream(topic);
    if (exists === false) throw new Refusal(404, `unknown topic ${topic}: the upstream has no such topic; ${compactedList(view)}`);
    const unchecked = exists === undefined ? ' (the upstream could not be asked whether it exists)' : '';
    throw new Refusal(
      409,
      `topic ${topic} is not compacted by kcompact${unchecked}: its cleanup.policy has no "compact"; set it through the proxy ` +
        `(kafka-configs --alter --add-config cleanup.policy=compact) or list the topic in --topics; ${compactedList(view)}`,
    );
  }

  function listeners(server: ProxyServer): Listeners {
    const brokers = server.brokers;
    return {
      bootstrap: address(config.listen),
      advertisedHost: config.advertisedHost,
      brokers: brokers
        .nodes()
        .sort((a, b) => a - b)
        .map((nodeId) => ({
          nodeId,
          listen: address({ host: config.listen.host, port: brokers.localPort(nodeId) }),
          advertised: address({ host: config.advertisedHost, port: brokers.localPort(nodeId) }),
          upstream: address(brokers.upstreamOf(nodeId)!),
        })),
      management: address(config.metricsListen),
      admin: { address: address(config.adminListen), token: config.adminTokenFile !== undefined },
      connections: server.connectionCount,
    };
  }

  const status = async (compaction: Compaction): Promise<StatusReport> => {
    const engine = await compaction.engine.status();
    const server = deps.server();
    return {
      source: 'proxy',
      dataDir: config.dataDir,
      upstream: config.upstream.map(address),
      ...(server ? { listeners: listeners(server) } : {}),
      cleaner: { ...engine.cleaner, backoffMs: config.cleanerBackoffMs },
      ...(engine.carrierGroup && { carrierGroup: engine.carrierGroup }),
      ...(engine.reads && { reads: engine.reads }),
      ...(engine.carryCapacity && { carryCapacity: engine.carryCapacity }),
      compactedTopics: summarizeTopics(compaction.configs.view.compactedTopics(), engine.partitions),
      partitions: engine.partitions,
    };
  };

  const inspect = async (compaction: Compaction, url: URL): Promise<InspectReport> => {
    const view = compaction.configs.view;
    const topic = topicOf(url);
    if (topic === undefined) throw new Refusal(400, `name a topic (?topic=NAME); ${compactedList(view)}`);
    const policy = await compacted(view, topic);
    let partitions = await compaction.engine.inspect(topic);
    const asked = url.searchParams.get('partition');
    if (asked !== null) {
      if (!/^\d+$/.test(asked)) throw new Refusal(400, `partition must be a partition number, got ${JSON.stringify(asked)}`);
      const indexed = partitions.map((p) => p.partition);
      partitions = partitions.filter((p) => p.partition === Number(asked));
      if (partitions.length === 0) {
        throw new Refusal(404, `topic ${topic} has no indexed partition ${asked}; indexed partitions: ${indexed.length > 0 ? indexed.join(', ') : 'none yet'}`);
      }
    }
    return { source: 'proxy', topic, configs: compactionConfigs(policy), partitions };
  };

  const compact = async (compaction: Compaction, url: URL) => {
    const topic = topicOf(url);
    if (topic !== undefined) await compacted(compaction.configs.view, topic);
    return compaction.engine.compactNow(topic);
  };

  const rebuildIndex = async (compaction: Compaction, url: URL) => {
    const topic = topicOf(url);
    if (topic !== undefined) await compacted(compaction.configs.view, topic);
    return { partitions: await compaction.engine.rebuildIndex(topic) };
  };

  return [
    ['GET /status', deps.withCompaction(guarded(status))],
    ['GET /inspect', deps.withCompaction(guarded(inspect))],
    ['POST /compact', deps.withCompaction(guarded(compact))],
    ['POST /rebuild-index', deps.withCompaction(guarded(rebuildIndex))],
  ];
}
