/**
 * A ConfigContext for driving the config filters without an upstream: a real TopicConfigState
 * and BrokerDefaults, a configs topic that applies what is written at once, and an upstream that
 * answers the config layer's own admin requests from a few settings. Every write and admin
 * request is recorded for the test to check.
 */
import { BrokerDefaults } from '../../../../src/compaction/config/broker-defaults.js';
import type { ConfigContext } from '../../../../src/compaction/config/config-context.js';
import type { ConfigSync } from '../../../../src/compaction/config/config-sync.js';
import type { StoredTopic } from '../../../../src/compaction/config/stored-topic.js';
import { TopicConfigState, type StaticTopic } from '../../../../src/compaction/config/topic-config-state.js';
import type { UpstreamClusterClient } from '../../../../src/upstream/upstream-cluster-client.js';
import { createLogger } from '../../../../src/common/log.js';
import { ErrorCode } from '../../../../src/protocol/errors.js';
import {
  ApiKey,
  type AlterConfigsRequest,
  type AlterConfigsResponse,
  type CreateTopicsRequest,
  type CreateTopicsResponse,
  type DeleteTopicsResponse,
  type DescribeConfigsResponse,
  type MetadataResponse,
  type RequestBodies,
} from '../../../../src/protocol/messages.js';
import { TopicIds, ZERO_UUID } from '../../../../src/proxy/topic-ids.js';

export interface FixtureOptions {
  staticTopics?: StaticTopic[];
  brokerConfigs?: Record<string, string>;
  /** Why the configs topic cannot be used (ConfigSync.unavailableReason). */
  unavailable?: string;
  /** Makes every write to the configs topic fail with this. */
  failWrites?: Error;
  /** The upstream's topic ids, as its Metadata answers give them. */
  upstreamIds?: Record<string, string>;
  /** The retention the upstream reports for any topic; null: it cannot describe configs. */
  upstreamRetention?: { ms: string; bytes: string } | null;
  /** What the upstream answers an AlterConfigs or IncrementalAlterConfigs the config layer sends itself, by topic (default: success). */
  alterErrors?: Record<string, { errorCode: number; errorMessage: string | null }>;
  /** Errors a validateOnly CreateTopics without configs gives, by topic (Kafka's checks before configs). */
  beforeConfigErrors?: Record<string, { errorCode: number; errorMessage: string | null }>;
}

export interface AdminRequest {
  apiKey: number;
  body: RequestBodies[keyof RequestBodies];
}

export interface ConfigFixture {
  ctx: ConfigContext;
  state: TopicConfigState;
  topicIds: TopicIds;
  /** What was written to the configs topic, in order. */
  writes: { topic: string; stored: StoredTopic | null }[];
  /** Topics whose store segments a request waited for (ctx.storeSegments.settle), in order. */
  settled: string[];
  /** The config layer's own upstream requests, in order. */
  admin: AdminRequest[];
  /** Stores a topic's configs as if an earlier request had. */
  store(topic: string, configs: Record<string, string>, topicId?: string): void;
}

export function configFixture(opts: FixtureOptions = {}): ConfigFixture {
  const log = createLogger();
  const defaults = new BrokerDefaults(opts.brokerConfigs);
  const topicIds = new TopicIds();
  const state = new TopicConfigState(defaults, topicIds, opts.staticTopics ?? [], log);
  const writes: ConfigFixture['writes'] = [];
  const admin: AdminRequest[] = [];
  const settled: string[] = [];
  let offset = 0;

  const sync = {
    sync: async () => {},
    write: async (topic: string, stored: StoredTopic | null) => {
      if (opts.failWrites) throw opts.failWrites;
      writes.push({ topic, stored });
      state.apply(++offset, topic, stored);
    },
    get unavailableReason() {
      return opts.unavailable ?? null;
    },
  };

  // As UpstreamClusterClient does, every answer goes to the listeners (the topic ids watch it).
  const listeners: ((answer: MetadataResponse) => void)[] = [];
  const metadata = async (topics: readonly string[]): Promise<MetadataResponse> => {
    const answer: MetadataResponse = {
      brokers: [],
      controllerId: -1,
      topics: topics.map((name) => {
        const topicId = opts.upstreamIds?.[name];
        return topicId
          ? { errorCode: ErrorCode.NONE, name, topicId, partitions: [] }
          : { errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name, topicId: ZERO_UUID, partitions: [] };
      }),
    };
    for (const listener of listeners) listener(answer);
    return answer;
  };
  const client = {
    version: (apiKey: number) => (apiKey === ApiKey.DeleteTopics ? 6 : apiKey === ApiKey.CreateTopics ? 7 : 4),
    request: async (apiKey: number, _version: number, body: RequestBodies[keyof RequestBodies]) => {
      admin.push({ apiKey, body });
      return adminAnswer(apiKey, body, opts);
    },
  };
  const links = { metadata, any: async () => client, controller: async () => client };
  topicIds.watch({ onMetadata: (listener) => void listeners.push(listener) });

  const ctx: ConfigContext = {
    state,
    sync: sync as unknown as ConfigSync,
    links: links as unknown as UpstreamClusterClient,
    defaults,
    topicIds,
    log,
    requestTimeoutMs: 1000,
    carrying: { share: 0.5, backoffMs: 15_000 },
    storeSegments: { settle: async (topic) => void settled.push(topic) },
  };
  return {
    ctx,
    state,
    topicIds,
    writes,
    settled,
    admin,
    store: (topic, configs, topicId) => {
      state.apply(++offset, topic, { topicId, configs });
    },
  };
}

function adminAnswer(
  apiKey: number,
  body: RequestBodies[keyof RequestBodies],
  opts: FixtureOptions,
): CreateTopicsResponse | DeleteTopicsResponse | DescribeConfigsResponse | AlterConfigsResponse {
  switch (apiKey) {
    case ApiKey.CreateTopics:
      return {
        throttleTimeMs: 0,
        topics: (body as CreateTopicsRequest).topics.map((t) => ({
          name: t.name,
          errorCode: ErrorCode.NONE,
          errorMessage: null,
          ...opts.beforeConfigErrors?.[t.name],
        })),
      };
    case ApiKey.DeleteTopics:
      return { throttleTimeMs: 0, responses: [{ name: null, errorCode: ErrorCode.NONE }] };
    case ApiKey.DescribeConfigs: {
      const r = opts.upstreamRetention;
      if (r === null) return { throttleTimeMs: 0, results: [] };
      const entry = (name: string, value: string) => ({ name, value, readOnly: false, configSource: 1, isSensitive: false, synonyms: [] });
      return {
        throttleTimeMs: 0,
        results: [
          {
            errorCode: ErrorCode.NONE,
            errorMessage: null,
            resourceType: 2,
            resourceName: 't',
            configs: [entry('retention.ms', r?.ms ?? '-1'), entry('retention.bytes', r?.bytes ?? '-1')],
          },
        ],
      };
    }
    case ApiKey.AlterConfigs:
    case ApiKey.IncrementalAlterConfigs:
      return {
        throttleTimeMs: 0,
        responses: (body as AlterConfigsRequest).resources.map((r) => ({
          resourceType: r.resourceType,
          resourceName: r.resourceName,
          errorCode: ErrorCode.NONE,
          errorMessage: null,
          ...opts.alterErrors?.[r.resourceName],
        })),
      };
    default:
      throw new Error(`the fixture's upstream does not answer api ${apiKey}`);
  }
}
