/**
 * The carry pass (docs/carrying.md): after a clean, copies of every row below the cleaned end
 * are appended to the same partition, between a start and an end marker, acknowledged by every
 * in-sync replica before the next batch goes; once the index has read the end marker back, the
 * store is asked to let everything below the cleaned end go (DeleteRecords). The store then
 * holds the survivors (in the copies) and the dirty tail, not the history.
 *
 * A pass stopped halfway (a crash, the leader moving, the store refusing a batch) leaves copies
 * that change nothing: they are keyed by their originals' offsets, replicas serve the last whole
 * pass, and nothing is let go before a pass ends. The next pass starts over.
 *
 * Where replicas elect carriers (election/carrier-group.ts), a pass runs only on the partition's
 * carrier, which asks the group's coordinator whether it still is one before each step others
 * would see (the start marker, the end marker, letting the range go) and looks at its own view
 * of the assignment before each batch: a carrier that lost the partition (a rebalance, a pause
 * past its session timeout) stops there, so that two carriers' passes overlap by a batch at most,
 * and never both let a range go.
 *
 * Every request of a pass goes out through the replica's pacing (carry-pacing.ts): the
 * carryBytesPerSecond budget its passes share, and the wait a broker's throttle_time_ms asks for.
 *
 * The Carrier decides when a pass is due, fences it and keeps its stats; the pass's steps are
 * carry-pass.ts, and letting the range go (with what share groups keep) is range-release.ts.
 */
import type { CarrierStats, CarryOutcome, ShareGroupStart } from '../api/engine-reports.js';
import { SYSTEM_CLOCK, type Clock } from '../../common/clock.js';
import type { Logger } from '../../common/log.js';
import type { UpstreamClient } from '../../upstream/client.js';
import type { PartitionStore } from '../store/partition-store.js';
import type { TopicPolicy } from '../api/topic-policy.js';
import { copiesAged } from './carry-age.js';
import type { StoreRegistry } from '../store/store-registry.js';
import { CarryPacing } from './carry-pacing.js';
import { CarryPass, Fenced } from './carry-pass.js';
import { RangeRelease } from './range-release.js';

/** Which partitions this replica carries: the carrier group's assignment. */
export interface CarryMandate {
  /** This replica's own view of the assignment now. */
  holds(topic: string, partition: number): boolean;
  /** Whether the coordinator still counts this replica's assignment as the group's (a round trip). */
  confirm(): Promise<boolean>;
}

export interface CarrierDeps {
  registry: StoreRegistry;
  /** The carrier group's assignment; without one, this replica carries every partition it cleans. */
  mandate?: CarryMandate;
  /** A connection to the partition's leader. */
  leader: (topic: string, partition: number) => Promise<UpstreamClient>;
  /** Tells the index the store holds the partition up to `end` (a pass's end marker was written): it reads it now, without waiting out a long poll. */
  wrote?: (topic: string, partition: number, end: number) => void;
  log: Logger;
  /** The time of carrying and of copies' age, and the read-back's waits (the system clock by default). */
  clock?: Clock;
  /** How long a pass waits for the index to read its end marker back (default 60 s). */
  readBackMs?: number;
  /**
   * The share groups reading the partition and where they stand (share-group-starts.ts);
   * undefined from it: the store has no share groups. Without it nothing holds a range.
   */
  shareGroupStarts?: (topic: string, partition: number) => Promise<ShareGroupStart[] | undefined>;
  /** What the replica's passes may ask of the store; without it, only the store's throttle_time_ms bounds them. */
  pacing?: CarryPacing;
}

const FETCH_BYTES = 4 * 1024 * 1024;
const READ_BACK_MS = 60_000;

export class Carrier {
  readonly stats: CarrierStats = {
    passesTotal: 0,
    copiesTotal: 0,
    bytesWrittenTotal: 0,
    failuresTotal: 0,
    fencedTotal: 0,
    bytesReadTotal: 0,
    heldPartitions: 0,
  };
  private readonly clock: Clock;
  private readonly pacing: CarryPacing;
  private readonly ranges: RangeRelease;

  constructor(private readonly deps: CarrierDeps) {
    this.clock = deps.clock ?? SYSTEM_CLOCK;
    this.pacing = deps.pacing ?? new CarryPacing({ bytesPerSecond: 0 });
    this.stats.pacing = this.pacing.stats;
    this.ranges = new RangeRelease({
      registry: deps.registry,
      log: deps.log,
      clock: this.clock,
      ...(deps.shareGroupStarts && { shareGroupStarts: deps.shareGroupStarts }),
      heldChanged: (partitions) => {
        this.stats.heldPartitions = partitions;
      },
    });
  }

