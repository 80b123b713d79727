/**
 * The indexer's metadata loop: every interval (and whenever a fetch loop or a new policy asks)
 * it asks the upstream's Metadata for the compacted topics, to find partitions (new topics,
 * CreatePartitions), follow leader changes, notice deleted or re-created topics, and let the
 * indexes of partitions no longer wanted go.
 */
import { Wakeup, type Clock } from '../../common/clock.js';
import type { Logger } from '../../common/log.js';
import { ErrorCode } from '../../protocol/errors.js';
import { ZERO_UUID } from '../../protocol/wire/uuid.js';
import type { UpstreamClusterClient } from '../../upstream/upstream-cluster-client.js';
import type { TopicPolicy } from '../api/topic-policy.js';
import { rollPolicy } from '../store/segment-roller.js';
import type { StoreRegistry } from '../store/store-registry.js';
import type { CatchUpProgress } from './catch-up-progress.js';
import type { FailurePolicy } from './failure-policy.js';
import { newTail, type Tail, type Tails } from './tails.js';

export interface MetadataLoopDeps {
  cluster: Pick<UpstreamClusterClient, 'metadata'>;
  registry: StoreRegistry;
  tails: Tails;
  progress: CatchUpProgress;
  failures: FailurePolicy;
  log: Logger;
  clock: Clock;
  intervalMs: number;
  running: () => boolean;
  policies: () => ReadonlyMap<string, TopicPolicy>;
  /** Opens the wanted tail's index (a new one first looks for the store's last pass). */
  open: (tail: Tail) => void;
  /** The broker leads a wanted partition: it needs a fetch loop. */
  leads: (nodeId: number) => void;
  dropTopic: (topic: string, why: string) => void;
  /** A metadata answer changed the partitions the tails hold. */
  partitionsChanged: () => void;
}

export class MetadataLoop {
  private readonly wake: Wakeup;
  private loop: Promise<void> | undefined;
  /** Topics the last metadata answers called unknown, and how many answers in a row. */
  private readonly missing = new Map<string, number>();

  constructor(private readonly deps: MetadataLoopDeps) {
    this.wake = new Wakeup(deps.clock);
  }

  start(): void {
    this.loop = this.run();
  }

  /** Asks Metadata now rather than at the end of the interval. */
  wakeUp(): void {
    this.wake.wakeUp();
  }

  /** Ends the loop (the indexer stopped running). */
  async close(): Promise<void> {
    this.wake.wakeUp();
    await this.loop;
  }

  private async run(): Promise<void> {
    const { log, failures } = this.deps;
    let fails = 0;
    while (this.deps.running()) {
      let wait = this.deps.intervalMs;
      if (this.deps.policies().size > 0) {
        try {
          await this.refresh();
          if (fails > 0) log.info('upstream metadata reachable again', { after: fails });
          fails = 0;
        } catch (err) {
          if (!this.deps.running()) return;
          fails++;
          wait = failures.metadataBackoff(fails);
          log.warn('upstream metadata failed', { err, attempt: fails, retryInMs: wait });
        }
      }
      await this.wake.sleep(wait);
    }
  }

  /** One round: asks Metadata for the compacted topics and follows what it says. */
  async refresh(): Promise<void> {
    const { tails } = this.deps;
    const answer = await this.deps.cluster.metadata([...this.deps.policies().keys()]);
    // As they are now: setPolicies may have changed them while Metadata answered.
    const policies = this.deps.policies();
    const before = tails.size;
    for (const t of answer.topics) {
      const policy = t.name === null ? undefined : policies.get(t.name);
      if (!policy || t.name === null) continue;
      const topicId = t.topicId ?? ZERO_UUID;
      if (t.errorCode === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) {
        // Twice in a row: a broker whose metadata lags behind a creation must not cost an index.
        const strikes = (this.missing.get(t.name) ?? 0) + 1;
        this.missing.set(t.name, strikes);
        if (strikes >= 2) this.deps.dropTopic(t.name, 'topic does not exist upstream');
        continue;
      }
      this.missing.delete(t.name);
      if (t.errorCode !== ErrorCode.NONE) {
        this.deps.log.debug('topic metadata error', { topic: t.name, errorCode: t.errorCode });
        continue;
      }
      this.adoptTopicId(t.name, topicId);
      for (const p of t.partitions) {
        let tail = tails.get(t.name, p.partitionIndex);
        if (!tail) {
          tail = newTail(t.name, p.partitionIndex, rollPolicy(policy));
          tails.add(tail);
        }
        if (topicId !== ZERO_UUID) tail.topicId = topicId;
        tail.leader = p.errorCode === ErrorCode.NONE ? p.leaderId : -1;
        if (!tails.isWanted(tail)) continue;
        this.deps.open(tail);
        if (tail.leader >= 0) this.deps.leads(tail.leader);
      }
    }
    if (tails.size !== before) this.deps.partitionsChanged();
    this.letGoUnwanted();
  }

  /** Lets the indexes of partitions no longer wanted go: no client here used them for a while, and this replica does not carry them. */
  private letGoUnwanted(): void {
    const { registry, tails, log } = this.deps;
    for (const store of [...registry.all()]) {
      const { topic, partition } = store.id;
      const tail = tails.get(topic, partition);
      if (!tail || tails.isWanted(tail) || tail.busy) continue;
      log.info('letting a partition index go: no client of this replica used it within the idle time, and it does not carry it', { topic, partition });
      this.deps.progress.forget(topic, partition);
      try {
        registry.dropPartition(topic, partition);
      } catch (err) {
        log.warn('letting a partition index go failed; it is tried again at the next metadata round', { topic, partition, err });
      }
    }
  }

  /** A topic whose id changed was deleted and re-created: its index starts over. */
  private adoptTopicId(topic: string, topicId: string): void {
    if (topicId === ZERO_UUID) return;
    for (const store of this.deps.registry.all()) {
      if (store.id.topic !== topic) continue;
      if (store.checkpoint.topicId !== '' && store.checkpoint.topicId !== topicId) {
        this.deps.dropTopic(topic, `topic re-created (id ${store.checkpoint.topicId} → ${topicId})`);
        return;
      }
    }
  }
}
