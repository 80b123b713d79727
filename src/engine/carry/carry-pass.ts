/**
 * The steps of one carry pass (docs/carrying.md, "A pass"): the start marker, copies of every row
 * below the release end taken batch by batch from where their bytes are, the end marker, and the
 * wait for the carrier's own index to read the end marker back. Letting the range go is
 * range-release.ts. The Carrier runs the steps in turn and fences them: its `fence` is asked
 * before each batch of copies and while waiting for the read-back, and throws Fenced when this
 * replica no longer carries the partition, which stops the pass where it is.
 */
import type { Clock } from '../../common/clock.js';
import { CopyRun, markerBatch } from '../../protocol/carry/carried-batch.js';
import { encodePassEnd, encodePassStart } from '../../protocol/carry/carry-record.js';
import { ErrorCode } from '../../protocol/errors.js';
import { UpstreamError } from '../../upstream/error-class.js';
import { fetchRecords, produceBatch, type PartitionRequests } from '../indexer/partition-requests.js';
import type { PartitionStore } from '../store/partition-store.js';
import type { StoreRegistry } from '../store/store-registry.js';
import { PhysicalReader } from './physical-reader.js';
import { CarryError, SourceGroup } from './source-group.js';

/** A pass this replica is no longer the carrier for: stopped, and not a failure. */
export class Fenced extends Error {
  override readonly name = 'Fenced';
}

export interface CarryPassDeps {
  /** The partition leader's requests, paced (carry-pacing.ts). */
  client: PartitionRequests;
  store: PartitionStore;
  registry: Pick<StoreRegistry, 'get'>;
  clock: Clock;
  /** Throws Fenced when this replica no longer carries the partition; `ask`: ask the coordinator too. */
  fence: (ask: boolean) => Promise<void>;
  /** What one read of the store asks for. */
  readBytes: number;
  /** Where a run of copies is cut into carry batches. */
  runBytes: number;
  /** How long the pass waits for the index to read its end marker back. */
  readBackMs: number;
  /** The end marker is in the store, ending before `end`: the index is to read up to there now. */
  wrote: (end: number) => void;
}

const ROWS_PER_QUERY = 10_000;
const READ_BACK_POLL_MS = 20;

export class CarryPass {
  /** The pass, named by its start marker's offset (-1 until it is written). */
  pass = -1;
  /** Records copied. */
  copies = 0;
  /** Bytes of the carry batches written. */
  bytesWritten = 0;
  /** The time of carrying: the start marker's and the copies' timestamp. */
  private time = 0;
  private reader: PhysicalReader | undefined;

  constructor(
    private readonly deps: CarryPassDeps,
    readonly releaseEnd: number,
  ) {}

  /** Bytes read from the store for the copies so far. */
  get bytesRead(): number {
    return this.reader?.bytesRead ?? 0;
  }

  /** Appends the start marker (acks=all); the pass is named by its offset. */
  async begin(): Promise<number> {
    const { client, store, clock } = this.deps;
    const { topic, partition } = store.id;
    this.time = clock.now();
    this.pass = await produceBatch(
      client,
      topic,
      partition,
      await markerBatch(encodePassStart({ releaseEnd: this.releaseEnd, topicStart: store.topicStart }), this.time),
    );
    return this.pass;
  }

  /** Appends copies of every row below the release end, in offset order, taken batch by batch from where their bytes are. */
  async copy(): Promise<void> {
    const { client, store, runBytes } = this.deps;
    const { topic, partition } = store.id;
    const target = { topic, topicId: store.checkpoint.topicId, partition };
    const reader = new PhysicalReader((offset) => fetchRecords(client, target, offset, this.deps.readBytes));
    this.reader = reader;
    const run = new CopyRun();
    const group = new SourceGroup(this.releaseEnd);
    const flush = async () => {
      const batch = await run.flush(this.pass, this.time);
      if (!batch) return;
      await this.deps.fence(false);
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
      this.bytesWritten += batch.length;
    };
    const emit = async () => {
      const copy = await group.copy();
      if (!copy) return;
      if (run.count > 0 && run.bytes + copy.length > runBytes) await flush();
      run.add(copy, group.base);
      for (let i = 0; i < group.horizons.length; i += 2) run.addHorizon(group.horizons[i]!, group.horizons[i + 1]!);
      this.copies += group.offsets.length;
    };
    for (let from = 0; ;) {
      this.current();
      const rows = store.carriedRows(from, this.releaseEnd, ROWS_PER_QUERY);
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
  }

  /** Appends the end marker. */
  async end(): Promise<void> {
    const { client, store, clock } = this.deps;
    const { topic, partition } = store.id;
    const at = await produceBatch(
      client,
      topic,
      partition,
      await markerBatch(encodePassEnd({ pass: this.pass, copies: this.copies, releaseEnd: this.releaseEnd }), clock.now()),
    );
    this.deps.wrote(at + 1);
  }

  /** Waits until the index has read the pass's end marker back: before that, replicas would serve copies it has not seen. */
  async readBack(): Promise<void> {
    const { store, clock, readBackMs } = this.deps;
    const deadline = clock.now() + readBackMs;
    while (store.carry.pass < this.pass) {
      this.current();
      // No longer the carrier (a rebalance, or this replica stopping: it leaves the group first
      // and its index reads nothing more): nothing to wait for.
      await this.deps.fence(false);
      if (clock.now() >= deadline) throw new CarryError(`the index did not read the pass ending back within ${readBackMs} ms`);
      await clock.sleep(READ_BACK_POLL_MS);
    }
  }

  /** The pass works on the registry's index of the partition: one replaced meanwhile (a reset, a rebuild) ends it. */
  private current(): void {
    const { registry, store } = this.deps;
    if (registry.get(store.id.topic, store.id.partition) !== store || !store.isOpen) {
      throw new CarryError('the partition index was replaced during the pass');
    }
  }
}
