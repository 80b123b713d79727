/**
 * One upstream without compaction and one kcompact proxy in front of it, shared by every cell
 * of the matrix for that upstream, with the harness's own tools: topics created and records
 * written through kcompact, the upstream's log read directly (the truth a client's run is
 * checked against), configs as kcompact answers them, cleaning on demand, and every client
 * Fetch of a partition recorded as the proxy received it.
 */
// kafkajs is CommonJS: Node's ESM loader sees only its default export as a value.
import kafkajs, { type Admin, type Kafka, type Producer } from 'kafkajs';
import { ApiKey } from '../../../src/protocol/messages.js';
import type { Filter } from '../../../src/proxy/filter/filter.js';
import type { TopicIds } from '../../../src/proxy/topic-ids.js';
import { startCompactingProxy, type RunningCompactingProxy } from '../kcompact.js';
import { pollUntil } from '../processes.js';
import { franzConsume } from '../runners.js';
import type { RecordView } from '../summary.js';
import { startUncompactedUpstream, type UncompactedUpstream, type UpstreamKind } from '../uncompacted-upstream.js';
import type { KeyValue } from './types.js';

/** What a harness runs over: the upstream's bootstrap, a name for cell names, and how to stop it. */
export type UpstreamOfHarness = Pick<UncompactedUpstream, 'bootstrap' | 'stop'> & { kind: string };

export interface FetchSeen {
  partition: number;
  /** The offset the client asked for (before kcompact moved it). */
  offset: number;
  at: number;
}

function kafkaClient(bootstrap: string, clientId: string): Kafka {
  return new kafkajs.Kafka({ clientId, brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING, retry: { retries: 8 } });
}

export class Harness {
  private constructor(
    readonly kind: string,
    private readonly upstream: UpstreamOfHarness,
    private readonly proxy: RunningCompactingProxy,
    /** Through kcompact: topics and configs are kcompact's to answer. */
    private readonly proxyAdmin: Admin,
    private readonly producer: Producer,
    /** Straight to the upstream: what its log and its group coordinator hold. */
    private readonly upstreamAdmin: Admin,
    /** The offsets clients fetched from, by topic. */
    private readonly seen: Map<string, FetchSeen[]>,
    /** Store configs every topic of the harness is created with, beside the cell's own. */
    private readonly topicConfigs: Readonly<Record<string, string>>,
  ) {}

  static async start(kind: UpstreamKind): Promise<Harness> {
    return Harness.over(await startUncompactedUpstream(kind));
  }

  /**
   * A harness over an upstream already running (a store profile); stop() stops it too. `carry`
   * as startCompactingProxy takes it; `topicConfigs` go into every CreateTopics of the cells.
   */
  static async over(upstream: UpstreamOfHarness, opts: { carry?: boolean; topicConfigs?: Record<string, string> } = {}): Promise<Harness> {
    let proxy: RunningCompactingProxy | undefined;
    try {
      const seen = new Map<string, FetchSeen[]>();
      const names: { topics?: TopicIds } = {};
      proxy = await startCompactingProxy(upstream.bootstrap, { filters: [fetchObserver(seen, names)], carry: opts.carry ?? false });
      names.topics = proxy.server.topics;
      const viaProxy = kafkaClient(proxy.bootstrap, 'client-matrix-harness');
      const proxyAdmin = viaProxy.admin();
      const producer = viaProxy.producer({ allowAutoTopicCreation: false });
      const upstreamAdmin = kafkaClient(upstream.bootstrap, 'client-matrix-truth').admin();
      await Promise.all([proxyAdmin.connect(), producer.connect(), upstreamAdmin.connect()]);
      return new Harness(upstream.kind, upstream, proxy, proxyAdmin, producer, upstreamAdmin, seen, opts.topicConfigs ?? {});
    } catch (e) {
      await proxy?.stop();
      await upstream.stop();
      throw e;
    }
  }

  /** The proxy the cells go through (its engine: carry figures, status). */
  get compacting(): RunningCompactingProxy {
    return this.proxy;
  }

  /** Answers of the upstream kcompact could not read: each closed a client's connection. */
  get unreadableAnswers(): number {
    return this.proxy.server.meter.upstreamErrorCount('protocol');
  }

  /** The bootstrap clients use: kcompact's. */
  get bootstrap(): string {
    return this.proxy.bootstrap;
  }

  /** Client Fetches of the topic's partitions, as the proxy received them. */
  fetches(topic: string): readonly FetchSeen[] {
    return this.seen.get(topic) ?? [];
  }

