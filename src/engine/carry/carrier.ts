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
 */
import type { CarrierStats, CarryOutcome, ShareGroupStart } from '../api/engine-reports.js';
import type { Logger } from '../../common/log.js';
import type { UpstreamClient } from '../../upstream/client.js';
import { UpstreamError } from '../../upstream/error-class.js';
import { ErrorCode, ProtocolError } from '../../protocol/errors.js';
import type { PartitionStore } from '../store/partition-store.js';
import type { TopicPolicy } from '../api/topic-policy.js';
import { copiesAged } from './carry-age.js';
import type { StoreRegistry } from '../store/store-registry.js';
import { deleteRecordsBefore, fetchRecords, produceBatch, type PartitionRequests } from '../indexer/partition-requests.js';
import { CarryPacing } from './carry-pacing.js';
import { CopyRun, markerBatch } from '../../protocol/carry/carried-batch.js';
import { encodePassEnd, encodePassStart, encodeRelease } from '../../protocol/carry/carry-record.js';
import { PhysicalReader } from './physical-reader.js';
import { leastOf } from './share-group-starts.js';
import { CarryError, SourceGroup } from './source-group.js';
import { partitionKey } from '../api/partition-key.js';

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
  log: Logger;
  clock?: () => number;
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

/** A pass this replica is no longer the carrier for: stopped, and not a failure. */
class Fenced extends Error {
  override readonly name = 'Fenced';
}

