/**
 * Tails the partitions of the compacted topics that this replica wants (setWanted: the ones it
 * carries and the ones its clients use; every one by default) from the upstream into their
 * indexes, like a READ_COMMITTED consumer: records are indexed only up to the last stable
 * offset, aborted data is flagged from the answer's aborted-transaction list, transaction
 * markers become rows. A new index of a store that no longer starts at 0 first finds the last
 * carry pass the store holds (pass-location.ts), which is served until the index has caught up.
 *
 * The Indexer puts together the parts that do the work, each in a module of its own:
 * - metadata-loop.ts finds partitions (new topics, CreatePartitions), follows leader changes and
 *   notices deleted or re-created topics;
 * - fetch-loops.ts runs one fetch loop per leader broker, each fetching all of that broker's
 *   partitions at once, and partition-ingest.ts indexes each partition's answer: a partition's
 *   index resumes from its checkpoint, the upstream moving its log start (retention,
 *   DeleteRecords) drops what went below it, and an index that is ahead of the upstream (a
 *   re-created topic, a truncated log) is started over;
 * - pass-location.ts finds a new index's last carry pass;
 * - failure-policy.ts says how long each kind of failure waits;
 * - catch-up.ts waits for indexes to reach the upstream (catch-up-progress.ts logs long ones).
 * Every wait is on the clock the Indexer is given (the system clock by default).
 */
import { indexerOptions, type IndexerOptions } from '../api/engine-options.js';
import { SYSTEM_CLOCK, type Clock } from '../../common/clock.js';
import type { Logger } from '../../common/log.js';
import type { UpstreamClient } from '../../upstream/client.js';
import type { UpstreamClusterClient } from '../../upstream/upstream-cluster-client.js';
import type { TopicPolicy } from '../api/topic-policy.js';
import { KeyIdentities } from '../key-identity/key-identities.js';
import { rollPolicy } from '../store/segment-roller.js';
import type { StoreRegistry } from '../store/store-registry.js';
import { CatchUp } from './catch-up.js';
import { CatchUpProgress, PROGRESS_INTERVAL_MS } from './catch-up-progress.js';
import { FailurePolicy } from './failure-policy.js';
import { FetchLoops } from './fetch-loops.js';
import { MetadataLoop } from './metadata-loop.js';
import { PartitionIngest } from './partition-ingest.js';
import { deleteRecordsBefore } from './partition-requests.js';
import { PassLocation } from './pass-location.js';
import { Tails, type Tail, type TailStatus } from './tails.js';
import { partitionKey } from '../api/partition-key.js';

export type { TailStatus } from './tails.js';

/** What the indexer asks of the upstream cluster client; its unit tests give a scripted one. */
export type IndexerUpstream = Pick<UpstreamClusterClient, 'metadata' | 'broker' | 'dropBroker'>;

export class Indexer {
  private policies = new Map<string, TopicPolicy>();
  private running = false;
  /** Partitions whose DeleteRecords failed once (warned about once). */
  private readonly deleteRecordsRefused = new Set<string>();
  private readonly tails: Tails;
  private readonly progress: CatchUpProgress;
  private readonly failures: FailurePolicy;
  private readonly metadata: MetadataLoop;
  private readonly fetches: FetchLoops;
  private readonly location: PassLocation;
  private readonly catchUps: CatchUp;
  /** Told when the set of compacted partitions changed (the carrier group divides them). */
  private partitionsChanged: () => void = () => undefined;
  /** Bytes of record batches read from the store: to index them, and to find a new index's last carry pass. */
  readonly reads = { indexBytes: 0, locateBytes: 0 };

  constructor(
    private readonly cluster: IndexerUpstream,
    private readonly registry: StoreRegistry,
    private readonly log: Logger,
    options: IndexerOptions = {},
    identities?: KeyIdentities,
    clock: Clock = SYSTEM_CLOCK,
  ) {
    const opts = indexerOptions(options);
    const running = () => this.running;
    this.tails = new Tails(registry);
    this.progress = new CatchUpProgress(log, PROGRESS_INTERVAL_MS, () => clock.now());
    this.failures = new FailurePolicy({ registry, log, clock, maxBackoffMs: opts.maxBackoffMs });
    const ingest = new PartitionIngest({
      cluster,
      registry,
      tails: this.tails,
      identities: identities ?? KeyIdentities.exactBytes(log),
      progress: this.progress,
      failures: this.failures,
      log,
      running,
      leaderMoved: () => this.metadata.wakeUp(),
    });
    this.fetches = new FetchLoops({
      cluster,
      registry,
      tails: this.tails,
      ingest,
      failures: this.failures,
      log,
      clock,
      opts,
      reads: this.reads,
      running,
      fetchFailed: () => this.metadata.wakeUp(),
    });
    this.location = new PassLocation({
      cluster,
      registry,
      log,
      partitionMaxBytes: opts.partitionMaxBytes,
      reads: this.reads,
      located: (tail) => {
        if (tail.leader >= 0) this.fetches.ensure(tail.leader);
      },
    });
    this.metadata = new MetadataLoop({
      cluster,
      registry,
      tails: this.tails,
      progress: this.progress,
      failures: this.failures,
      log,
      clock,
      intervalMs: opts.metadataIntervalMs,
      running,
      policies: () => this.policies,
      open: (tail) => this.open(tail),
      leads: (nodeId) => this.fetches.ensure(nodeId),
      dropTopic: (topic, why) => this.dropTopic(topic, why),
      partitionsChanged: () => this.partitionsChanged(),
    });
    this.catchUps = new CatchUp({
      cluster,
      registry,
      tails: this.tails,
      log,
      clock,
      refreshMetadata: () => this.metadata.refresh(),
      readUpTo: (topic, partition, end) => this.readUpTo(topic, partition, end),
    });
  }

