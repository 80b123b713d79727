/**
 * Tails the partitions of the compacted topics that this replica wants (setWanted: the ones it
 * carries and the ones its clients use; every one by default) from the upstream into their
 * indexes, like a READ_COMMITTED consumer: records are indexed only up to the last stable
 * offset, aborted data is flagged from the answer's aborted-transaction list, transaction
 * markers become rows. A new index of a store that no longer starts at 0 first finds the last
 * carry pass the store holds (pass-locator.ts), which is served until the index has caught up.
 *
 * One fetch loop per leader broker, each fetching all of that broker's partitions at once;
 * a metadata loop finds partitions (new topics, CreatePartitions), follows leader changes and
 * notices deleted or re-created topics. A partition's index resumes from its checkpoint; the
 * upstream moving its log start (retention, DeleteRecords) drops what went below it; an index
 * that is ahead of the upstream (a re-created topic, a truncated log) is started over.
 */
import { indexerOptions, type IndexerOptions } from '../api/engine-options.js';
import { ErrorCode, errorName } from '../../protocol/errors.js';
import { ApiKey, type FetchResponsePartitionData } from '../../protocol/messages.js';
import { ZERO_UUID } from '../../protocol/wire/uuid.js';
import type { Logger } from '../../common/log.js';
import type { TopicPolicy } from '../api/topic-policy.js';
import type { PartitionStore, UpstreamPosition } from '../store/partition-store.js';
import { KeyIdentities } from '../key-identity/key-identities.js';
import { SchemaUnavailableError } from '../key-identity/schema-unavailable.js';
import { RowBuffer } from '../store/row-buffer.js';
import { isDamagedFile, isStorageFailure, storageFix } from '../../common/storage-errors.js';
import { rollPolicy, type RollPolicy } from '../store/segment-roller.js';
import type { StoreRegistry } from '../store/store-registry.js';
import { Wakeup } from '../../common/clock.js';
import { CatchUpProgress } from './catch-up-progress.js';
import { collectRows } from './fetched-rows.js';
import { deleteRecordsBefore, fetchRecords, lastStableOffsets, logBounds } from './partition-requests.js';
import { locateLastPass } from '../carry/pass-locator.js';
import { backoffMs } from '../../upstream/backoff.js';
import { isStaleMetadataCode, UpstreamError } from '../../upstream/error-class.js';
import type { UpstreamClient } from '../../upstream/client.js';
import type { UpstreamClusterClient } from '../../upstream/upstream-cluster-client.js';
import { partitionKey } from '../api/partition-key.js';

/** What the indexer asks of the upstream cluster client; its unit tests give a scripted one. */
export type IndexerUpstream = Pick<UpstreamClusterClient, 'metadata' | 'broker' | 'dropBroker'>;

const READ_COMMITTED = 1;
/** Fetch v13 names topics by id only. */
const FETCH_TOPIC_IDS_VERSION = 13;
/** The backoff rule's first waits (upstream.backoff.ts) for each kind of failure; maxBackoffMs caps them all. */
const METADATA_BACKOFF_BASE_MS = 400;
const FETCH_BACKOFF_BASE_MS = 200;
const SCHEMA_BACKOFF_BASE_MS = 400;
const STORAGE_BACKOFF_BASE_MS = 500;
/** A partition's pause after an error answer: short when a metadata refresh should find its new leader. */
const STALE_LEADER_RETRY_MS = 200;
const PARTITION_ERROR_RETRY_MS = 1000;

export interface TailStatus {
  topic: string;
  partition: number;
  /** The broker fetched from; -1 while unknown. */
  leader: number;
  lastError?: string;
}