  /**
   * Whether a pass is due: the cleaned part reaches past the store's log start, and past the last
   * pass's copies, so that letting it go frees them too (a pass that left them would hold the
   * survivors twice until the next one); or, on a store that caps retention, the last pass's
   * copies reached the carry age and must be written again before the store lets them go.
   */
  due(store: PartitionStore, policy: TopicPolicy): boolean {
    const { topic, partition } = store.id;
    if (this.deps.mandate && !this.deps.mandate.holds(topic, partition)) {
      // The partition's new carrier asks about its share groups itself.
      this.ranges.forget(topic, partition);
      return false;
    }
    // A pass stamps the topic's start and must hold every survivor below its release end: an
    // index that has not read the last pass in the store knows neither (the survivors below the
    // store's log start are in that pass's copies), so it reads on first.
    if (!store.knowsTopicStart()) return false;
    // The same holds for a pass whose start it read and whose end it has not (a new carrier
    // reading the last one's pass): it holds only the survivors read so far, and a pass now would
    // release the rest. A pass stopped halfway never ends: once the index has read all the store
    // held, the pass is one of those.
    if (store.carry.openPass >= 0 && store.behindStore) return false;
    // A range kept for a share group is asked about again every round, written to or not.
    if (this.ranges.isHeld(topic, partition)) return true;
    const { firstDirty, logStartOffset } = store.checkpoint;
    // Aged copies lie past the store's log start (it let go what the last pass released), so age alone decides.
    if (copiesAged(store, policy.carryAfterMs, this.clock.now())) return true;
    // Without a release a pass only adds copies; on a store that caps retention its copies still
    // keep every key while the store's retention lets the originals go, and age alone carries.
    if (this.ranges.cannotRelease(topic, partition)) return false;
    return firstDirty > logStartOffset && firstDirty > store.carry.passEnd;
  }

  /** Runs one pass over the partition; undefined when none was due. Throws when the pass could not complete. */
  async carry(store: PartitionStore, policy: TopicPolicy): Promise<CarryOutcome | undefined> {
    if (!this.due(store, policy)) return undefined;
    const started = performance.now();
    const { topic, partition } = store.id;
    const releaseEnd = store.checkpoint.firstDirty;
    let steps: CarryPass | undefined;
    try {
      await this.stillCarrier(store, true);
      // A request that waited for the budget or a throttle goes only if the partition is still this replica's.
      const client = this.pacing.over(await this.deps.leader(topic, partition), () => this.stillCarrier(store, false));
      // A range kept for a share group is let go once the groups have finished it, before any new
      // pass: a new pass would copy every survivor again while the old copies stay.
      if (this.ranges.isHeld(topic, partition) && !copiesAged(store, policy.carryAfterMs, this.clock.now())) {
        await this.ranges.release(client, store, store.carry.passRelease);
        if (this.ranges.isHeld(topic, partition)) return undefined;
        if (!this.due(store, policy)) return undefined;
      }
      steps = new CarryPass(
        {
          client,
          store,
          registry: this.deps.registry,
          clock: this.clock,
          fence: (ask) => this.stillCarrier(store, ask),
          readBytes: this.pacing.readBytes(FETCH_BYTES),
          runBytes: this.pacing.runBytes(),
          readBackMs: this.deps.readBackMs ?? READ_BACK_MS,
          wrote: (end) => this.deps.wrote?.(topic, partition, end),
        },
        releaseEnd,
      );
      const pass = await steps.begin();
      await steps.copy();
      await this.stillCarrier(store, true);
      await steps.end();
      const copied = performance.now();
      await steps.readBack();
      const readBack = performance.now();
      await this.stillCarrier(store, true);
      const released = await this.ranges.release(client, store, releaseEnd);
      const kept = released ? undefined : this.ranges.heldFor(topic, partition);
      this.stats.bytesReadTotal += steps.bytesRead;
      this.stats.passesTotal++;
      this.stats.copiesTotal += steps.copies;
      this.stats.bytesWrittenTotal += steps.bytesWritten;
      const outcome = {
        topic,
        partition,
        pass,
        copies: steps.copies,
        bytesWritten: steps.bytesWritten,
        bytesRead: steps.bytesRead,
        releaseEnd,
        released,
        ...(kept?.group && { keptFor: kept }),
        durationMs: performance.now() - started,
        copyMs: copied - started,
        readBackMs: readBack - copied,
      };
      this.deps.log.debug('carried partition', { ...outcome });
      return outcome;
    } catch (err) {
      this.stats.bytesReadTotal += steps?.bytesRead ?? 0;
      if (err instanceof Fenced) {
        this.stats.fencedTotal++;
        this.deps.log.info('this replica no longer carries the partition; its pass stops here (the new carrier runs its own)', {
          topic,
          partition,
          releaseEnd,
        });
        return undefined;
      }
      this.stats.failuresTotal++;
      throw err;
    }
  }

  /** Stops the pass (Fenced) when this replica is no longer the partition's carrier; `ask`: ask the coordinator too. */
  private async stillCarrier(store: PartitionStore, ask: boolean): Promise<void> {
    const mandate = this.deps.mandate;
    if (!mandate) return;
    const { topic, partition } = store.id;
    if (!mandate.holds(topic, partition)) throw new Fenced('not the carrier');
    if (!ask) return;
    // The coordinator may answer after a rebalance took the partition away meanwhile: look again.
    if (!(await mandate.confirm()) || !mandate.holds(topic, partition)) throw new Fenced('not the carrier');
  }
}
