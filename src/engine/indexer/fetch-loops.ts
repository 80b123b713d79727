/**
 * One fetch loop per leader broker, each fetching all of that broker's wanted partitions at once
 * (READ_COMMITTED, long polls) and handing each partition's answer to its index
 * (partition-ingest.ts). A loop ends when its broker leads no wanted partition; one that fails
 * backs off (failure-policy.ts) and asks the metadata loop to look again.
 */
import { Wakeup, type Clock } from '../../common/clock.js';
import type { Logger } from '../../common/log.js';
import { ApiKey } from '../../protocol/messages.js';
import { ZERO_UUID } from '../../protocol/wire/uuid.js';
import { UpstreamError } from '../../upstream/error-class.js';
import type { UpstreamClusterClient } from '../../upstream/upstream-cluster-client.js';
import type { IndexerOptions } from '../api/engine-options.js';
import { RowBuffer } from '../store/row-buffer.js';
import type { StoreRegistry } from '../store/store-registry.js';
import type { FailurePolicy } from './failure-policy.js';
import type { PartitionIngest } from './partition-ingest.js';
import { message, type Tail, type Tails } from './tails.js';

const READ_COMMITTED = 1;
/** Fetch v13 names topics by id only. */
const FETCH_TOPIC_IDS_VERSION = 13;
/** How long a loop whose partitions are all in a fetch or being located looks again after. */
const BUSY_RECHECK_MS = 50;
const MIN_IDLE_MS = 10;

export interface FetchLoopsDeps {
  cluster: Pick<UpstreamClusterClient, 'broker' | 'dropBroker'>;
  registry: StoreRegistry;
  tails: Tails;
  ingest: PartitionIngest;
  failures: FailurePolicy;
  log: Logger;
  clock: Clock;
  opts: Required<IndexerOptions>;
  /** Where the bytes of record batches fetched to index are counted. */
  reads: { indexBytes: number };
  running: () => boolean;
  /** A fetch failed: the metadata loop is to look at the leaders again. */
  fetchFailed: () => void;
}

export class FetchLoops {
  private readonly loops = new Map<number, { wake: Wakeup; done: Promise<void> }>();

  constructor(private readonly deps: FetchLoopsDeps) {}

  /** Makes sure the broker has a loop, and wakes it: a partition was handed to it or became fetchable. */
  ensure(nodeId: number): void {
    const loop = this.loops.get(nodeId);
    if (loop) {
      loop.wake.wakeUp();
      return;
    }
    const wake = new Wakeup(this.deps.clock);
    const entry = { wake, done: Promise.resolve() };
    this.loops.set(nodeId, entry);
    entry.done = this.run(nodeId, wake).finally(() => {
      if (this.loops.get(nodeId) === entry) this.loops.delete(nodeId);
    });
  }

  /** Wakes the broker's loop, if it has one. */
  wake(nodeId: number): void {
    this.loops.get(nodeId)?.wake.wakeUp();
  }

  wakeAll(): void {
    for (const loop of this.loops.values()) loop.wake.wakeUp();
  }

  /** Wakes every loop and waits for them to end (the indexer stopped running). */
  async close(): Promise<void> {
    this.wakeAll();
    await Promise.all([...this.loops.values()].map((l) => l.done));
  }

