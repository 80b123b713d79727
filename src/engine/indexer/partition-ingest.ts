/**
 * What one partition's part of a Fetch answer does to its index: its records up to the last
 * stable offset become rows (fetched-rows.ts), a moved log start drops what went below it, an
 * answer out of range finds out whether the index is behind the log (moved log start) or ahead
 * of it (a re-created topic, a truncated log: started over), and an error answer pauses the
 * partition (failure-policy.ts).
 */
import type { Logger } from '../../common/log.js';
import { ErrorCode } from '../../protocol/errors.js';
import type { FetchResponsePartitionData } from '../../protocol/messages.js';
import type { UpstreamClusterClient } from '../../upstream/upstream-cluster-client.js';
import type { KeyIdentities } from '../key-identity/key-identities.js';
import { SchemaUnavailableError } from '../key-identity/schema-unavailable.js';
import type { PartitionStore, UpstreamPosition } from '../store/partition-store.js';
import type { RowBuffer } from '../store/row-buffer.js';
import type { StoreRegistry } from '../store/store-registry.js';
import type { CatchUpProgress } from './catch-up-progress.js';
import type { FailurePolicy } from './failure-policy.js';
import { collectRows } from './fetched-rows.js';
import { logBounds } from './partition-requests.js';
import type { Tail, Tails } from './tails.js';

export interface PartitionIngestDeps {
  cluster: Pick<UpstreamClusterClient, 'broker'>;
  registry: StoreRegistry;
  tails: Tails;
  identities: KeyIdentities;
  progress: CatchUpProgress;
  failures: FailurePolicy;
  log: Logger;
  /** Whether the indexer runs: a failure while it closes is not one to report. */
  running: () => boolean;
  /** A leader is stale: the metadata loop is to look for the new one now. */
  leaderMoved: () => void;
}

function samePosition(a: UpstreamPosition, b: UpstreamPosition): boolean {
  return (
    a.nextOffset === b.nextOffset && a.logStartOffset === b.logStartOffset && a.lastStableOffset === b.lastStableOffset && a.highWatermark === b.highWatermark
  );
}

export class PartitionIngest {
  constructor(private readonly deps: PartitionIngestDeps) {}

  /** Indexes the partition's answer from `nodeId`; `rows` is the fetch loop's buffer. */
  async ingest(tail: Tail, p: FetchResponsePartitionData, nodeId: number, rows: RowBuffer): Promise<void> {
    const { registry, tails, failures } = this.deps;
    if (p.errorCode === ErrorCode.OFFSET_OUT_OF_RANGE) {
      await this.outOfRange(tail, nodeId);
      return;
    }
    if (p.errorCode !== ErrorCode.NONE) {
      if (failures.partitionError(tail, p.errorCode)) {
        tail.leader = -1;
        this.deps.leaderMoved();
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
      if (logStart > store.checkpoint.logStartOffset && (store.dropBelow(logStart) || store.carry.pass >= 0)) registry.publish(store);
      rows.clear();
      const from = store.checkpoint.nextOffset;
      const digester = this.deps.identities.digester(tail.topic);
      const collected = await collectRows(p.records ?? Buffer.alloc(0), p.abortedTransactions ?? [], from, lastStable, store.openTransactions, rows, digester);
      if (digester.pending) await digester.complete(rows.keys);
      // The index may have been dropped or reset while the batches decompressed.
      if (!tails.isCurrent(tail) || registry.get(tail.topic, tail.partition) !== store) return;
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
        this.deps.log.debug('indexed', {
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
        if (rows.events.length > 0) registry.publish(store);
        else registry.publishEnd(store);
      }
      this.deps.progress.indexed(tail.topic, tail.partition, from, collected.nextOffset, lastStable, highWatermark);
      failures.indexed(tail);
    } catch (err) {
      // Closing ends the registry's answers too: not a failure to report.
      if (!this.deps.running()) return;
      if (err instanceof SchemaUnavailableError) failures.schemaUnavailable(tail, err);
      else failures.storeFailed(tail, err, store);
    }
  }

  /**
   * The tail's index, made with the topic's key identity. An index made with another one is
   * started over (its digests do not compare with the new ones) and this answer, fetched for
   * the old index's position, is not used: the next fetch starts from the log start.
   */
  private keyedStoreOf(tail: Tail): PartitionStore | undefined {
    const store = this.deps.tails.storeOf(tail);
    const mode = this.deps.identities.modeOf(tail.topic);
    if (store.keyIdentity === mode) return store;
    if (store.keyIdentity === '') {
      store.setKeyIdentity(mode);
      return store;
    }
    const { topicId } = store.checkpoint;
    const fresh = this.deps.registry.reset(store, `key identity changed from ${store.keyIdentity} to ${mode}`);
    fresh.setKeyIdentity(mode);
    if (topicId !== '') fresh.setTopicId(topicId);
    return undefined;
  }

  /** The fetch offset is outside the upstream log: moved log start, or an index ahead of it. */
  private async outOfRange(tail: Tail, nodeId: number): Promise<void> {
    const { registry, tails } = this.deps;
    const [earliest, latest] = await logBounds(await this.deps.cluster.broker(nodeId), tail.topic, tail.partition);
    if (!tails.isCurrent(tail)) return;
    const store = tails.storeOf(tail);
    const next = store.checkpoint.nextOffset;
    if (next < earliest) {
      if (store.dropBelow(earliest) || store.carry.pass >= 0) registry.publish(store);
    } else if (next > latest) {
      registry.reset(store, `indexed up to ${next} but the upstream log ends at ${latest}`);
    } else {
      this.deps.failures.retryLater(tail);
    }
  }
}
