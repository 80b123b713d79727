/**
 * Before an index that has read no whole pass yet starts reading the store, finds the last
 * whole pass the store holds by reading it once, headers only (carry/pass-locator.ts), and serves
 * reads below the store's log start from it until the index has caught up: a replica's first
 * answers then wait for one read of the store, not for its index of the survivors. A store
 * that still starts at 0 holds every record as written, and is served as it is.
 */
import type { Logger } from '../../common/log.js';
import type { UpstreamClusterClient } from '../../upstream/upstream-cluster-client.js';
import { locateLastPass } from '../carry/pass-locator.js';
import type { PartitionStore } from '../store/partition-store.js';
import type { StoreRegistry } from '../store/store-registry.js';
import { fetchRecords, logBounds } from './partition-requests.js';
import type { Tail } from './tails.js';

export interface PassLocationDeps {
  cluster: Pick<UpstreamClusterClient, 'broker'>;
  registry: StoreRegistry;
  log: Logger;
  /** The bytes one read of the store asks for. */
  partitionMaxBytes: number;
  /** Where the bytes read to find passes are counted. */
  reads: { locateBytes: number };
  /** The tail may be fetched again: its leader's loop picks it up. */
  located: (tail: Tail) => void;
}

export class PassLocation {
  constructor(private readonly deps: PassLocationDeps) {}

  /** Finds the store's last whole pass for the tail's new index; the tail is not fetched meanwhile. */
  async locate(tail: Tail, store: PartitionStore): Promise<void> {
    const { cluster, registry, log } = this.deps;
    const { topic, partition } = tail;
    tail.locating = true;
    try {
      // Reads of the store without waiting, as the catch-up loop's: none of them holds up `main`.
      const client = await cluster.broker(tail.leader, 'catch-up');
      const [logStart, end] = await logBounds(client, topic, partition);
      if (logStart === 0) return;
      const target = { topic, topicId: store.checkpoint.topicId, partition };
      const started = performance.now();
      const found = await locateLastPass(
        async (offset) => ({ records: await fetchRecords(client, target, offset, this.deps.partitionMaxBytes), highWatermark: end }),
        logStart,
      );
      this.deps.reads.locateBytes += found.bytesRead;
      if (!found.carried || registry.get(topic, partition) !== store || !store.isOpen) return;
      registry.publishAsStored(store, found.carried, found.next);
      log.info('serving a partition as the store holds it until its index has read it', {
        topic,
        partition,
        pass: found.carried.copiesFrom,
        copiesBelow: found.carried.copiesBelow,
        until: found.next,
        bytesRead: found.bytesRead,
        ms: Math.round(performance.now() - started),
      });
    } catch (err) {
      log.debug('could not find the last carry pass in the store; reads below its log start wait for the index', { topic, partition, err });
    } finally {
      tail.locating = false;
      this.deps.located(tail);
    }
  }
}
