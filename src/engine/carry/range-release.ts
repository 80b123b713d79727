/**
 * The last step of a carry pass: the store is asked to let the range below the release end go
 * (DeleteRecords), or as much of it as every share group reading the partition has finished
 * (share-group-starts.ts), after a release record naming those groups; the index follows the
 * store's new log start at once. What it learned stays for the next passes of the partition:
 * where a range is kept for a share group (asked about again every round), and whether the store
 * can delete records at all (a pass that cannot free anything is not worth running).
 */
import type { Clock } from '../../common/clock.js';
import type { Logger } from '../../common/log.js';
import { markerBatch } from '../../protocol/carry/carried-batch.js';
import { encodeRelease } from '../../protocol/carry/carry-record.js';
import { ErrorCode, ProtocolError } from '../../protocol/errors.js';
import { UpstreamError } from '../../upstream/error-class.js';
import type { ShareGroupStart } from '../api/engine-reports.js';
import { partitionKey } from '../api/partition-key.js';
import { deleteRecordsBefore, produceBatch, type PartitionRequests } from '../indexer/partition-requests.js';
import type { PartitionStore } from '../store/partition-store.js';
import type { StoreRegistry } from '../store/store-registry.js';
import { Fenced } from './carry-pass.js';
import { leastOf } from './share-group-starts.js';

export interface RangeReleaseDeps {
  registry: StoreRegistry;
  log: Logger;
  clock: Clock;
  /**
   * The share groups reading the partition and where they stand (share-group-starts.ts);
   * undefined from it: the store has no share groups. Without it nothing holds a range.
   */
  shareGroupStarts?: (topic: string, partition: number) => Promise<ShareGroupStart[] | undefined>;
  /** Told how many partitions keep (part of) a range for a share group, whenever that changes. */
  heldChanged: (partitions: number) => void;
}

export class RangeRelease {
  /** Partitions whose store refused DeleteRecords (said once). */
  private readonly unreleased = new Set<string>();
  /**
   * Partitions whose store cannot delete records at all (does not offer DeleteRecords, or refuses
   * it for good: an ACL, a policy). A pass there frees nothing: it only adds its copies.
   */
  private readonly cannot = new Set<string>();
  /** Partitions whose last pass kept (part of) its range for a share group, and where that group stood. */
  private readonly held = new Map<string, ShareGroupStart>();

  constructor(private readonly deps: RangeReleaseDeps) {}

  /** Whether the partition's last pass kept (part of) its range for a share group. */
  isHeld(topic: string, partition: number): boolean {
    return this.held.has(partitionKey(topic, partition));
  }

  /** The share group, and where it stood, that the partition's last pass kept its range for. */
  heldFor(topic: string, partition: number): ShareGroupStart | undefined {
    return this.held.get(partitionKey(topic, partition));
  }

  /** Whether the store cannot delete the partition's records at all. */
  cannotRelease(topic: string, partition: number): boolean {
    return this.cannot.has(partitionKey(topic, partition));
  }

  /** Forgets the range kept for the partition's share groups (its new carrier asks about them itself). */
  forget(topic: string, partition: number): void {
    this.setHeld(partitionKey(topic, partition), undefined);
  }

  /**
   * Lets the store let go of the range below `releaseEnd`, or of as much of it as every share
   * group reading the partition has finished; whether it let go of the whole range.
   */
  async release(client: PartitionRequests, store: PartitionStore, releaseEnd: number): Promise<boolean> {
    const { registry, log, clock } = this.deps;
    const { topic, partition } = store.id;
    const key = partitionKey(topic, partition);
    const { end, groups } = await this.heldEnd(store, releaseEnd);
    if (end <= store.checkpoint.logStartOffset) return false;
    // Recorded first, so no range goes unrecorded: share groups read copies only below the store's log start as the store says it (share-copies.ts).
    if (groups)
      await produceBatch(client, topic, partition, await markerBatch(encodeRelease({ pass: store.carry.pass, releasedEnd: end, groups }), clock.now()));
    try {
      await deleteRecordsBefore(client, topic, partition, end);
    } catch (err) {
      if (err instanceof Fenced) throw err;
      if (cannotDeleteRecords(err)) {
        if (!this.cannot.has(key)) {
          this.cannot.add(key);
          log.warn(
            "the store cannot delete records (DeleteRecords not offered or refused for good): passes of this partition run only where the store's retention lets records go, and it keeps every record until then",
            { topic, partition, releaseEnd, err },
          );
        }
        return false;
      }
      if (!this.unreleased.has(key)) {
        this.unreleased.add(key);
        log.warn('the store did not delete the carried range; the next pass asks again', { topic, partition, releaseEnd, err });
      }
      return false;
    }
    // The index follows the store's new log start now, not at the indexer's next fetch (up to
    // its max wait from now): what it holds below it, and the carry margin, change with it.
    if (registry.get(topic, partition) === store && store.isOpen) {
      store.dropBelow(end);
      registry.publish(store);
    }
    return end === releaseEnd;
  }

  /** Notes (or, undefined, forgets) where a range is kept for the partition's share groups. */
  private setHeld(key: string, start: ShareGroupStart | undefined): boolean {
    const had = start === undefined ? this.held.delete(key) : (this.held.set(key, start), true);
    this.deps.heldChanged(this.held.size);
    return had;
  }

  /**
   * How far the share groups of the partition let the range go (`releaseEnd`, or the least
   * group's start offset below it), and the groups reading it (undefined: the store has none).
   */
  private async heldEnd(store: PartitionStore, releaseEnd: number): Promise<{ end: number; groups?: string[] }> {
    const { log, shareGroupStarts } = this.deps;
    const { topic, partition } = store.id;
    const key = partitionKey(topic, partition);
    if (!shareGroupStarts) return { end: releaseEnd };
    let starts: ShareGroupStart[] | undefined;
    try {
      starts = await shareGroupStarts(topic, partition);
    } catch (err) {
      if (this.held.get(key)?.group !== '') {
        log.warn('cannot learn where the share groups of the partition stand; its range is kept until they can be asked', {
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
      if (this.setHeld(key, undefined)) log.info('the share groups have finished the kept range; the store lets it go', { topic, partition, releaseEnd });
      return { end: releaseEnd, ...(groups && { groups }) };
    }
    const before = this.held.get(key);
    if (before?.group !== least.group || before.offset !== least.offset) {
      log.info('a share group has not finished the range a pass would let go; the store keeps it from there', {
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
