/**
 * The worker's side of the table API (src/engine/api/table-reads.ts): a key's latest record, a
 * conditional record's verdict and a partition's changes, from the index, with the records read
 * from the store where the index says they are (record-reads.ts).
 *
 * A partition the table API reads is indexed (as one a client fetches) and fetched eagerly, so
 * its index follows the store within a round trip rather than a long poll, and a read asking for
 * what a write just made waits for the index to read it. The first read of a partition waits for
 * its index to catch up with the store once: an index still filling would answer "no such key".
 */
import type { Clock } from '../../common/clock.js';
import type { Logger } from '../../common/log.js';
import { canonicalJson } from '../key-identity/canonical-json.js';
import { decodedDigestInto } from '../key-identity/key-digesters.js';
import type { KeyIdentities } from '../key-identity/key-identities.js';
import { writtenCondition } from '../store/condition.js';
import { KEY_DIGEST_BYTES } from '../store/key-digest.js';
import type { PartitionStore } from '../store/partition-store.js';
import type { StoreRegistry } from '../store/store-registry.js';
import { RecordFlag } from '../store/record-flags.js';
import type { TopicPolicy } from '../api/topic-policy.js';
import {
  TableError,
  type Behind,
  type ChangesAnswer,
  type LatestAnswer,
  type TableKey,
  type TableReads,
  type TableRecord,
  type VerdictAnswer,
  type WrittenRecord,
} from '../api/table-reads.js';
import { RecordReads, type ReadStore } from './record-reads.js';
import { partitionKey } from '../api/partition-key.js';

export interface TableServiceDeps {
  registry: StoreRegistry;
  policies: () => ReadonlyMap<string, TopicPolicy>;
  /** The partitions of the compacted topics, as the metadata last listed them. */
  partitions: () => { topic: string; partition: number }[];
  /** The partition is read: indexed, kept, and fetched eagerly. */
  use: (topic: string, partition: number) => void;
  /** Whether the partition's index reached what the store held when asked, within the deadline. */
  caughtUp: (topic: string, partition: number, deadlineMs: number) => Promise<boolean>;
  identities: KeyIdentities;
  /** Reads the partition's records from the store from an offset. */
  read: (topic: string, partition: number) => ReadStore;
  clock: Clock;
  log: Logger;
  /** Tells the main thread what an expected write's verdict would be were it at `at` (foresee). */
  foreseen: (write: number, at: number, verdict: 'won' | 'void') => void;
}

/** A write the main thread expects (foresee), and where the index ended when it was last foreseen. */
interface Expected {
  write: number;
  topic: string;
  partition: number;
  digest?: Buffer;
  condition: number;
  at: number;
}

/** Records kept decoded, by partition and offset: a warm key's read does not go to the store. */
const CACHED_RECORDS = 10_000;
/** How often a read waiting for a topic's policy and partitions looks again. */
const NEWS_POLL_MS = 20;
/** How long a wait for the index sleeps at most before looking again without being told. */
const FALLBACK_POLL_MS = 50;
/** How long a question for a partition's end waits for its index to catch up with the store, at least. */
const END_WAIT_MS = 5_000;
/** How long a read waits for a topic's policy and partitions to reach this replica, at least. */
const NEWS_WAIT_MS = 1_000;

export class TableService implements TableReads {
  private readonly cache = new Map<string, TableRecord>();
  /** Indexes that caught up with the store once since they opened. */
  private readonly caughtUpOnce = new WeakSet<PartitionStore>();
  /** Per partition, the reads waiting for its index to move. */
  private readonly waiting = new Map<string, Set<() => void>>();

  /** Writes the main thread expects, by their number and by partition. */
  private readonly expected = new Map<number, Expected>();
  private readonly expectedIn = new Map<string, Set<Expected>>();

  constructor(private readonly deps: TableServiceDeps) {}

  /** The worker's own verdict() foresees at each look: nothing to start here. */
  expect(): () => void {
    return () => undefined;
  }

  /**
   * The main thread expects a write (TableReads.expect): from now until forgotten, each time the
   * partition's index moves, it is told what the record's verdict would be if the store put it
   * where the index ends.
   */
  async foresee(write: number, topic: string, partition: number, written: WrittenRecord): Promise<void> {
    const e: Expected = { write, topic, partition, condition: writtenCondition(written.condition), at: -1 };
    this.expected.set(write, e);
    try {
      e.digest = await this.digestOf(topic, { bytes: written.key });
    } catch (err) {
      // The write's verdict() asks again and answers the failure.
      this.deps.log.debug('cannot foresee a write', { topic, partition, err });
      this.forget(write);
      return;
    }
    if (!this.expected.has(write)) return;
    const key = partitionKey(topic, partition);
    let set = this.expectedIn.get(key);
    if (!set) this.expectedIn.set(key, (set = new Set()));
    set.add(e);
    this.foreseeOne(e);
  }