interface Tail {
  topic: string;
  partition: number;
  /** From the last metadata answer ('' while unknown). */
  topicId: string;
  /** Reading the store for its last whole pass before indexing it (pass-locator.ts); not fetched meanwhile. */
  locating: boolean;
  leader: number;
  roll: RollPolicy;
  /** In a fetch now (a leader change may start a second loop before the first returns). */
  busy: boolean;
  retryAt: number;
  /** Fetched answers in a row whose key schemas the registry did not give (the backoff grows with them). */
  schemaFailures: number;
  /** Attempts in a row that the storage of the index failed (the backoff grows with them). */
  storageFailures: number;
  lastError?: string;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function samePosition(a: UpstreamPosition, b: UpstreamPosition): boolean {
  return (
    a.nextOffset === b.nextOffset && a.logStartOffset === b.logStartOffset && a.lastStableOffset === b.lastStableOffset && a.highWatermark === b.highWatermark
  );
}

export class Indexer {
  private policies = new Map<string, TopicPolicy>();
  private readonly tails = new Map<string, Tail>();
  private readonly loops = new Map<number, { wake: Wakeup; done: Promise<void> }>();
  private readonly metadataWake = new Wakeup();
  private metadataLoop: Promise<void> | undefined;
  private running = false;
  /** Topics the last metadata answers called unknown, and how many answers in a row. */
  private readonly missing = new Map<string, number>();
  /** Pending backoff pauses: only close() cuts them short. */
  private readonly backoffs = new Set<() => void>();
  /** Partitions whose DeleteRecords failed once (warned about once). */
  private readonly deleteRecordsRefused = new Set<string>();
  private readonly opts: Required<IndexerOptions>;
  private readonly progress: CatchUpProgress;
  private readonly identities: KeyIdentities;
  /** Told when the set of compacted partitions changed (the carrier group divides them). */
  private partitionsChanged: () => void = () => undefined;
  /** Which partitions to index; the others are known from metadata only. */
  private wanted: (topic: string, partition: number) => boolean = () => true;
  /** Bytes of record batches read from the store: to index them, and to find a new index's last carry pass. */
  readonly reads = { indexBytes: 0, locateBytes: 0 };

  constructor(
    private readonly cluster: IndexerUpstream,
    private readonly registry: StoreRegistry,
    private readonly log: Logger,
    options: IndexerOptions = {},
    identities?: KeyIdentities,
  ) {
    this.identities = identities ?? KeyIdentities.exactBytes(log);
    this.opts = indexerOptions(options);
    this.progress = new CatchUpProgress(log);
  }

  /**
   * Waits until every partition of the topic (of every compacted topic when omitted) is indexed
   * up to the upstream's last stable offset as of this call, or the deadline passes: an
   * on-demand clean then covers what was produced before it was asked for.
   */
  async catchUp(topic: string | undefined, deadlineMs: number): Promise<void> {
    await this.reach((tail) => topic === undefined || tail.topic === topic, Date.now() + deadlineMs, 'catch-up');
  }

  /**
   * Waits until the partition's index has read everything the upstream held as stable when asked
   * (its last stable offset then): true when it has within the deadline. What the index publishes
   * on the way (a pass read whole, a moved log start) is sent to the main thread before the
   * answer, so a caller there sees the snapshot it waited for.
   */
  async caughtUp(topic: string, partition: number, deadlineMs: number): Promise<boolean> {
    const reached = await this.reach((tail) => tail.topic === topic && tail.partition === partition, Date.now() + deadlineMs, 'partition catch-up');
    return reached.length > 0 && reached.every(Boolean);
  }