  private async run(nodeId: number, wake: Wakeup): Promise<void> {
    const { tails, failures, log, clock } = this.deps;
    // Each loop has its own: another loop's answer may be parsed while this one decompresses.
    const rows = new RowBuffer(4096);
    let fails = 0;
    let rotation = 0;
    while (this.deps.running()) {
      const mine = tails.ofLeader(nodeId);
      if (mine.length === 0) {
        // Leaves the map now, not in ensure's finally: a partition handed to this broker
        // before that ran would only wake this ending loop and wait for the next metadata round.
        if (this.loops.get(nodeId)?.wake === wake) this.loops.delete(nodeId);
        return;
      }
      const now = clock.now();
      const ready = mine.filter((t) => !t.busy && !t.locating && t.retryAt <= now && this.opened(t));
      if (ready.length === 0) {
        const soonest = Math.min(...mine.map((t) => (t.busy || t.locating ? now + BUSY_RECHECK_MS : t.retryAt)));
        await wake.sleep(Math.max(MIN_IDLE_MS, soonest - now));
        continue;
      }
      // Kafka returns an oversized batch whole only for the first partition with data, so the
      // order rotates: every partition gets to be first.
      rotation = (rotation + 1) % ready.length;
      const order = [...ready.slice(rotation), ...ready.slice(0, rotation)];
      for (const t of order) t.busy = true;
      try {
        await this.fetchOnce(nodeId, order, rows);
        if (fails > 0) log.info('upstream broker reachable again', { nodeId, after: fails });
        fails = 0;
      } catch (err) {
        if (!this.deps.running()) return;
        fails++;
        const wait = failures.fetchBackoff(fails);
        for (const t of order) t.lastError = message(err);
        log.warn('index fetch failed', { nodeId, err, attempt: fails, retryInMs: wait });
        this.deps.cluster.dropBroker(nodeId);
        this.deps.fetchFailed();
        // Not wake.sleep: the metadata refresh this asks for would wake the loop at once, and a
        // broker that is down would be retried in a tight loop.
        await failures.pause(wait);
      } finally {
        for (const t of order) t.busy = false;
      }
    }
  }

  /** Whether the tail's index is open (opening it if need be); one that will not open waits. */
  private opened(tail: Tail): boolean {
    try {
      this.deps.tails.storeOf(tail);
      return true;
    } catch (err) {
      this.deps.failures.storeFailed(tail, err);
      return false;
    }
  }

  private async fetchOnce(nodeId: number, order: Tail[], rows: RowBuffer): Promise<void> {
    const { tails, registry, opts } = this.deps;
    const client = await this.deps.cluster.broker(nodeId);
    const withIds = order.every((t) => tails.storeOf(t).checkpoint.topicId !== '');
    const version = Math.min(client.version(ApiKey.Fetch), withIds ? Infinity : FETCH_TOPIC_IDS_VERSION - 1);
    const byTopic = new Map<string, Tail[]>();
    for (const t of order) {
      const list = byTopic.get(t.topic) ?? [];
      list.push(t);
      byTopic.set(t.topic, list);
    }
    const topicOfId = new Map<string, string>();
    const topics = [...byTopic].map(([topic, list]) => {
      const topicId = tails.storeOf(list[0]!).checkpoint.topicId || ZERO_UUID;
      topicOfId.set(topicId, topic);
      return {
        topic,
        topicId,
        partitions: list.map((t) => ({
          partition: t.partition,
          currentLeaderEpoch: -1,
          fetchOffset: tails.storeOf(t).checkpoint.nextOffset,
          lastFetchedEpoch: -1,
          logStartOffset: -1,
          partitionMaxBytes: opts.partitionMaxBytes,
        })),
      };
    });
    const body = await client.request(ApiKey.Fetch, version, {
      replicaId: -1,
      maxWaitMs: opts.maxWaitMs,
      minBytes: order.some((t) => t.eager || registry.get(t.topic, t.partition)?.conditional) ? 1 : opts.minBytes,
      maxBytes: opts.maxBytes,
      isolationLevel: READ_COMMITTED,
      sessionId: 0,
      sessionEpoch: -1,
      topics,
      forgottenTopicsData: [],
      rackId: '',
    });
    if (body.errorCode) throw new UpstreamError(`Fetch from upstream broker ${nodeId}`, body.errorCode);
    const asked = new Set(order);
    for (const r of body.responses) {
      const topic = version >= FETCH_TOPIC_IDS_VERSION ? topicOfId.get(r.topicId ?? '') : r.topic;
      if (topic === undefined) continue;
      for (const p of r.partitions) {
        const tail = tails.get(topic, p.partitionIndex);
        if (!tail || !asked.has(tail)) continue;
        this.deps.reads.indexBytes += p.records?.length ?? 0;
        await this.deps.ingest.ingest(tail, p, nodeId, rows);
        // An index read for the first time takes over from the pass the store was found to hold once it has caught up.
        const store = registry.get(topic, p.partitionIndex);
        if (store && store.asStoredUntil > 0 && store.checkpoint.nextOffset >= store.asStoredUntil && store.isOpen) registry.publish(store);
      }
    }
  }
}