  async createTopic(topic: string, partitions: number, configs: Record<string, string>): Promise<void> {
    const created = await this.proxyAdmin.createTopics({
      waitForLeaders: true,
      topics: [
        { topic, numPartitions: partitions, configEntries: Object.entries({ ...this.topicConfigs, ...configs }).map(([name, value]) => ({ name, value })) },
      ],
    });
    if (!created) throw new Error(`topic ${topic} already existed: cell names must be unique`);
  }

  /** Writes the records as one batch per partition, through kcompact; returns each record's offset. */
  async write(topic: string, records: (KeyValue & { partition: number })[]): Promise<number[]> {
    const sent = await this.producer.send({ topic, acks: -1, messages: records.map((r) => ({ partition: r.partition, key: r.key, value: r.value })) });
    const next = new Map(sent.map((m) => [m.partition, Number(m.baseOffset)]));
    return records.map((r) => {
      const offset = next.get(r.partition)!;
      next.set(r.partition, offset + 1);
      return offset;
    });
  }

  /**
   * The upstream's end offset of each partition, by partition (kafkajs asks at read_committed:
   * the last stable offset, which is the high watermark while no transaction is open).
   */
  async endOffsets(topic: string): Promise<number[]> {
    const offsets = await this.upstreamAdmin.fetchTopicOffsets(topic);
    return offsets.sort((a, b) => a.partition - b.partition).map((o) => Number(o.high));
  }

  /** Resolves once the upstream's log of the topic holds `records` records, open transactions' included. */
  async holds(topic: string, records: number): Promise<void> {
    await pollUntil(`${topic} holding ${records} records`, 30_000, () =>
      franzConsume(this.upstream.bootstrap, { topic, count: records, timeoutMs: 2_000 }).then(() => true),
    );
  }

  /** The group's committed offsets of the topic, by partition, as the upstream's coordinator holds them. */
  async committed(group: string, topic: string): Promise<Record<string, number>> {
    const [offsets] = await this.upstreamAdmin.fetchOffsets({ groupId: group, topics: [topic] });
    return Object.fromEntries(offsets!.partitions.filter((p) => Number(p.offset) >= 0).map((p) => [String(p.partition), Number(p.offset)]));
  }

  /** What kcompact answers DescribeConfigs with for the topic's configs `names`. */
  async describe(topic: string, names: readonly string[]): Promise<Record<string, string | null>> {
    const res = await this.proxyAdmin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: topic, configNames: [...names] }],
    });
    const entries = new Map(res.resources[0]!.configEntries.map((e) => [e.configName, e.configValue]));
    return Object.fromEntries(names.map((n) => [n, entries.get(n) ?? null]));
  }

  /** The cleanup policy kcompact applies to the topic, once its configs have reached the engine. */
  policy(topic: string): { compact: boolean; deleteRetentionMs: number } | undefined {
    return this.proxy.compaction.configs.view.compacted(topic);
  }

  /** Every record of the topic as the upstream holds it (franz-go, straight to the upstream). */
  async upstreamRecords(topic: string, count: number): Promise<RecordView[]> {
    return (await franzConsume(this.upstream.bootstrap, { topic, count, records: true, timeoutMs: 20_000 })).records!;
  }

  /** Cleans the topic with kcompact's cleaner until its partition 0 is cleaned up to `upTo`. */
  async clean(topic: string, upTo: number): Promise<void> {
    await pollUntil(`${topic} cleaned up to ${upTo}`, 30_000, async () => {
      await this.proxy.compactNow(topic);
      return (this.proxy.compaction.engine.index.partition(topic, 0)?.cleanedUpTo() ?? 0) >= upTo ? true : undefined;
    });
  }

  async stop(): Promise<void> {
    await Promise.allSettled([this.proxyAdmin.disconnect(), this.producer.disconnect(), this.upstreamAdmin.disconnect()]);
    await this.proxy.stop();
    await this.upstream.stop();
  }
}

/** Records the offsets clients fetch from, before compaction's filters see the request. */
function fetchObserver(seen: Map<string, FetchSeen[]>, names: { topics?: TopicIds }): Filter {
  return {
    name: 'client-matrix-fetch-observer',
    apis: {
      [ApiKey.Fetch]: {
        onRequest: (req, ctx) => {
          const at = Date.now();
          for (const t of req.body.topics) {
            const topic = t.topic ?? names.topics?.name(t.topicId ?? '');
            if (topic === undefined) continue;
            const list = seen.get(topic) ?? [];
            for (const p of t.partitions) list.push({ partition: p.partition, offset: Number(p.fetchOffset), at });
            seen.set(topic, list);
          }
          return ctx.forward();
        },
      },
    },
  };
}
