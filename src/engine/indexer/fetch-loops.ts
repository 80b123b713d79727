/**
 * Two fetch loops per leader broker, each on a connection of its own, handing each partition's
 * answer to its index (partition-ingest.ts), READ_COMMITTED:
 *
 * - the follow loop long-polls the partitions whose index has read what the store holds as
 *   stable, all of them in one request, so an idle replica asks rarely;
 * - the catch-up loop reads the partitions whose index is behind (new, reopened, or left behind
 *   by a large write) without waiting: a broker answers a connection's requests one at a time,
 *   so on the follow loop's connection they would wait out its long poll first.
 *
 * A partition moves between them as its index catches up or falls behind. One that must be read
 * now (Indexer.readUpTo: a carry pass's end marker to read back, a fetch held for the index) is
 * taken by the catch-up loop even while the follow loop's long poll holds it: that poll's answer
 * for it is then dropped. The loops end when their broker leads no wanted partition; one that
 * fails backs off (failure-policy.ts) and asks the metadata loop to look again.
 */
import { Wakeup, type Clock } from '../../common/clock.js';
import type { Logger } from '../../common/log.js';
import { ErrorCode } from '../../protocol/errors.js';
import { ApiKey } from '../../protocol/messages.js';
import { ZERO_UUID } from '../../protocol/wire/uuid.js';
import { UpstreamError } from '../../upstream/error-class.js';
import type { Lane } from '../../upstream/broker-connections.js';
import type { UpstreamClusterClient } from '../../upstream/upstream-cluster-client.js';
import type { IndexerOptions } from '../api/engine-options.js';
import type { PartitionStore } from '../store/partition-store.js';
import { RowBuffer } from '../store/row-buffer.js';
import type { StoreRegistry } from '../store/store-registry.js';
import type { FailurePolicy } from './failure-policy.js';
import type { PartitionIngest } from './partition-ingest.js';
import { message, type Tail, type Tails } from './tails.js';

type LoopKind = 'follow' | 'catch-up';
const KINDS: readonly LoopKind[] = ['follow', 'catch-up'];
const LANE: Record<LoopKind, Lane> = { follow: 'follow', 'catch-up': 'catch-up' };
/** How long a loop with no partition of its kind sleeps before looking again, unless woken. */
const NONE_OF_MINE_MS = 1_000;

