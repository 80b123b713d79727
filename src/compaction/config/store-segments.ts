/**
 * The store's own segments of compact-only topics (docs/carrying.md, "Freeing what a pass lets
 * go"). A store that keeps records in segments (Kafka and its likes) frees only whole segments
 * below its log start, so a range a pass lets go is freed only once the store has rolled past
 * it. kcompact forwards no segment configs for a compact-only topic (its segments are kcompact's
 * virtual ones), so the store would keep its default ones (1 GiB, 7 days on Kafka) and free
 * nothing for a long time.
 *
 * On a replica that carries, this sets the store topic's segment.ms and segment.bytes to what
 * the topic's own virtual segments roll at (segment.ms, or max.compaction.lag.ms when shorter,
 * and segment.bytes: as often as Kafka would roll the topic itself), with segment.ms no shorter
 * than a second. It only ever makes the store's segments shorter than the store's default, and
 * changes a store override only when it is the value kcompact set, so an operator's own setting
 * on the store stands. Existing topics are looked at once when the replica starts, and a topic
 * again whenever its configs change (through any replica). The store's changes go in requests
 * of their own, after the client's: a store that refuses them (a policy, an unknown config, an
 * older store without IncrementalAlterConfigs) never fails a client's request; it is logged once
 * and the topic keeps the store's segments. DescribeConfigs through kcompact keeps showing the
 * topic's own configs (describe-configs.ts), never these.
 */
import type { Logger } from '../../common/log.js';
import { ConfigResourceType } from '../../protocol/config-resource.js';
import { ErrorCode, ProtocolError } from '../../protocol/errors.js';
import { ApiKey, type IncrementalAlterConfigsRequestAlterableConfig } from '../../protocol/messages.js';
import type { UpstreamClient } from '../../upstream/client.js';
import type { UpstreamClusterClient } from '../../upstream/upstream-cluster-client.js';
import type { BrokerDefaults } from './broker-defaults.js';
import { CLEANUP_POLICY, ConfigSource, MAX_COMPACTION_LAG_MS, POLICY_COMPACT, SEGMENT_BYTES, SEGMENT_MS } from './definitions.js';
import { effectiveValue, keepsForever, type TopicOverrides } from './effective-policy.js';
import { AlterOp } from './incremental-ops.js';

/**
 * The shortest store segment.ms kcompact sets. A topic's segment.ms is free in kcompact (its
 * segments are virtual, and tests and demos use 100 ms), but every roll is files on the store;
 * with one a second at most, a partition written without pause holds about one segment per
 * second since the last pass that let a range go.
 */
export const STORE_SEGMENT_MS_FLOOR = 1000;
/** Kafka 4.x's least segment.bytes (1 MiB), which the topic's own already respects. */
export const STORE_SEGMENT_BYTES_FLOOR = 1_048_576;

/** How many topics one DescribeConfigs or IncrementalAlterConfigs names. */
const CHUNK = 500;
/** How often topics the store did not know yet (a static topic not created, a store that did not answer) are looked at again. */
const RETRY_MS = 60_000;

/** The store segment configs a topic should have, by config name (segment.ms and segment.bytes), as Kafka writes the values. */
export type StoreSegmentConfigs = Readonly<Record<typeof SEGMENT_MS | typeof SEGMENT_BYTES, string>>;

/**
 * The store segments of a compact-only topic, derived from its configs; null for any other topic
 * (a topic that expires data gets its own segment configs upstream as given, effective-policy.ts,
 * and one that is not compacted is not carried).
 */
export function storeSegmentConfigs(overrides: TopicOverrides, defaults: BrokerDefaults): StoreSegmentConfigs | null {
  const policy = effectiveValue(CLEANUP_POLICY, overrides, defaults) as readonly string[];
  if (!policy.includes(POLICY_COMPACT) || !keepsForever(overrides, defaults)) return null;
  const segmentMs = effectiveValue(SEGMENT_MS, overrides, defaults) as bigint;
  const maxLag = effectiveValue(MAX_COMPACTION_LAG_MS, overrides, defaults) as bigint;
  // The virtual segments roll at the shorter of the two, as Kafka's do for a compacted topic.
  const roll = segmentMs < maxLag ? segmentMs : maxLag;
  const ms = roll < BigInt(STORE_SEGMENT_MS_FLOOR) ? BigInt(STORE_SEGMENT_MS_FLOOR) : roll;
  const bytes = Math.max(STORE_SEGMENT_BYTES_FLOOR, effectiveValue(SEGMENT_BYTES, overrides, defaults) as number);
  return { [SEGMENT_MS]: String(ms), [SEGMENT_BYTES]: String(bytes) };
}

/** What the config layer's requests wait for: the store's segments of a topic put in line with its configs. */
export interface StoreSegmentsKeeper {
  /** Resolves once the topic's store segments have been looked at (never rejects; a failure is logged). */
  settle(topic: string): Promise<void>;
}