  forget(write: number): void {
    const e = this.expected.get(write);
    if (!e) return;
    this.expected.delete(write);
    const key = partitionKey(e.topic, e.partition);
    const set = this.expectedIn.get(key);
    if (set?.delete(e) && set.size === 0) this.expectedIn.delete(key);
  }

  private foreseeOne(e: Expected): void {
    const store = this.deps.registry.get(e.topic, e.partition);
    const at = store?.checkpoint.nextOffset ?? -1;
    if (!store || at === e.at) return;
    const verdict = store.foresee(at, e.digest!, e.condition);
    if (!verdict) return;
    e.at = at;
    this.deps.foreseen(e.write, at, verdict);
  }

  async latest(topic: string, partition: number, key: TableKey, atLeast: number, timeoutMs: number): Promise<LatestAnswer | Behind> {
    const deadline = this.deps.clock.now() + timeoutMs;
    await this.check(topic, partition, deadline);
    const digest = await this.digestOf(topic, key);
    const store = await this.indexed(topic, partition, atLeast, deadline);
    if (!store) return this.behind(topic, partition);
    const indexedTo = store.checkpoint.nextOffset;
    const latest = store.latestOf(digest);
    if (!latest || latest.tombstone) return { record: null, indexedTo };
    const record = await this.recordAt(topic, store, latest.offset);
    return { record: record ?? null, indexedTo };
  }

  async verdict(topic: string, partition: number, offset: number, timeoutMs: number, written?: WrittenRecord): Promise<VerdictAnswer | Behind> {
    const deadline = this.deps.clock.now() + timeoutMs;
    await this.check(topic, partition, deadline);
    const foreseen = written && { digest: await this.digestOf(topic, { bytes: written.key }), condition: writtenCondition(written.condition) };
    for (;;) {
      // A written record is judged once the index ends at it, without waiting for the fetch that brings it.
      const store = await this.indexed(topic, partition, foreseen ? offset : offset + 1, deadline);
      if (!store) return this.behind(topic, partition);
      const ahead = foreseen && store.foresee(offset, foreseen.digest, foreseen.condition);
      if (ahead) return { verdict: ahead };
      const verdict = store.checkpoint.nextOffset <= offset ? 'pending' : store.verdict(offset);
      if (verdict === 'won' || verdict === 'void') return { verdict };
      if (verdict === 'none') return { verdict: 'unconditional' };
      const left = deadline - this.deps.clock.now();
      if (left <= 0) return this.behind(topic, partition);
      await this.nextMove(topic, partition, Math.min(left, FALLBACK_POLL_MS));
    }
  }

  async changes(topic: string, partition: number, from: number, key: TableKey | null, limit: number, waitMs: number): Promise<ChangesAnswer> {
    const deadline = this.deps.clock.now() + waitMs;
    await this.check(topic, partition, deadline);
    if (limit <= 0) {
      // Where the partition ends now (a stream from now): its index caught up with the store first.
      const store = await this.indexed(topic, partition, 0, Math.max(deadline, this.deps.clock.now() + END_WAIT_MS));
      if (!store) throw new TableError(503, `the index of ${topic}-${partition} has not caught up with the store yet; retry in a moment`);
      return { records: [], next: store.checkpoint.nextOffset };
    }
    const digest = key === null ? null : await this.digestOf(topic, key);
    let store = await this.indexed(topic, partition, 0, deadline);
    for (;;) {
      if (!store) return { records: [], next: from };
      const rows = store.changedRows(from, digest, limit);
      if (rows.length > 0) return this.changedRecords(topic, store, rows);
      const end = store.checkpoint.nextOffset;
      if (this.deps.clock.now() >= deadline) return { records: [], next: Math.max(from, end) };
      store = await this.indexed(topic, partition, end + 1, deadline);
      if (!store) return { records: [], next: Math.max(from, end) };
    }
  }

  private async changedRecords(topic: string, store: PartitionStore, rows: [number, number | null][]): Promise<ChangesAnswer> {
    const reads = new RecordReads(store.id.partition, this.deps.read(topic, store.id.partition));
    const records: TableRecord[] = [];
    for (const [offset, phys] of rows) {
      const record = this.cache.get(cacheKey(topic, store.id.partition, offset)) ?? (await reads.at(offset, phys));
      if (record) records.push(record);
    }
    return { records, next: rows.at(-1)![0] + 1 };
  }