  /**
   * Waits until every partition of the topic (of every compacted topic when omitted) is indexed
   * up to the upstream's last stable offset as of this call, or the deadline passes: an
   * on-demand clean then covers what was produced before it was asked for.
   */
  async catchUp(topic: string | undefined, deadlineMs: number): Promise<void> {
    await this.catchUps.all(topic, deadlineMs);
  }

  /**
   * Waits until the partition's index has read everything the upstream held as stable when asked
   * (its last stable offset then): true when it has within the deadline. What the index publishes
   * on the way (a pass read whole, a moved log start) is sent to the main thread before the
   * answer, so a caller there sees the snapshot it waited for.
   */
  async caughtUp(topic: string, partition: number, deadlineMs: number): Promise<boolean> {
    return this.catchUps.partition(topic, partition, deadlineMs);
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.failures.open();
    this.metadata.start();
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
    this.metadata.wakeUp();
  }

  /** Throws the topic's indexes away and indexes it again from the upstream's log start. */
  rebuild(topic: string): void {
    this.dropTopic(topic, 'rebuild requested');
    this.metadata.wakeUp();
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
    this.tails.wanted = wanted;
  }

  /** The partition became wanted: index it now rather than at the next metadata round. */
  want(topic: string, partition: number): void {
    const tail = this.tails.get(topic, partition);
    if (!tail) {
      this.metadata.wakeUp();
      return;
    }
    if (!this.registry.get(topic, partition)) this.open(tail);
    if (tail.leader >= 0) this.fetches.ensure(tail.leader);
  }

  /**
   * The partition's index is to follow the store within a round trip (the table API reads it):
   * its fetches answer at the first byte rather than waiting for a batch of them.
   */
  eager(topic: string, partition: number): void {
    const tail = this.tails.get(topic, partition);
    if (tail) tail.eager = true;
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
    const metadataDone = this.metadata.close();
    this.fetches.wakeAll();
    this.failures.close();
    await metadataDone;
    await this.fetches.close();
  }

  private dropTopic(topic: string, why: string): void {
    const dropped = this.tails.dropTopic(topic);
    for (const tail of dropped) this.progress.forget(topic, tail.partition);
    if (dropped.length > 0) this.partitionsChanged();
    if (this.registry.topics().has(topic)) {
      this.log.info('dropping topic index', { topic, reason: why });
      this.registry.dropTopic(topic);
    }
  }

  /** Opens (or creates) the tail's index and gives it the topic's id; a new one first finds the store's last whole pass. */
  private open(tail: Tail): void {
    try {
      const fresh = !this.registry.get(tail.topic, tail.partition);
      // The store is read from its catch-up lane next (to find a pass, or to catch up): connected
      // while the index file is opened or made, not after.
      if (fresh && tail.leader >= 0 && this.running) void this.cluster.broker(tail.leader, 'catch-up').catch(() => undefined);
      const store = this.tails.storeOf(tail);
      if (store.checkpoint.topicId === '' && tail.topicId !== '') store.setTopicId(tail.topicId);
      if (fresh && store.carry.pass < 0 && tail.leader >= 0 && this.running) void this.location.locate(tail, store);
    } catch (err) {
      // The fetch loop opens it again; this partition's index must not stop the others.
      this.failures.storeFailed(tail, err);
    }
  }

  /**
   * A connection to the partition's leader, as the metadata loop last found it, on the admin
   * lane: a broker answers a connection's requests one at a time, and a carry pass's large reads
   * and writes would hold up the short requests on the main lane (metadata, ListOffsets).
   */
  async leader(topic: string, partition: number): Promise<UpstreamClient> {
    const tail = this.tails.get(topic, partition);
    if (!tail || tail.leader < 0) throw new Error(`no known leader of ${topic}-${partition}`);
    return this.cluster.broker(tail.leader, 'admin');
  }

  /**
   * Something waits for the partition's index to read the store up to `end`: a carry pass's end
   * marker this replica wrote, or a fetch the view holds (catch-up.ts). The catch-up loop reads
   * it at once, rather than when a long poll answers.
   */
  readUpTo(topic: string, partition: number, end: number): void {
    const tail = this.tails.get(topic, partition);
    if (!tail || tail.leader < 0) return;
    tail.awaitedEnd = Math.max(tail.awaitedEnd ?? 0, end);
    this.fetches.wake(tail.leader);
  }

  /**
   * Asks the partition's leader to move its log start to `offset` (compact,delete retention).
   * Resolves false when the upstream cannot (no DeleteRecords, not allowed, no leader known).
   */
  async deleteRecords(topic: string, partition: number, offset: number): Promise<boolean> {
    const tail = this.tails.get(topic, partition);
    try {
      if (!tail || tail.leader < 0) throw new Error('no known leader');
      // The admin lane, as the carrier's own DeleteRecords (range-release.ts).
      await deleteRecordsBefore(await this.cluster.broker(tail.leader, 'admin'), topic, partition, offset);
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