/** The part of the topic configs the keeper reads. */
export interface SegmentsConfigSource {
  overrides(topic: string): TopicOverrides;
  compactedTopics(): string[];
  onChange(listener: (topic: string) => void): () => void;
}

export interface StoreSegmentsOptions {
  configs: SegmentsConfigSource;
  defaults: BrokerDefaults;
  links: UpstreamClusterClient;
  log: Logger;
  /** Settles once the topic configs have been read: existing topics are looked at then. */
  caughtUp: Promise<void>;
}

interface StoreValue {
  value: string;
  /** A topic override on the store (DYNAMIC_TOPIC_CONFIG), as opposed to the store's default. */
  override: boolean;
}

type StoreSegmentsNow = Map<string, StoreValue>;

const NAMES = [SEGMENT_MS, SEGMENT_BYTES] as const;

/** a < b, as whole numbers written in decimal (longs past 2^53 compare right too). */
function less(a: string, b: string): boolean {
  try {
    return BigInt(a) < BigInt(b);
  } catch {
    return false;
  }
}

/**
 * What to ask the store for a topic, given what it holds now (`store`), what the topic wants
 * (`wanted`, null when it is not compact-only), the values kcompact derived for it before
 * (`before`: a store override equal to one of them is kcompact's) and the topic's own overrides.
 * `again`: a value of kcompact's was dropped to learn the store's default, so look again after.
 */
export function planStoreSegments(
  store: StoreSegmentsNow,
  wanted: StoreSegmentConfigs | null,
  before: StoreSegmentConfigs | undefined,
  own: TopicOverrides,
): { ops: IncrementalAlterConfigsRequestAlterableConfig[]; again: boolean } {
  const ops: IncrementalAlterConfigsRequestAlterableConfig[] = [];
  let again = false;
  for (const name of NAMES) {
    const now = store.get(name);
    if (!now) continue;
    const ours = now.override && before?.[name] === now.value;
    const want = wanted?.[name];
    if (want === undefined) {
      // No longer compact-only: kcompact's value goes, the topic's own (forwarded as given) stays.
      if (ours && own[name] === undefined) ops.push({ name, configOperation: AlterOp.DELETE, value: null });
    } else if (!now.override) {
      if (less(want, now.value)) ops.push({ name, configOperation: AlterOp.SET, value: want });
    } else if (ours && now.value !== want) {
      if (less(want, now.value)) {
        ops.push({ name, configOperation: AlterOp.SET, value: want });
      } else {
        // Longer than before: back to the store's default, then shorter than that only if the topic wants it.
        ops.push({ name, configOperation: AlterOp.DELETE, value: null });
        again = true;
      }
    }
  }
  return { ops, again };
}