  /** The record at `offset`, from the cache or the store. */
  private async recordAt(topic: string, store: PartitionStore, offset: number): Promise<TableRecord | undefined> {
    const k = cacheKey(topic, store.id.partition, offset);
    const cached = this.cache.get(k);
    if (cached) {
      // Most recently used last: the first is the one to go.
      this.cache.delete(k);
      this.cache.set(k, cached);
      return cached;
    }
    const row = store.rowAt(offset);
    if (!row || row.flags & RecordFlag.Void) return undefined;
    const record = await new RecordReads(store.id.partition, this.deps.read(topic, store.id.partition)).at(offset, row.phys);
    if (!record) return undefined;
    record.timestamp = row.timestamp;
    this.cache.set(k, record);
    if (this.cache.size > CACHED_RECORDS) this.cache.delete(this.cache.keys().next().value!);
    return record;
  }

  /**
   * Throws unless the topic is compacted and has the partition. A topic just made (or made
   * compacted) may not have reached this replica's policies and metadata yet: they are waited for
   * up to the deadline, and a second at least.
   */
  private async check(topic: string, partition: number, deadline: number): Promise<void> {
    const { clock } = this.deps;
    const until = Math.max(deadline, clock.now() + NEWS_WAIT_MS);
    for (;;) {
      const compacted = this.deps.policies().has(topic);
      const known = compacted && this.deps.partitions().some((p) => p.topic === topic && p.partition === partition);
      if (compacted) this.deps.use(topic, partition);
      if (known) return;
      if (clock.now() >= until) {
        if (!compacted) {
          throw new TableError(
            409,
            `topic ${topic} is not compacted (cleanup.policy=compact) here: tables are compacted topics; set its cleanup.policy or pick another`,
          );
        }
        throw new TableError(404, `topic ${topic} has no partition ${partition} that this replica knows of; check the partition count`);
      }
      await clock.sleep(NEWS_POLL_MS);
    }
  }

  /**
   * The partition's index once it has read up to `atLeast` (and, the first time, caught up with
   * the store), or undefined when it has not by the deadline.
   */
  private async indexed(topic: string, partition: number, atLeast: number, deadline: number): Promise<PartitionStore | undefined> {
    const { registry, clock } = this.deps;
    for (;;) {
      const store = registry.get(topic, partition);
      if (store && !this.caughtUpOnce.has(store)) {
        if (!(await this.deps.caughtUp(topic, partition, Math.max(0, deadline - clock.now())))) return undefined;
        if (registry.get(topic, partition) === store) this.caughtUpOnce.add(store);
        continue;
      }
      // Records waiting for their verdict (a replica new to a carried store) are not answered for.
      if (store && store.checkpoint.nextOffset >= atLeast && store.firstUnjudged < 0) return store;
      const left = deadline - clock.now();
      if (left <= 0) return undefined;
      // The index says when it moves; the fallback covers an index opened or dropped meanwhile.
      await this.nextMove(topic, partition, Math.min(left, FALLBACK_POLL_MS));
    }
  }

  /** The partition's index moved (it read more of the store): the reads waiting on it look again. */
  indexMoved(topic: string, partition: number): void {
    const key = partitionKey(topic, partition);
    for (const e of this.expectedIn.get(key) ?? []) this.foreseeOne(e);
    const waiting = this.waiting.get(key);
    if (!waiting) return;
    this.waiting.delete(key);
    for (const wake of waiting) wake();
  }

  /** Resolves when the partition's index next moves, or after ms. */
  private async nextMove(topic: string, partition: number, ms: number): Promise<void> {
    const key = partitionKey(topic, partition);
    const cut = new AbortController();
    const wake = () => cut.abort();
    let waiting = this.waiting.get(key);
    if (!waiting) this.waiting.set(key, (waiting = new Set()));
    waiting.add(wake);
    try {
      await this.deps.clock.sleep(ms, cut.signal);
    } finally {
      waiting.delete(wake);
    }
  }

  private behind(topic: string, partition: number): Behind {
    return { behind: true, indexedTo: this.deps.registry.get(topic, partition)?.checkpoint.nextOffset ?? 0 };
  }

  /** The key's digest as the topic's key identity makes it. */
  private async digestOf(topic: string, key: TableKey): Promise<Buffer> {
    const out = Buffer.alloc(KEY_DIGEST_BYTES);
    if ('json' in key) {
      if (this.deps.identities.modeOf(topic) !== 'registry') {
        throw new TableError(400, `topic ${topic} compares keys by their bytes, not through the schema registry: give the key as text or base64, not JSON`);
      }
      decodedDigestInto(canonicalJson(key.json), out, 0);
      return out;
    }
    const digester = this.deps.identities.digester(topic);
    digester.digestInto(key.bytes, out, 0);
    if (digester.pending) await digester.complete(out);
    return out;
  }
}

function cacheKey(topic: string, partition: number, offset: number): string {
  return `${topic}\u0000${partition}\u0000${offset}`;
}