const ROWS_PER_QUERY = 10_000;
const FETCH_BYTES = 4 * 1024 * 1024;
const READ_BACK_POLL_MS = 20;

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
  private readonly now: () => number;
  private readonly pacing: CarryPacing;
  /** Partitions whose store refused DeleteRecords (said once). */
  private readonly unreleased = new Set<string>();
  /**
   * Partitions whose store cannot delete records at all (does not offer DeleteRecords, or refuses
   * it for good: an ACL, a policy). A pass there frees nothing: it only adds its copies.
   */
  private readonly cannotRelease = new Set<string>();
  /** Partitions whose last pass kept (part of) its range for a share group, and where that group stood. */
  private readonly held = new Map<string, ShareGroupStart>();

  constructor(private readonly deps: CarrierDeps) {
    this.now = deps.clock ?? Date.now;
    this.pacing = deps.pacing ?? new CarryPacing({ bytesPerSecond: 0 });
    this.stats.pacing = this.pacing.stats;
  }

  /**
   * Whether a pass is due: the cleaned part reaches past the store's log start, and past the last
   * pass's copies, so that letting it go frees them too (a pass that left them would hold the
   * survivors twice until the next one); or, on a store that caps retention, the last pass's
   * copies reached the carry age and must be written again before the store lets them go.
   */
  due(store: PartitionStore, policy: TopicPolicy): boolean {
    if (this.deps.mandate && !this.deps.mandate.holds(store.id.topic, store.id.partition)) {
      // The partition's new carrier asks about its share groups itself.
      this.setHeld(partitionKey(store.id.topic, store.id.partition), undefined);
      return false;
    }
    // A pass stamps the topic's start and must hold every survivor below its release end: an
    // index that has not read the last pass in the store knows neither (the survivors below the
    // store's log start are in that pass's copies), so it reads on first.
    if (!store.knowsTopicStart()) return false;
    // A range kept for a share group is asked about again every round, written to or not.
    if (this.held.has(partitionKey(store.id.topic, store.id.partition))) return true;
    const { firstDirty, logStartOffset } = store.checkpoint;
    // Aged copies lie past the store's log start (it let go what the last pass released), so age alone decides.
    if (copiesAged(store, policy.carryAfterMs, this.now())) return true;
    // Without a release a pass only adds copies; on a store that caps retention its copies still
    // keep every key while the store's retention lets the originals go, and age alone carries.
    if (this.cannotRelease.has(partitionKey(store.id.topic, store.id.partition))) return false;
    return firstDirty > logStartOffset && firstDirty > store.carry.passEnd;
  }

  /** Runs one pass over the partition; undefined when none was due. Throws when the pass could not complete. */
  async carry(store: PartitionStore, policy: TopicPolicy): Promise<CarryOutcome | undefined> {
    if (!this.due(store, policy)) return undefined;
    const started = performance.now();
    const { topic, partition } = store.id;
    const releaseEnd = store.checkpoint.firstDirty;
    let reader: PhysicalReader | undefined;
    try {
      await this.stillCarrier(store, true);
      // A request that waited for the budget or a throttle goes only if the partition is still this replica's.
      const client = this.pacing.over(await this.deps.leader(topic, partition), () => this.stillCarrier(store, false));
      // A range kept for a share group is let go once the groups have finished it, before any new
      // pass: a new pass would copy every survivor again while the old copies stay.
      if (this.held.has(partitionKey(topic, partition)) && !copiesAged(store, policy.carryAfterMs, this.now())) {
        await this.release(client, store, store.carry.passRelease);
        if (this.held.has(partitionKey(topic, partition))) return undefined;
        if (!this.due(store, policy)) return undefined;
      }
      const now = this.now();
      const pass = await produceBatch(client, topic, partition, await markerBatch(encodePassStart({ releaseEnd, topicStart: store.topicStart }), now));
      const target = { topic, topicId: store.checkpoint.topicId, partition };
      const readBytes = this.pacing.readBytes(FETCH_BYTES);
      reader = new PhysicalReader((offset) => fetchRecords(client, target, offset, readBytes));
      const run = new CopyRun();
      const runBytes = this.pacing.runBytes();
      const group = new SourceGroup(releaseEnd);
      let count = 0;
      let bytesWritten = 0;
      const flush = async () => {
        const batch = await run.flush(pass, now);
        if (!batch) return;
        await this.stillCarrier(store, false);
        try {
          await produceBatch(client, topic, partition, batch);
        } catch (err) {
          if (err instanceof UpstreamError && err.errorCode === ErrorCode.MESSAGE_TOO_LARGE) {
            throw new CarryError(
              `the store refused a carry batch of ${batch.length} bytes as too large: raise max.message.bytes of ${topic} on the store to at least ${batch.length + 1024}`,
            );
          }
          throw err;
        }
        bytesWritten += batch.length;
      };
      const emit = async () => {
        const copy = await group.copy();
        if (!copy) return;
        if (run.count > 0 && run.bytes + copy.length > runBytes) await flush();
        run.add(copy, group.base);
        for (let i = 0; i < group.horizons.length; i += 2) run.addHorizon(group.horizons[i]!, group.horizons[i + 1]!);
        count += group.offsets.length;
      };
      for (let from = 0; ;) {
        this.current(store);
        const rows = store.carriedRows(from, releaseEnd, ROWS_PER_QUERY);
        if (rows.length === 0) break;
        for (const [offset, phys, horizon] of rows) {
          if (!group.holds(offset, phys)) {
            await emit();
            const at = phys ?? offset;
            const source = await reader.batchAt(at, offset);
            if (!source) throw new CarryError(`the record of offset ${offset} is not in the store at ${at}`);
            group.start(source, phys);
          }
          group.add(offset, horizon);
        }
        from = rows[rows.length - 1]![0] + 1;
      }
      await emit();
      await flush();
      await this.stillCarrier(store, true);
      await produceBatch(client, topic, partition, await markerBatch(encodePassEnd({ pass, copies: count, releaseEnd }), this.now()));
      const copied = performance.now();
      await this.readBack(store, pass);
      const readBack = performance.now();
      await this.stillCarrier(store, true);
      const released = await this.release(client, store, releaseEnd);
      const kept = released ? undefined : this.held.get(partitionKey(topic, partition));
      this.stats.bytesReadTotal += reader.bytesRead;
      this.stats.passesTotal++;
      this.stats.copiesTotal += count;
      this.stats.bytesWrittenTotal += bytesWritten;
      const outcome = {
        topic,
        partition,
        pass,
        copies: count,
        bytesWritten,
        bytesRead: reader.bytesRead,
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
      this.stats.bytesReadTotal += reader?.bytesRead ?? 0;
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

  /** The pass works on the registry's index of the partition: one replaced meanwhile (a reset, a rebuild) ends it. */
  private current(store: PartitionStore): void {
    if (this.deps.registry.get(store.id.topic, store.id.partition) !== store || !store.isOpen) {
      throw new CarryError('the partition index was replaced during the pass');
    }
  }

  /** Waits until the index has read the pass's end marker back: before that, replicas would serve copies it has not seen. */
  private async readBack(store: PartitionStore, pass: number): Promise<void> {
    const deadline = this.now() + (this.deps.readBackMs ?? 60_000);
    while (store.carry.pass < pass) {
      this.current(store);
      // No longer the carrier (a rebalance, or this replica stopping: it leaves the group first
      // and its index reads nothing more): nothing to wait for.
      await this.stillCarrier(store, false);
      if (this.now() >= deadline) throw new CarryError(`the index did not read the pass ending back within ${this.deps.readBackMs ?? 60_000} ms`);
      await new Promise((resolve) => setTimeout(resolve, READ_BACK_POLL_MS));
    }
  }

  /**
   * Lets the store let go of the range below `releaseEnd`, or of as much of it as every share
   * group reading the partition has finished; whether it let go of the whole range.
   */
  private async release(client: PartitionRequests, store: PartitionStore, releaseEnd: number): Promise<boolean> {
    const { topic, partition } = store.id;
    const key = partitionKey(topic, partition);
    const { end, groups } = await this.heldEnd(store, releaseEnd);
    if (end <= store.checkpoint.logStartOffset) return false;
    // Recorded first, so no range goes unrecorded: share groups read copies only below the store's log start as the store says it (share-copies.ts).
    if (groups)
      await produceBatch(client, topic, partition, await markerBatch(encodeRelease({ pass: store.carry.pass, releasedEnd: end, groups }), this.now()));
    try {
      await deleteRecordsBefore(client, topic, partition, end);
    } catch (err) {
      if (err instanceof Fenced) throw err;
      if (cannotDeleteRecords(err)) {
        if (!this.cannotRelease.has(key)) {
          this.cannotRelease.add(key);
          this.deps.log.warn(
            "the store cannot delete records (DeleteRecords not offered or refused for good): passes of this partition run only where the store's retention lets records go, and it keeps every record until then",
            { topic, partition, releaseEnd, err },
          );
        }
        return false;
      }
      if (!this.unreleased.has(key)) {
        this.unreleased.add(key);
        this.deps.log.warn('the store did not delete the carried range; the next pass asks again', { topic, partition, releaseEnd, err });
      }
      return false;
    }
    // The index follows the store's new log start now, not at the indexer's next fetch (up to
    // its max wait from now): what it holds below it, and the carry margin, change with it.
    if (this.deps.registry.get(topic, partition) === store && store.isOpen) {
      store.dropBelow(end);
      this.deps.registry.publish(store);
    }
    return end === releaseEnd;
  }

  /** Notes (or, undefined, forgets) where a range is kept for the partition's share groups. */
  private setHeld(key: string, start: ShareGroupStart | undefined): boolean {
    const had = start === undefined ? this.held.delete(key) : (this.held.set(key, start), true);
    this.stats.heldPartitions = this.held.size;
    return had;
  }

  /**
   * How far the share groups of the partition let the range go (`releaseEnd`, or the least
   * group's start offset below it), and the groups reading it (undefined: the store has none).
   */
  private async heldEnd(store: PartitionStore, releaseEnd: number): Promise<{ end: number; groups?: string[] }> {
    const { topic, partition } = store.id;
    const key = partitionKey(topic, partition);
    if (!this.deps.shareGroupStarts) return { end: releaseEnd };
    let starts: ShareGroupStart[] | undefined;
    try {
      starts = await this.deps.shareGroupStarts(topic, partition);
    } catch (err) {
      if (this.held.get(key)?.group !== '') {
        this.deps.log.warn('cannot learn where the share groups of the partition stand; its range is kept until they can be asked', {
          topic,
          partition,
          releaseEnd,
          err,
        });
      }
      this.setHeld(key, { group: '', offset: store.checkpoint.logStartOffset });
      return { end: store.checkpoint.logStartOffset };
    }
    const groups = starts?.map((s) => s.group);
    const least = leastOf(starts);
    if (least === undefined || least.offset >= releaseEnd) {
      if (this.setHeld(key, undefined))
        this.deps.log.info('the share groups have finished the kept range; the store lets it go', { topic, partition, releaseEnd });
      return { end: releaseEnd, ...(groups && { groups }) };
    }
    const before = this.held.get(key);
    if (before?.group !== least.group || before.offset !== least.offset) {
      this.deps.log.info('a share group has not finished the range a pass would let go; the store keeps it from there', {
        topic,
        partition,
        releaseEnd,
        shareGroup: least.group,
        startOffset: least.offset,
      });
    }
    this.setHeld(key, least);
    return { end: least.offset, ...(groups && { groups }) };
  }
}

/** Answers that will not change on asking again: the API is not offered, or denied. */
const FOR_GOOD: ReadonlySet<number> = new Set([ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.UNSUPPORTED_VERSION, ErrorCode.POLICY_VIOLATION]);

function cannotDeleteRecords(err: unknown): boolean {
  return err instanceof ProtocolError || (err instanceof UpstreamError && FOR_GOOD.has(err.errorCode));
}