export class StoreSegments implements StoreSegmentsKeeper {
  /** What kcompact derived for each compact-only topic when it last looked (a store value equal to it is kcompact's). */
  private readonly derived = new Map<string, StoreSegmentConfigs>();
  /** Topics whose store refused what was wanted, and what that was: not asked again until the topic wants something else. */
  private readonly refused = new Map<string, string>();
  /** Refusals already logged, by error code: once each. */
  private readonly loggedRefusals = new Set<number>();
  private readonly queued = new Set<string>();
  /** Topics the store did not answer for (not created yet, a failed request): looked at again every RETRY_MS. */
  private readonly retry = new Set<string>();
  private chain: Promise<void> = Promise.resolve();
  private next: Promise<void> | null = null;
  /** Why the store's segments cannot be set at all (no DescribeConfigs or IncrementalAlterConfigs), once known. */
  private off: string | null = null;
  private closed = false;
  private unsubscribe: (() => void) | null = null;
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly opts: StoreSegmentsOptions) {}

  /** Looks at every compact-only topic once the configs are read, then at each topic whose configs change. */
  start(): void {
    void this.opts.caughtUp.then(() => {
      if (this.closed) return;
      this.unsubscribe = this.opts.configs.onChange((topic) => void this.settle(topic));
      for (const topic of this.opts.configs.compactedTopics()) if (this.wanted(topic)) this.queued.add(topic);
      void this.kick();
      this.timer = setInterval(() => {
        for (const topic of this.retry) this.queued.add(topic);
        this.retry.clear();
        if (this.queued.size > 0) void this.kick();
      }, RETRY_MS);
      this.timer.unref();
    });
  }

  settle(topic: string): Promise<void> {
    // Only a topic that is compact-only, or was when last looked at, has anything to set.
    if (this.closed || this.off !== null || (!this.wanted(topic) && !this.derived.has(topic))) return Promise.resolve();
    this.queued.add(topic);
    return this.kick();
  }

  close(): void {
    this.closed = true;
    this.unsubscribe?.();
    if (this.timer) clearInterval(this.timer);
  }

  private wanted(topic: string): StoreSegmentConfigs | null {
    return storeSegmentConfigs(this.opts.configs.overrides(topic), this.opts.defaults);
  }

  /** The run that will take what is queued now: one at a time, each taking everything queued when it starts. */
  private kick(): Promise<void> {
    if (this.next) return this.next;
    const run = this.chain.then(async () => {
      this.next = null;
      // A value dropped to learn the store's default is looked at again at once, and only once.
      for (let round = 0; round < 2 && this.queued.size > 0 && !this.closed && this.off === null; round++) {
        const topics = [...this.queued];
        this.queued.clear();
        for (let i = 0; i < topics.length; i += CHUNK) {
          await this.look(topics.slice(i, i + CHUNK)).catch((err: unknown) => {
            for (const t of topics.slice(i, i + CHUNK)) this.retry.add(t);
            this.opts.log.debug("could not set the store's segments of compacted topics; trying again later", { err });
          });
        }
      }
    });
    this.next = run;
    this.chain = run;
    return run;
  }

  private async look(topics: string[]): Promise<void> {
    const client = await this.opts.links.any('admin');
    let versions: { describe: number; alter: number };
    try {
      versions = { describe: client.version(ApiKey.DescribeConfigs), alter: client.version(ApiKey.IncrementalAlterConfigs) };
    } catch (err) {
      if (!(err instanceof ProtocolError)) throw err;
      this.off = err.message;
      this.opts.log.info(
        "the store cannot describe or alter topic configs: the store's segments of compacted topics stay as they are, and a range a pass lets go is freed only as they roll",
        { err },
      );
      return;
    }
    const now = await this.describe(client, versions.describe, topics);
    const resources: { topic: string; ops: IncrementalAlterConfigsRequestAlterableConfig[]; wanted: StoreSegmentConfigs | null }[] = [];
    for (const topic of topics) {
      const store = now.get(topic);
      const wanted = this.wanted(topic);
      if (!store) {
        if (wanted) this.retry.add(topic);
        else this.derived.delete(topic);
        continue;
      }
      const key = wanted && JSON.stringify(wanted);
      if (key !== null && this.refused.get(topic) === key) continue;
      this.refused.delete(topic);
      const { ops, again } = planStoreSegments(store, wanted, this.derived.get(topic), this.opts.configs.overrides(topic));
      if (wanted) this.derived.set(topic, wanted);
      else this.derived.delete(topic);
      if (again) this.queued.add(topic);
      if (ops.length > 0) resources.push({ topic, ops, wanted });
    }
    if (resources.length === 0) return;
    const answer = await client.request(ApiKey.IncrementalAlterConfigs, versions.alter, {
      resources: resources.map((r) => ({ resourceType: ConfigResourceType.TOPIC, resourceName: r.topic, configs: r.ops })),
      validateOnly: false,
    });
    const byTopic = new Map(answer.responses.map((r) => [r.resourceName, r]));
    for (const r of resources) {
      const result = byTopic.get(r.topic);
      if (!result) {
        this.retry.add(r.topic);
        continue;
      }
      if (result.errorCode === ErrorCode.NONE) {
        this.opts.log.debug("set the store's segments of a compacted topic", { topic: r.topic, configs: r.ops });
        continue;
      }
      // A refusal (a policy, a config the store does not know, no ALTER_CONFIGS on the topic) is not asked again for these values.
      if (r.wanted) this.refused.set(r.topic, JSON.stringify(r.wanted));
      const fields = { topic: r.topic, configs: r.ops, errorCode: result.errorCode, errorMessage: result.errorMessage };
      if (this.loggedRefusals.has(result.errorCode)) {
        this.opts.log.debug('the store refused segment configs for a compacted topic', fields);
      } else {
        this.loggedRefusals.add(result.errorCode);
        this.opts.log.warn(
          "the store refused segment configs for a compacted topic (logged once for this error): it keeps its own segments there, and frees a range a pass lets go only as they roll; set segment.ms and segment.bytes on the store's topic, or allow them",
          fields,
        );
      }
    }
  }

  /** segment.ms and segment.bytes of each topic as the store holds them; topics it gave an error for (unknown, not authorized) are left out. */
  private async describe(client: UpstreamClient, version: number, topics: readonly string[]): Promise<Map<string, StoreSegmentsNow>> {
    const answer = await client.request(ApiKey.DescribeConfigs, version, {
      resources: topics.map((t) => ({ resourceType: ConfigResourceType.TOPIC, resourceName: t, configurationKeys: [...NAMES] })),
      includeSynonyms: false,
      includeDocumentation: false,
    });
    const out = new Map<string, StoreSegmentsNow>();
    for (const r of answer.results) {
      if (r.errorCode !== ErrorCode.NONE) continue;
      const values: StoreSegmentsNow = new Map();
      for (const c of r.configs) {
        if (c.value === null || !(NAMES as readonly string[]).includes(c.name)) continue;
        values.set(c.name, { value: c.value, override: c.configSource === ConfigSource.DYNAMIC_TOPIC_CONFIG });
      }
      out.set(r.resourceName, values);
    }
    return out;
  }
}
