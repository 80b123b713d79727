/**
 * Waiting for the index to catch up with the upstream: an on-demand clean covers what was
 * produced before it was asked for, and a fetch the view holds for a partition's index answers
 * once that index has read what the store held. The target is each partition's last stable
 * offset as its leader gives it when asked; the index is told to read up to it now, so that a
 * long poll does not stand between the index and it.
 */
import type { Clock } from '../../common/clock.js';
import type { Logger } from '../../common/log.js';
import { ErrorCode } from '../../protocol/errors.js';
import type { UpstreamClusterClient } from '../../upstream/upstream-cluster-client.js';
import type { StoreRegistry } from '../store/store-registry.js';
import { lastStableOffsets } from './partition-requests.js';
import type { Tail, Tails } from './tails.js';

/** How often a wait looks at the index again. */
const POLL_MS = 20;

export interface CatchUpDeps {
  cluster: Pick<UpstreamClusterClient, 'broker'>;
  registry: StoreRegistry;
  tails: Tails;
  log: Logger;
  clock: Clock;
  /** One metadata round now: partitions created since the last one count too. */
  refreshMetadata: () => Promise<void>;
  /** Has the partition's index read up to `end` now, not when a long poll answers (Indexer.readUpTo). */
  readUpTo: (topic: string, partition: number, end: number) => void;
}

export class CatchUp {
  constructor(private readonly deps: CatchUpDeps) {}

  /** Waits until every partition of the topic (of every compacted topic when omitted) reached its last stable offset as of this call, or the deadline passed. */
  async all(topic: string | undefined, deadlineMs: number): Promise<void> {
    await this.reach((tail) => topic === undefined || tail.topic === topic, this.deps.clock.now() + deadlineMs, 'catch-up');
  }

  /** Waits until the partition's index reached its last stable offset as of this call: true when it has within the deadline. */
  async partition(topic: string, partition: number, deadlineMs: number): Promise<boolean> {
    const reached = await this.reach((tail) => tail.topic === topic && tail.partition === partition, this.deps.clock.now() + deadlineMs, 'partition catch-up');
    return reached.length > 0 && reached.every(Boolean);
  }

  /** Waits for the index of every tail `which` selects to reach the upstream's last stable offset; whether each did. */
  private async reach(which: (tail: Tail) => boolean, deadline: number, what: string): Promise<boolean[]> {
    const { tails, registry, log, clock } = this.deps;
    // Partitions created since the last metadata round (a topic auto-created by its first produce) count too.
    await this.deps.refreshMetadata().catch((err) => log.debug(`${what}: metadata refresh failed`, { err }));
    const byLeader = new Map<number, Tail[]>();
    for (const tail of tails.values()) {
      if (which(tail) && tails.isWanted(tail)) byLeader.set(tail.leader, [...(byLeader.get(tail.leader) ?? []), tail]);
    }
    const answers = await Promise.all(
      [...byLeader].map(([leader, list]) =>
        this.deps.cluster
          .broker(leader)
          .then((client) => lastStableOffsets(client, list))
          .catch((err: unknown) => {
            log.debug(`${what}: no last stable offsets from the leader`, { leader, partitions: list.length, err });
            return [];
          }),
      ),
    );
    const targets = answers.flat().filter((a) => {
      if (a.errorCode !== ErrorCode.NONE) log.debug(`${what}: no last stable offset`, { topic: a.topic, partition: a.partition, errorCode: a.errorCode });
      return a.errorCode === ErrorCode.NONE;
    });
    const reached: boolean[] = [];
    for (const t of targets) {
      for (;;) {
        const store = registry.get(t.topic, t.partition);
        if (store && store.checkpoint.nextOffset >= t.offset) {
          reached.push(true);
          break;
        }
        if (clock.now() >= deadline) {
          reached.push(false);
          break;
        }
        this.deps.readUpTo(t.topic, t.partition, t.offset);
        await clock.sleep(POLL_MS);
      }
    }
    return reached;
  }
}