const READ_COMMITTED = 1;
/** Fetch v13 names topics by id only. */
const FETCH_TOPIC_IDS_VERSION = 13;
/** How long a loop whose partitions are all in a fetch or being located looks again after. */
const BUSY_RECHECK_MS = 50;
const MIN_IDLE_MS = 10;
/** A throttle time past this is a store's mistake, not a quota: the loop holds off this long at most. */
const MAX_THROTTLE_MS = 30_000;

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
  private readonly loops = new Map<string, { wake: Wakeup; done: Promise<void> }>();

  constructor(private readonly deps: FetchLoopsDeps) {}

  /** Makes sure the broker has its loops, and wakes them: a partition was handed to it or became fetchable. */
  ensure(nodeId: number): void {
    for (const kind of KINDS) {
      const key = loopKey(nodeId, kind);
      const loop = this.loops.get(key);
      if (loop) {
        loop.wake.wakeUp();
        continue;
      }
      const wake = new Wakeup(this.deps.clock);
      const entry = { wake, done: Promise.resolve() };
      this.loops.set(key, entry);
      entry.done = this.run(nodeId, kind, wake).finally(() => {
        if (this.loops.get(key) === entry) this.loops.delete(key);
      });
    }
  }

  /** Wakes the broker's loops, if it has them. */
  wake(nodeId: number): void {
    for (const kind of KINDS) this.loops.get(loopKey(nodeId, kind))?.wake.wakeUp();
  }

  wakeAll(): void {
    for (const loop of this.loops.values()) loop.wake.wakeUp();
  }

  /** Wakes every loop and waits for them to end (the indexer stopped running). */
  async close(): Promise<void> {
    this.wakeAll();
    await Promise.all([...this.loops.values()].map((l) => l.done));
  }

  /**
   * Whether the tail's index is behind what the store holds as stable: not read at all yet since
   * it opened, or short of the last stable offset its last answer gave, unless the last read
   * from where it stands brought nothing (a store that says more is there than it gives: then
   * the long polls take it, rather than a loop asking again at once).
   */
  private behind(t: Tail): boolean {
    const store = this.deps.registry.get(t.topic, t.partition);
    if (!store || t.positioned !== store) return true;
    const cp = store.checkpoint;
    return cp.nextOffset < Math.max(cp.lastStableOffset, t.awaitedEnd ?? 0) && cp.nextOffset !== t.stalledAt;
  }

  /** Whether the loop may take the tail now: not in another fetch, unless the catch-up loop overtakes a long poll. */
  private free(t: Tail, catchingUp: boolean): boolean {
    return !t.busy || (catchingUp && t.longPolled === true);
  }

  private async run(nodeId: number, kind: LoopKind, wake: Wakeup): Promise<void> {
    const { tails, failures, log, clock } = this.deps;
    // Each loop has its own: another loop's answer may be parsed while this one decompresses.
    const rows = new RowBuffer(4096);
    const catchingUp = kind === 'catch-up';
    let fails = 0;
    let rotation = 0;
    while (this.deps.running()) {
      const leads = tails.ofLeader(nodeId);
      if (leads.length === 0) {
        // Leaves the map now, not in ensure's finally: a partition handed to this broker
        // before that ran would only wake this ending loop and wait for the next metadata round.
        if (this.loops.get(loopKey(nodeId, kind))?.wake === wake) this.loops.delete(loopKey(nodeId, kind));
        return;
      }
      const mine = leads.filter((t) => this.behind(t) === catchingUp);
      if (mine.length === 0) {
        await wake.sleep(NONE_OF_MINE_MS);
        continue;
      }
      const now = clock.now();
      const ready = mine.filter((t) => this.free(t, catchingUp) && !t.locating && t.retryAt <= now && this.opened(t));
      if (ready.length === 0) {
        const soonest = Math.min(...mine.map((t) => (!this.free(t, catchingUp) || t.locating ? now + BUSY_RECHECK_MS : t.retryAt)));
        await wake.sleep(Math.max(MIN_IDLE_MS, soonest - now));
        continue;
      }
      // Kafka returns an oversized batch whole only for the first partition with data, so the
      // order rotates: every partition gets to be first.
      rotation = (rotation + 1) % ready.length;
      const order = [...ready.slice(rotation), ...ready.slice(0, rotation)];
      // Each take is a claim: an answer for a tail another loop has taken since is not used.
      const claims = new Map<Tail, number>();
      for (const t of order) {
        t.busy = true;
        t.longPolled = !catchingUp;
        claims.set(t, ++t.claims);
      }
      const held = () => order.filter((t) => claims.get(t) === t.claims);
      try {
        const throttleMs = await this.fetchOnce(nodeId, kind, order, claims, rows);
        if (fails > 0) log.info('upstream broker reachable again', { nodeId, after: fails });
        fails = 0;
        // A partition that changed sides is fetched by the other loop from now on: it may be asleep.
        if (held().some((t) => this.behind(t) !== catchingUp)) this.loops.get(loopKey(nodeId, catchingUp ? 'follow' : 'catch-up'))?.wake.wakeUp();
        // A store enforcing a quota says how long to hold off (KIP-219): partitions fetched without
        // waiting for bytes would otherwise ask again at once. The tails stay busy meanwhile; a
        // wake-up (a close, new metadata) cuts it short.
        if (throttleMs > 0) await wake.sleep(Math.min(throttleMs, MAX_THROTTLE_MS));
      } catch (err) {
        if (!this.deps.running()) return;
        fails++;
        const wait = failures.fetchBackoff(fails);
        for (const t of held()) t.lastError = message(err);
        log.warn('index fetch failed', { nodeId, err, attempt: fails, retryInMs: wait });
        this.deps.cluster.dropBroker(nodeId);
        this.deps.fetchFailed();
        // Not wake.sleep: the metadata refresh this asks for would wake the loop at once, and a
        // broker that is down would be retried in a tight loop.
        await failures.pause(wait);
      } finally {
        for (const t of held()) {
          t.busy = false;
          t.longPolled = false;
        }
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

  /**
   * Whether the follow loop's long poll is to answer at the tail's first byte rather than wait
   * for a batch of them (minBytes): the table API reads it, it holds conditional records, or a
   * carry pass is open on it (the carrier waits for its index to read the pass back).
   */
  private urgent(t: Tail, store: PartitionStore | undefined): boolean {
    return t.eager === true || (store !== undefined && (store.conditional || store.carry.openPass >= 0));
  }

  /** Fetches the tails from the broker and indexes the answer; resolves with the store's throttle time. */
  private async fetchOnce(nodeId: number, kind: LoopKind, order: Tail[], claims: ReadonlyMap<Tail, number>, rows: RowBuffer): Promise<number> {
    const { tails, registry, opts } = this.deps;
    const client = await this.deps.cluster.broker(nodeId, LANE[kind]);
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
      maxWaitMs: kind === 'catch-up' ? 0 : opts.maxWaitMs,
      minBytes: kind === 'catch-up' || order.some((t) => this.urgent(t, registry.get(t.topic, t.partition))) ? 1 : opts.minBytes,
      maxBytes: opts.maxBytes,
      isolationLevel: READ_COMMITTED,
      sessionId: 0,
      sessionEpoch: -1,
      topics,
      forgottenTopicsData: [],
      rackId: '',
    });
    if (body.errorCode) throw new UpstreamError(`Fetch from upstream broker ${nodeId}`, body.errorCode);
    for (const r of body.responses) {
      const topic = version >= FETCH_TOPIC_IDS_VERSION ? topicOfId.get(r.topicId ?? '') : r.topic;
      if (topic === undefined) continue;
      for (const p of r.partitions) {
        const tail = tails.get(topic, p.partitionIndex);
        // Not asked for, or taken by the catch-up loop while this long poll waited.
        if (!tail || claims.get(tail) !== tail.claims) continue;
        this.deps.reads.indexBytes += p.records?.length ?? 0;
        const from = registry.get(topic, p.partitionIndex)?.checkpoint.nextOffset;
        await this.deps.ingest.ingest(tail, p, nodeId, rows);
        const store = registry.get(topic, p.partitionIndex);
        // An answer out of range or in error tells nothing of where the log ends: still behind.
        if (p.errorCode === ErrorCode.NONE) tail.positioned = store;
        const stalled = kind === 'catch-up' && p.errorCode === ErrorCode.NONE && store?.checkpoint.nextOffset === from;
        tail.stalledAt = stalled ? from : undefined;
        // An end awaited that the store does not give (a log truncated since): not to wait for.
        if (stalled) tail.awaitedEnd = undefined;
        // An index read for the first time takes over from the pass the store was found to hold once it has caught up.
        if (store && store.asStoredUntil > 0 && store.checkpoint.nextOffset >= store.asStoredUntil && store.isOpen) registry.publish(store);
      }
    }
    return body.throttleTimeMs ?? 0;
  }
}

function loopKey(nodeId: number, kind: LoopKind): string {
  return `${nodeId} ${kind}`;
}