  /** Waits for the index of every tail `which` selects to reach the upstream's last stable offset; whether each did. */
  private async reach(which: (tail: Tail) => boolean, deadline: number, what: string): Promise<boolean[]> {
    // Partitions created since the last metadata round (a topic auto-created by its first produce) count too.
    await this.refreshMetadata().catch((err) => this.log.debug(`${what}: metadata refresh failed`, { err }));
    const byLeader = new Map<number, Tail[]>();
    for (const tail of this.tails.values()) {
      if (which(tail) && this.isWanted(tail)) byLeader.set(tail.leader, [...(byLeader.get(tail.leader) ?? []), tail]);
    }
    const answers = await Promise.all(
      [...byLeader].map(([leader, tails]) =>
        this.cluster
          .broker(leader)
          .then((client) => lastStableOffsets(client, tails))
          .catch((err: unknown) => {
            this.log.debug(`${what}: no last stable offsets from the leader`, { leader, partitions: tails.length, err });
            return [];
          }),
      ),
    );
    const targets = answers.flat().filter((a) => {
      if (a.errorCode !== ErrorCode.NONE) this.log.debug(`${what}: no last stable offset`, { topic: a.topic, partition: a.partition, errorCode: a.errorCode });
      return a.errorCode === ErrorCode.NONE;
    });
    const reached: boolean[] = [];
    for (const t of targets) {
      for (;;) {
        const store = this.registry.get(t.topic, t.partition);
        if (store && store.checkpoint.nextOffset >= t.offset) {
          reached.push(true);
          break;
        }
        if (Date.now() >= deadline) {
          reached.push(false);
          break;
        }
        this.loops.get(this.tails.get(partitionKey(t.topic, t.partition))?.leader ?? -1)?.wake.wakeUp();
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    }
    return reached;
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.metadataLoop = this.runMetadata();
  }

  /**
   * The compacted topics and their policies. Topics no longer listed stop being tailed and
   * their indexes are deleted (the topic was deleted or is no longer compacted).
   */
  setPolicies(policies: Map<string, TopicPolicy>): void {
    this.policies = new Map(policies);
    for (const topic of new Set([...this.registry.topics(), ...[...this.tails.values()].map((t) => t.topic)])) {
      if (!this.policies.has(topic)) this.dropTopic(topic, 'no longer compacted');
    }
    for (const tail of this.tails.values()) tail.roll = rollPolicy(this.policies.get(tail.topic)!);
    this.metadataWake.wakeUp();
  }

  /** Throws the topic's indexes away and indexes it again from the upstream's log start. */
  rebuild(topic: string): void {
    this.dropTopic(topic, 'rebuild requested');
    this.metadataWake.wakeUp();
  }

  /** Every partition of the compacted topics, as the upstream's metadata last listed them. */
  partitions(): { topic: string; partition: number }[] {
    return [...this.tails.values()].map((t) => ({ topic: t.topic, partition: t.partition }));
  }

  /**
   * Which partitions to index (partition-demand.ts): a partition no longer wanted has its index
   * let go at the next metadata round; one wanted again is indexed from the store's log start.
   */
  setWanted(wanted: (topic: string, partition: number) => boolean): void {
    this.wanted = wanted;
  }

  /** The partition became wanted: index it now rather than at the next metadata round. */
  want(topic: string, partition: number): void {
    const tail = this.tails.get(partitionKey(topic, partition));
    if (!tail) {
      this.metadataWake.wakeUp();
      return;
    }
    if (!this.registry.get(topic, partition)) this.open(tail);
    if (tail.leader >= 0) this.ensureLoop(tail.leader);
  }

  /** `listener` is called after a metadata answer or a dropped topic changed partitions(). */
  onPartitionsChanged(listener: () => void): void {
    this.partitionsChanged = listener;
  }

  status(): TailStatus[] {
    return [...this.tails.values()].map((t) => ({
      topic: t.topic,
      partition: t.partition,
      leader: t.leader,
      ...(t.lastError ? { lastError: t.lastError } : {}),
    }));
  }

  /** Stops the loops; close the cluster too so that requests in flight end at once. */
  async close(): Promise<void> {
    this.running = false;
    this.metadataWake.wakeUp();
    for (const loop of this.loops.values()) loop.wake.wakeUp();
    for (const stop of this.backoffs) stop();
    await this.metadataLoop;
    await Promise.all([...this.loops.values()].map((l) => l.done));
  }

  /** The tail's index (the registry may have replaced it after a reset). */
  private storeOf(tail: Tail): PartitionStore {
    return this.registry.ensure(tail.topic, tail.partition);
  }

  private dropTopic(topic: string, why: string): void {
    const before = this.tails.size;
    for (const [key, tail] of this.tails) {
      if (tail.topic !== topic) continue;
      this.tails.delete(key);
      this.progress.forget(topic, tail.partition);
    }
    if (this.tails.size !== before) this.partitionsChanged();
    if (this.registry.topics().has(topic)) {
      this.log.info('dropping topic index', { topic, reason: why });
      this.registry.dropTopic(topic);
    }
  }

  private async runMetadata(): Promise<void> {
    let failures = 0;
    while (this.running) {
      let wait = this.opts.metadataIntervalMs;
      if (this.policies.size > 0) {
        try {
          await this.refreshMetadata();
          if (failures > 0) this.log.info('upstream metadata reachable again', { after: failures });
          failures = 0;
        } catch (err) {
          if (!this.running) return;
          failures++;
          wait = backoffMs(failures, { baseMs: METADATA_BACKOFF_BASE_MS, maxMs: this.opts.maxBackoffMs });
          this.log.warn('upstream metadata failed', { err, attempt: failures, retryInMs: wait });
        }
      }
      await this.metadataWake.sleep(wait);
    }
  }

  private async refreshMetadata(): Promise<void> {
    const topics = [...this.policies.keys()];
    const answer = await this.cluster.metadata(topics);
    const before = this.tails.size;
    for (const t of answer.topics) {
      const policy = t.name === null ? undefined : this.policies.get(t.name);
      if (!policy || t.name === null) continue;
      const topicId = t.topicId ?? ZERO_UUID;
      if (t.errorCode === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) {
        // Twice in a row: a broker whose metadata lags behind a creation must not cost an index.
        const strikes = (this.missing.get(t.name) ?? 0) + 1;
        this.missing.set(t.name, strikes);
        if (strikes >= 2) this.dropTopic(t.name, 'topic does not exist upstream');
        continue;
      }
      this.missing.delete(t.name);
      if (t.errorCode !== ErrorCode.NONE) {
        this.log.debug('topic metadata error', { topic: t.name, errorCode: t.errorCode });
        continue;
      }
      this.adoptTopicId(t.name, topicId);
      for (const p of t.partitions) {
        const key = partitionKey(t.name, p.partitionIndex);
        let tail = this.tails.get(key);
        if (!tail) {
          tail = {
            topic: t.name,
            partition: p.partitionIndex,
            topicId: '',
            locating: false,
            leader: -1,
            roll: rollPolicy(policy),
            busy: false,
            retryAt: 0,
            schemaFailures: 0,
            storageFailures: 0,
          };
          this.tails.set(key, tail);
        }
        if (topicId !== ZERO_UUID) tail.topicId = topicId;
        tail.leader = p.errorCode === ErrorCode.NONE ? p.leaderId : -1;
        if (!this.isWanted(tail)) continue;
        this.open(tail);
        if (tail.leader >= 0) this.ensureLoop(tail.leader);
      }
    }
    if (this.tails.size !== before) this.partitionsChanged();
    this.letGoUnwanted();
  }

  private isWanted(tail: Tail): boolean {
    return this.wanted(tail.topic, tail.partition);
  }

  /** Opens (or creates) the tail's index and gives it the topic's id; a new one first finds the store's last whole pass. */
  private open(tail: Tail): void {
    try {
      const fresh = !this.registry.get(tail.topic, tail.partition);
      const store = this.storeOf(tail);
      if (store.checkpoint.topicId === '' && tail.topicId !== '') store.setTopicId(tail.topicId);
      if (fresh && store.carry.pass < 0 && tail.leader >= 0 && this.running) void this.locate(tail, store);
    } catch (err) {
      // The fetch loop opens it again; this partition's index must not stop the others.
      this.storeFailed(tail, err);
    }
  }

  /**
   * Before an index that has read no whole pass yet starts reading the store, finds the last
   * whole pass the store holds by reading it once, headers only (pass-locator.ts), and serves
   * reads below the store's log start from it until the index has caught up: a replica's first
   * answers then wait for one read of the store, not for its index of the survivors. A store
   * that still starts at 0 holds every record as written, and is served as it is.
   */
  private async locate(tail: Tail, store: PartitionStore): Promise<void> {
    const { topic, partition } = tail;
    tail.locating = true;
    try {
      const client = await this.cluster.broker(tail.leader);
      const [logStart, end] = await logBounds(client, topic, partition);
      if (logStart === 0) return;
      const target = { topic, topicId: store.checkpoint.topicId, partition };
      const started = performance.now();
      const found = await locateLastPass(
        async (offset) => ({ records: await fetchRecords(client, target, offset, this.opts.partitionMaxBytes), highWatermark: end }),
        logStart,
      );
      this.reads.locateBytes += found.bytesRead;
      if (!found.carried || this.registry.get(topic, partition) !== store || !store.isOpen) return;
      this.registry.publishAsStored(store, found.carried, found.next);
      this.log.info('serving a partition as the store holds it until its index has read it', {
        topic,
        partition,
        pass: found.carried.copiesFrom,
        copiesBelow: found.carried.copiesBelow,
        until: found.next,
        bytesRead: found.bytesRead,
        ms: Math.round(performance.now() - started),
      });
    } catch (err) {
      this.log.debug('could not find the last carry pass in the store; reads below its log start wait for the index', { topic, partition, err });
    } finally {
      tail.locating = false;
      if (tail.leader >= 0) this.ensureLoop(tail.leader);
    }
  }

  /** Lets the indexes of partitions no longer wanted go: no client here used them for a while, and this replica does not carry them. */
  private letGoUnwanted(): void {
    for (const store of [...this.registry.all()]) {
      const { topic, partition } = store.id;
      const tail = this.tails.get(partitionKey(topic, partition));
      if (!tail || this.isWanted(tail) || tail.busy) continue;
      this.log.info('letting a partition index go: no client of this replica used it within the idle time, and it does not carry it', { topic, partition });
      this.progress.forget(topic, partition);
      try {
        this.registry.dropPartition(topic, partition);
      } catch (err) {
        this.log.warn('letting a partition index go failed; it is tried again at the next metadata round', { topic, partition, err });
      }
    }
  }

  /** A topic whose id changed was deleted and re-created: its index starts over. */
  private adoptTopicId(topic: string, topicId: string): void {
    if (topicId === ZERO_UUID) return;
    for (const store of this.registry.all()) {
      if (store.id.topic !== topic) continue;
      if (store.checkpoint.topicId !== '' && store.checkpoint.topicId !== topicId) {
        this.dropTopic(topic, `topic re-created (id ${store.checkpoint.topicId} → ${topicId})`);
        return;
      }
    }
  }

  private ensureLoop(nodeId: number): void {
    const loop = this.loops.get(nodeId);
    if (loop) {
      loop.wake.wakeUp();
      return;
    }
    const wake = new Wakeup();
    const entry = { wake, done: Promise.resolve() };
    this.loops.set(nodeId, entry);
    entry.done = this.runBroker(nodeId, wake).finally(() => {
      if (this.loops.get(nodeId) === entry) this.loops.delete(nodeId);
    });
  }

  private tailsOf(nodeId: number): Tail[] {
    return [...this.tails.values()].filter((t) => t.leader === nodeId && this.isWanted(t));
  }

  private async runBroker(nodeId: number, wake: Wakeup): Promise<void> {
    // Each loop has its own: another loop's answer may be parsed while this one decompresses.
    const rows = new RowBuffer(4096);
    let failures = 0;
    let rotation = 0;
    while (this.running) {
      const mine = this.tailsOf(nodeId);
      if (mine.length === 0) {
        // Leaves the map now, not in ensureLoop's finally: a partition handed to this broker
        // before that ran would only wake this ending loop and wait for the next metadata round.
        if (this.loops.get(nodeId)?.wake === wake) this.loops.delete(nodeId);
        return;
      }
      const now = Date.now();
      const ready = mine.filter((t) => !t.busy && !t.locating && t.retryAt <= now && this.opened(t));
      if (ready.length === 0) {
        const soonest = Math.min(...mine.map((t) => (t.busy || t.locating ? now + 50 : t.retryAt)));
        await wake.sleep(Math.max(10, soonest - now));
        continue;
      }
      // Kafka returns an oversized batch whole only for the first partition with data, so the
      // order rotates: every partition gets to be first.
      rotation = (rotation + 1) % ready.length;
      const order = [...ready.slice(rotation), ...ready.slice(0, rotation)];
      for (const t of order) t.busy = true;
      try {
        await this.fetchOnce(nodeId, order, rows);
        if (failures > 0) this.log.info('upstream broker reachable again', { nodeId, after: failures });
        failures = 0;
      } catch (err) {
        if (!this.running) return;
        failures++;
        const wait = backoffMs(failures, { baseMs: FETCH_BACKOFF_BASE_MS, maxMs: this.opts.maxBackoffMs });
        for (const t of order) t.lastError = message(err);
        this.log.warn('index fetch failed', { nodeId, err, attempt: failures, retryInMs: wait });
        this.cluster.dropBroker(nodeId);
        this.metadataWake.wakeUp();
        // Not wake.sleep: the metadata refresh this asks for would wake the loop at once, and a
        // broker that is down would be retried in a tight loop.
        await this.backoff(wait);
      } finally {
        for (const t of order) t.busy = false;
      }
    }
  }

  private backoff(ms: number): Promise<void> {
    if (!this.running) return Promise.resolve();
    return new Promise((resolve) => {
      const stop = () => {
        clearTimeout(timer);
        this.backoffs.delete(stop);
        resolve();
      };
      const timer = setTimeout(stop, ms);
      this.backoffs.add(stop);
    });
  }

  private async fetchOnce(nodeId: number, order: Tail[], rows: RowBuffer): Promise<void> {
    const client = await this.cluster.broker(nodeId);
    const withIds = order.every((t) => this.storeOf(t).checkpoint.topicId !== '');
    const version = Math.min(client.version(ApiKey.Fetch), withIds ? Infinity : FETCH_TOPIC_IDS_VERSION - 1);
    const byTopic = new Map<string, Tail[]>();
    for (const t of order) {
      const list = byTopic.get(t.topic) ?? [];
      list.push(t);
      byTopic.set(t.topic, list);
    }
    const topicOfId = new Map<string, string>();
    const topics = [...byTopic].map(([topic, tails]) => {
      const topicId = this.storeOf(tails[0]!).checkpoint.topicId || ZERO_UUID;
      topicOfId.set(topicId, topic);
      return {
        topic,
        topicId,
        partitions: tails.map((t) => ({
          partition: t.partition,
          currentLeaderEpoch: -1,
          fetchOffset: this.storeOf(t).checkpoint.nextOffset,
          lastFetchedEpoch: -1,
          logStartOffset: -1,
          partitionMaxBytes: this.opts.partitionMaxBytes,
        })),
      };
    });
    const body = await client.request(ApiKey.Fetch, version, {
      replicaId: -1,
      maxWaitMs: this.opts.maxWaitMs,
      minBytes: this.opts.minBytes,
      maxBytes: this.opts.maxBytes,
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
        const tail = this.tails.get(partitionKey(topic, p.partitionIndex));
        if (!tail || !asked.has(tail)) continue;
        this.reads.indexBytes += p.records?.length ?? 0;
        await this.handlePartition(tail, p, nodeId, rows);
        // An index read for the first time takes over from the pass the store was found to hold once it has caught up.
        const store = this.registry.get(topic, p.partitionIndex);
        if (store && store.asStoredUntil > 0 && store.checkpoint.nextOffset >= store.asStoredUntil && store.isOpen) this.registry.publish(store);
      }
    }
  }

  private async handlePartition(tail: Tail, p: FetchResponsePartitionData, nodeId: number, rows: RowBuffer): Promise<void> {
    if (p.errorCode === ErrorCode.OFFSET_OUT_OF_RANGE) {
      await this.outOfRange(tail, nodeId);
      return;
    }
    if (p.errorCode !== ErrorCode.NONE) {
      tail.lastError = `fetch error ${errorName(p.errorCode)}`;
      const stale = isStaleMetadataCode(p.errorCode);
      // A short pause either way: metadata that still names the same leader must not make the
      // partition bounce between the two in a tight loop.
      tail.retryAt = Date.now() + (stale ? STALE_LEADER_RETRY_MS : PARTITION_ERROR_RETRY_MS);
      if (stale) {
        tail.leader = -1;
        this.metadataWake.wakeUp();
      }
      return;
    }
    const store = this.keyedStoreOf(tail);
    if (!store) return;
    const highWatermark = Number(p.highWatermark);
    const lso = Number(p.lastStableOffset);
    const lastStable = lso >= 0 ? lso : highWatermark;
    try {
      // Fetch v4 has no log start offset: -1, below any index's.
      const logStart = Number(p.logStartOffset ?? -1n);
      // A carried partition's snapshot says where the store starts: it moves with it.
      if (logStart > store.checkpoint.logStartOffset && (store.dropBelow(logStart) || store.carry.pass >= 0)) this.registry.publish(store);
      rows.clear();
      const from = store.checkpoint.nextOffset;
      const digester = this.identities.digester(tail.topic);
      const collected = await collectRows(p.records ?? Buffer.alloc(0), p.abortedTransactions ?? [], from, lastStable, store.openTransactions, rows, digester);
      if (digester.pending) await digester.complete(rows.keys);
      // The index may have been dropped or reset while the batches decompressed.
      if (this.tails.get(partitionKey(tail.topic, tail.partition)) !== tail || this.registry.get(tail.topic, tail.partition) !== store) return;
      if (store.checkpoint.nextOffset !== from) return;
      const position = {
        nextOffset: collected.nextOffset,
        logStartOffset: Math.max(store.checkpoint.logStartOffset, logStart),
        lastStableOffset: lastStable,
        highWatermark,
      };
      // Most partitions of a fetch over many bring nothing new: a write transaction for each
      // would cost the worker far more than the records that did arrive.
      if (rows.length > 0 || collected.transactionsChanged || !samePosition(store.checkpoint, position)) {
        this.log.debug('indexed', {
          topic: tail.topic,
          partition: tail.partition,
          from,
          to: collected.nextOffset,
          rows: rows.length,
          logStart,
          highWatermark,
          lastStable,
        });
        store.ingest(rows, position, tail.roll, collected.transactionsChanged);
        // A pass that ended changed the survivors below its release end and where the copies are.
        if (rows.events.length > 0) this.registry.publish(store);
        else this.registry.publishEnd(store);
      }
      this.progress.indexed(tail.topic, tail.partition, from, collected.nextOffset, lastStable, highWatermark);
      tail.lastError = undefined;
      if (tail.schemaFailures > 0) {
        this.log.info('key schemas available again; indexing resumed', { topic: tail.topic, partition: tail.partition, after: tail.schemaFailures });
        tail.schemaFailures = 0;
      }
      if (tail.storageFailures > 0) {
        this.log.info('the index file is writable again; indexing resumed', { topic: tail.topic, partition: tail.partition, after: tail.storageFailures });
        tail.storageFailures = 0;
      }
    } catch (err) {
      // Closing ends the registry's answers too: not a failure to report.
      if (!this.running) return;
      if (err instanceof SchemaUnavailableError) this.schemaUnavailable(tail, err);
      else this.storeFailed(tail, err, store);
    }
  }

  /**
   * The tail's index, made with the topic's key identity. An index made with another one is
   * started over (its digests do not compare with the new ones) and this answer, fetched for
   * the old index's position, is not used: the next fetch starts from the log start.
   */
  private keyedStoreOf(tail: Tail): PartitionStore | undefined {
    const store = this.storeOf(tail);
    const mode = this.identities.modeOf(tail.topic);
    if (store.keyIdentity === mode) return store;
    if (store.keyIdentity === '') {
      store.setKeyIdentity(mode);
      return store;
    }
    const { topicId } = store.checkpoint;
    const fresh = this.registry.reset(store, `key identity changed from ${store.keyIdentity} to ${mode}`);
    fresh.setKeyIdentity(mode);
    if (topicId !== '') fresh.setTopicId(topicId);
    return undefined;
  }

  /**
   * The registry did not give a key schema: nothing is guessed. The partition's indexing waits
   * and retries with a growing backoff; its records past the index stay visible, unfiltered.
   */
  private schemaUnavailable(tail: Tail, err: SchemaUnavailableError): void {
    tail.schemaFailures++;
    const wait = backoffMs(tail.schemaFailures, { baseMs: SCHEMA_BACKOFF_BASE_MS, maxMs: this.opts.maxBackoffMs });
    tail.retryAt = Date.now() + wait;
    if (tail.lastError !== err.message) {
      this.log.warn('key schema not available from the schema registry; indexing of the partition waits for it (its records stay visible, unfiltered)', {
        topic: tail.topic,
        partition: tail.partition,
        schemaId: err.schemaId,
        registry: err.registry,
        reason: err.reason,
        attempt: tail.schemaFailures,
        retryInMs: wait,
        fix: 'check that the registry is reachable and holds the schema id the keys carry',
      });
    }
    tail.lastError = err.message;
  }

  /** Whether the tail's index is open (opening it if need be); one that will not open waits. */
  private opened(tail: Tail): boolean {
    try {
      this.storeOf(tail);
      return true;
    } catch (err) {
      this.storeFailed(tail, err);
      return false;
    }
  }

  /**
   * Opening or writing the index failed. A damaged file starts over. A failed storage (a full
   * disk) leaves the file as committed (PartitionStore.write) and the partition waits with a
   * growing backoff, said once with what to do; its records past the index stay visible,
   * unfiltered. Anything else reopens the file, so that its state follows what was committed.
   */
  private storeFailed(tail: Tail, err: unknown, store?: PartitionStore): void {
    const repeated = tail.lastError === message(err);
    tail.lastError = message(err);
    tail.retryAt = Date.now() + 1000;
    if (isDamagedFile(err)) {
      if (store) this.registry.rebuildFile(store, `${(err as { code: string }).code}: ${message(err)}`);
      return;
    }
    if (isStorageFailure(err)) {
      tail.storageFailures++;
      const wait = backoffMs(tail.storageFailures, { baseMs: STORAGE_BACKOFF_BASE_MS, maxMs: this.opts.maxBackoffMs });
      tail.retryAt = Date.now() + wait;
      if (tail.storageFailures === 1) {
        const file = store?.file ?? this.registry.fileOf(tail.topic);
        this.log.error(
          'the storage of a partition index failed; indexing of the partition waits for it (its records past the index are served unfiltered, like the uncleaned head of a log)',
          {
            topic: tail.topic,
            partition: tail.partition,
            err,
            retryInMs: wait,
            fix: storageFix(err, file),
          },
        );
      }
      return;
    }
    // A batch the upstream keeps sending fails the same way each second: say so once.
    if (!repeated) this.log.error('indexing a partition failed; retrying', { topic: tail.topic, partition: tail.partition, err });
    if (store) this.registry.reopen(store);
  }

  /** The fetch offset is outside the upstream log: moved log start, or an index ahead of it. */
  private async outOfRange(tail: Tail, nodeId: number): Promise<void> {
    const [earliest, latest] = await logBounds(await this.cluster.broker(nodeId), tail.topic, tail.partition);
    if (this.tails.get(partitionKey(tail.topic, tail.partition)) !== tail) return;
    const store = this.storeOf(tail);
    const next = store.checkpoint.nextOffset;
    if (next < earliest) {
      if (store.dropBelow(earliest) || store.carry.pass >= 0) this.registry.publish(store);
    } else if (next > latest) {
      this.registry.reset(store, `indexed up to ${next} but the upstream log ends at ${latest}`);
    } else {
      tail.retryAt = Date.now() + 1000;
    }
  }

  /**
   * A connection to the partition's leader, as the metadata loop last found it, on the admin
   * lane: a broker answers a connection's requests one at a time, and the fetch loops' long
   * polls on the main lane would hold up every read and write of a carry pass.
   */
  async leader(topic: string, partition: number): Promise<UpstreamClient> {
    const tail = this.tails.get(partitionKey(topic, partition));
    if (!tail || tail.leader < 0) throw new Error(`no known leader of ${topic}-${partition}`);
    return this.cluster.broker(tail.leader, 'admin');
  }

  /**
   * Asks the partition's leader to move its log start to `offset` (compact,delete retention).
   * Resolves false when the upstream cannot (no DeleteRecords, not allowed, no leader known).
   */
  async deleteRecords(topic: string, partition: number, offset: number): Promise<boolean> {
    const tail = this.tails.get(partitionKey(topic, partition));
    try {
      if (!tail || tail.leader < 0) throw new Error('no known leader');
      await deleteRecordsBefore(await this.cluster.broker(tail.leader), topic, partition, offset);
      return true;
    } catch (err) {
      const key = partitionKey(topic, partition);
      if (!this.deleteRecordsRefused.has(key)) {
        this.deleteRecordsRefused.add(key);
        this.log.warn('upstream did not delete records for retention; the index hides them instead', { topic, partition, offset, err });
      }
      return false;
    }
  }
}
