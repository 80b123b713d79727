/**
 * Keeps the in-memory topic configs in step with the configs topic: the SQLite cache first (a
 * restart serves at once), then the topic from the cache's checkpoint to its high watermark,
 * then a poll loop so changes made through other proxy replicas show up here. Writes go to the
 * topic and are applied locally as soon as the upstream acknowledges them.
 */
import type { Logger } from '../../common/log.js';
import type { ConfigCache, CachedChange } from './config-cache.js';
import { ConfigsTopicUnavailable, OffsetOutOfRange, type ConfigsTopic } from './configs-topic.js';
import { decodeStoredTopic, encodeStoredTopic, type StoredTopic } from './stored-topic.js';
import type { TopicConfigState } from './topic-config-state.js';
import type { UpstreamClusterClient } from '../../upstream/upstream-cluster-client.js';

export interface ConfigSyncOptions {
  pollIntervalMs: number;
  log: Logger;
}

/** How often the current topic ids of stored topics are asked for (a re-created topic must not inherit configs). */
const TOPIC_ID_REFRESH_MS = 30_000;
/** How often to try again when the upstream cannot hold the configs topic at all. */
const UNAVAILABLE_RETRY_MS = 30_000;
const METADATA_CHUNK = 1000;

export class ConfigSync {
  readonly caughtUp: Promise<void>;
  private markCaughtUp!: () => void;
  private nextOffset: number;
  private storeTopicId: string | null;
  private opened = false;
  private unavailable: string | null = null;
  private failing = false;
  private chain: Promise<unknown> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private stopped = false;
  private lastIdRefresh = 0;

  constructor(
    private readonly topic: ConfigsTopic,
    private readonly cache: ConfigCache,
    private readonly state: TopicConfigState,
    private readonly links: UpstreamClusterClient,
    checkpoint: { nextOffset: number; storeTopicId: string | null },
    private readonly opts: ConfigSyncOptions,
  ) {
    this.nextOffset = checkpoint.nextOffset;
    this.storeTopicId = checkpoint.storeTopicId;
    this.caughtUp = new Promise((resolve) => (this.markCaughtUp = resolve));
  }

  start(): void {
    this.schedule(0);
  }

  /** Why topic configs cannot be stored in the upstream, or null when they can. */
  get unavailableReason(): string | null {
    return this.unavailable;
  }

  /** Reads the configs topic up to its current end, after any read already under way. */
  sync(): Promise<void> {
    return this.serial(() => this.catchUp());
  }

  /** Stores a topic's configs (null: the topic is gone) and applies them here once acknowledged. */
  async write(topic: string, stored: StoredTopic | null): Promise<void> {
    if (this.unavailable !== null) throw new ConfigsTopicUnavailable(this.unavailable);
    const offset = await this.topic.append([{ key: topic, value: encodeStoredTopic(stored) }]);
    if (this.state.apply(offset, topic, stored)) this.cache.commit([{ topic, entry: this.state.entry(topic)! }]);
  }

  async close(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.chain.catch(() => {});
  }

  private serial<T>(task: () => Promise<T>): Promise<T> {
    const run = this.chain.then(task, task);
    this.chain = run.catch(() => {});
    return run;
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => void this.tick(), delayMs);
  }

  private async tick(): Promise<void> {
    let delay = this.opts.pollIntervalMs;
    try {
      await this.sync();
      if (this.failing) this.opts.log.info('topic config store reachable again', { topic: this.topic.topic });
      this.failing = false;
      this.markCaughtUp();
      if (Date.now() - this.lastIdRefresh >= TOPIC_ID_REFRESH_MS) await this.refreshTopicIds();
    } catch (err) {
      if (this.stopped) return;
      if (err instanceof ConfigsTopicUnavailable) {
        if (this.unavailable === null) {
          this.opts.log.warn('topic configs cannot be stored in the upstream; only static topics are compacted', { err, retryMs: UNAVAILABLE_RETRY_MS });
        }
        this.unavailable = err.message;
        delay = UNAVAILABLE_RETRY_MS;
        // Nothing more will come from the store: static topics are all there is, so serve them.
        this.markCaughtUp();
      } else {
        const fields = { topic: this.topic.topic, err };
        if (this.failing) this.opts.log.debug('reading the topic config store failed again', fields);
        else this.opts.log.warn('reading the topic config store failed; retrying', fields);
        this.failing = true;
        // Look the topic up afresh next time: it may have been deleted and created again.
        this.opened = false;
        delay = Math.max(delay, 1000);
      }
    }
    this.schedule(delay);
  }

  private async catchUp(): Promise<void> {
    if (!this.opened) {
      const id = await this.topic.open();
      this.unavailable = null;
      if (id !== this.storeTopicId) this.restart(id, 0, 'a different topic config store than the cache was filled from');
      this.opened = true;
    }
    for (;;) {
      let read;
      try {
        read = await this.topic.read(this.nextOffset);
      } catch (err) {
        if (!(err instanceof OffsetOutOfRange)) throw err;
        const start = await this.topic.logStart();
        // Below the log start only deleted records were skipped; beyond the end the topic was replaced.
        if (start > this.nextOffset) this.nextOffset = start;
        else this.restart(this.storeTopicId, start, 'the topic config store is shorter than the cache checkpoint');
        continue;
      }
      const changes: CachedChange[] = [];
      for (const r of read.records) {
        const stored = decodeStoredTopic(r.value);
        if (stored instanceof Error) {
          this.opts.log.warn("ignoring a record of the topic config store that is not kcompact's", {
            topic: this.topic.topic,
            offset: r.offset,
            key: r.key,
            err: stored,
          });
          continue;
        }
        if (this.state.apply(r.offset, r.key, stored)) changes.push({ topic: r.key, entry: this.state.entry(r.key)! });
      }
      const progressed = read.nextOffset > this.nextOffset;
      this.nextOffset = read.nextOffset;
      // An idle poll reads nothing (records would have moved the offset on): no write to the
      // cache's file twice a second.
      if (progressed) this.cache.commit(changes, this.nextOffset);
      if (this.nextOffset >= read.highWatermark || !progressed) break;
    }
    this.state.recheckTopicIds();
  }

  private restart(storeTopicId: string | null, from: number, why: string): void {
    if (this.nextOffset > 0) this.opts.log.warn('re-reading the topic config store from the start', { topic: this.topic.topic, why });
    this.cache.reset(storeTopicId);
    this.state.clear();
    this.storeTopicId = storeTopicId;
    this.nextOffset = from;
  }

  private async refreshTopicIds(): Promise<void> {
    this.lastIdRefresh = Date.now();
    const names = this.state.topicsWithIds();
    for (let i = 0; i < names.length; i += METADATA_CHUNK) {
      // The proxy's topic ids learn the answer (they watch this client: topic-configs.ts).
      await this.links.metadata(names.slice(i, i + METADATA_CHUNK));
    }
    this.state.recheckTopicIds();
  }
}
