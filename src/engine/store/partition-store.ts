/**
 * One partition's key index: its rows in its topic's index file (topic-index.ts, schema.ts),
 * written only by the compaction worker. It holds what the indexer has read of the upstream
 * log, the virtual segments, and the checkpoint that lets a restart resume where it stopped.
 *
 * Opening a partition checks that its tables agree with its checkpoint and with each other; a
 * partition that fails is cleared, and the indexer fills it again from the upstream, which is
 * the source of truth.
 *
 * The checkpoint, segments, open transactions and row count are mirrored in memory. Every write
 * goes through write(): when its transaction fails (a full disk fails the commit itself), the
 * mirror is read back from the file, so it always says what was committed.
 */
import type Database from 'better-sqlite3';
import { type OffsetAtTime, MAX_TIMESTAMP } from '../api/engine-reports.js';
import { applyCopies, buildKeys, keysOwed, noKeyEntries, prunePass } from './carried-rows.js';
import { CleanStatements } from './clean-statements.js';
import { ConditionJudge, type StoredVerdict } from './condition-judge.js';
import { LatestRecords, type LatestRecord } from './latest-records.js';
import { Condition, conditionHolds } from './condition.js';
import { NOT_A_VALUE, RecordFlag } from './record-flags.js';
import type { CarryEvent, RowBuffer } from './row-buffer.js';
import type { CarriedSnapshot, PassReleaseSeen } from '../api/index-view.js';
import { PENDING_RECORDS, PENDING_TERM } from './schema.js';
import { appendToSegment, type RollPolicy, type Segment } from './segment-roller.js';
import { INSERT_CHUNK, INSERT_COLUMNS, IndexFileError, TopicIndex } from './topic-index.js';

export interface PartitionId {
  topic: string;
  partition: number;
}

export interface Checkpoint {
  /** The upstream topic id this index was built from ('' until known). */
  topicId: string;
  /** The next offset to index: everything below it that the upstream still holds is indexed. */
  nextOffset: number;
  /** The upstream's log start offset, last seen. */
  logStartOffset: number;
  lastStableOffset: number;
  highWatermark: number;
  /** The cleaner's first dirty offset: the index view's cleanedUpTo(). */
  firstDirty: number;
  /** Bytes of the records kept below firstDirty. */
  cleanBytes: number;
  /** When the last clean ran (epoch ms, 0: never). */
  lastCleanMs: number;
}

/** What a fetch told the indexer about the partition. */
export interface UpstreamPosition {
  nextOffset: number;
  logStartOffset: number;
  lastStableOffset: number;
  highWatermark: number;
}

/** What the carry passes seen in the store said (docs/carrying.md); -1 where nothing yet. */
export interface CarryState {
  /** The compacted topic's own log start (what ListOffsets EARLIEST answers), from the last pass start. */
  topicStart: number;
  /** A pass seen starting and not yet ending: its start marker's offset and its release end. */
  openPass: number;
  openRelease: number;
  /** The last pass seen whole: its start and end markers' offsets and its release end. */
  pass: number;
  passEnd: number;
  passRelease: number;
  /**
   * When the open pass and the last whole one wrote their copies, as the store stamped the
   * start marker's batch: the age the store's time retention judges those copies by.
   */
  openTime: number;
  passTime: number;
}

const NO_CARRY: CarryState = { topicStart: -1, openPass: -1, openRelease: -1, pass: -1, passEnd: -1, passRelease: -1, openTime: -1, passTime: -1 };

/** Offsets read per statement by eachOffsetBelow. */
const OFFSETS_CHUNK = 65_536;

const PARTITION_TABLES = ['records', 'keys', 'segments', 'open_txns', 'carry', 'carry_releases', 'conditions', 'conditional', 'checkpoint'] as const;

/**
 * Returns why the partition's tables cannot be trusted, or null: something indexed at or past
 * next_offset, or below first_dirty not as many kept records as entries in `keys` (the cleaner
 * keeps one record per key there). quick_check only sees the b-trees; a file that lost pages of
 * one table while keeping a well-formed shape (a WAL deleted in the middle of a checkpoint
 * writing it back) fails here instead of answering for records it no longer holds. Counts, not
 * a join: this runs for every partition at startup, and counting is far cheaper than joining
 * (docs/performance.md).
 */
function inconsistency(db: Database.Database, partition: number): string | null {
  const cp = db.prepare('SELECT next_offset, log_start, first_dirty FROM checkpoint WHERE partition = ?').get(partition) as {
    next_offset: number;
    log_start: number;
    first_dirty: number;
  };
  if (cp.log_start > cp.next_offset || cp.first_dirty > cp.next_offset) {
    return `checkpoint out of order: log start ${cp.log_start}, cleaned up to ${cp.first_dirty}, indexed up to ${cp.next_offset}`;
  }
  const last = db.prepare('SELECT MAX(offset) FROM records WHERE partition = ?').pluck().get(partition) as number | null;
  if (last !== null && last >= cp.next_offset) return `records up to offset ${last} but indexed up to ${cp.next_offset} only`;
  const keys = db.prepare('SELECT COUNT(*) FROM keys WHERE partition = ?').pluck().get(partition) as number;
  const kept = db
    .prepare(`SELECT COUNT(*) FROM records WHERE partition = ? AND offset < ? AND flags & ${RecordFlag.Control} = 0`)
    .pluck()
    .get(partition, cp.first_dirty) as number;
  // No entries at all is a cleaned part whose copies owe theirs (carried-rows.ts, KeyEntries).
  if (keys !== kept && keys > 0) return `the cleaned part does not agree with itself: ${kept} records kept for ${keys} keys`;
  return null;
}

function hasCheckpoint(db: Database.Database, partition: number): boolean {
  return db.prepare('SELECT 1 FROM checkpoint WHERE partition = ?').get(partition) !== undefined;
}

/** Deletes every row of the partition and gives it an empty checkpoint (in the caller's transaction, if any). */
function startEmpty(db: Database.Database, partition: number): void {
  for (const table of PARTITION_TABLES) db.prepare(`DELETE FROM ${table} WHERE partition = ?`).run(partition);
  db.prepare(`INSERT INTO checkpoint VALUES (?, '', 0, 0, 0, 0, 0, 0, 0, '')`).run(partition);
  db.prepare('INSERT INTO carry VALUES (?, -1, -1, -1, -1, -1, -1, -1, -1)').run(partition);
}

/** One row of a partition's index (schema.ts `records`), as rowsIn() reads it. */
export interface IndexRow {
  offset: number;
  /** The key digest (key-digest.ts); null for a keyless record. */
  key: Buffer | null;
  /** RecordFlag bits. */
  flags: number;
  timestamp: number;
  /** Bytes the record takes in the log. */
  size: number;
  /** The producer id of a transactional record, else null. */
  producerId: number | null;
  /** A marker's transaction's first offset, else null. */
  txnFirst: number | null;
  /** The delete horizon of a tombstone or marker a clean has set, else null. */
  horizon: number | null;
  /** Where the record's bytes are in the store when that is a carried copy, else null (at its offset). */
  phys: number | null;
}

export interface OpenResult {
  store: PartitionStore;
  /** Why the partition's rows (or its whole file) were discarded and it starts empty; undefined when they were usable or new. */
  rebuiltBecause?: string;
}

export class PartitionStore {
  private cp!: Checkpoint;
  private carryState: CarryState = NO_CARRY;
  /**
   * While the index is read from the store for the first time: the offset it must reach before
   * its survivors replace the pass the store was found to hold (pass-locator.ts); 0 otherwise.
   */
  asStoredUntil = 0;
  private identity!: string;
  private readonly segmentList: Segment[] = [];
  /** Producer id → first offset of its transaction still open at nextOffset. */
  readonly openTransactions = new Map<number, number>();
  private rows!: number;
  /** The clean's statements on this partition, made at its first clean. */
  private cleanStatements: CleanStatements | undefined;
  private judge!: ConditionJudge;
  private latest!: LatestRecords;
  /**
   * Whether rows of the cleaned part went in without their key entries (an index reading its
   * first pass, carried-rows.ts KeyEntries 'later'): settleKeys() makes them before anything
   * reads the entries. Read from the file, so a restart halfway through a pass resumes it.
   */
  private keysPending = false;

  private constructor(
    readonly index: TopicIndex,
    readonly id: PartitionId,
  ) {
    this.reload();
  }

  /**
   * The partition's index in an open topic file: its rows when they agree with themselves, else
   * (or when it has none yet) an empty start.
   */
  static in(index: TopicIndex, partition: number): OpenResult {
    const db = index.db;
    let rebuiltBecause: string | undefined;
    if (!hasCheckpoint(db, partition)) {
      startEmpty(db, partition);
    } else {
      const problem = inconsistency(db, partition);
      if (problem !== null) {
        db.transaction(() => startEmpty(db, partition))();
        rebuiltBecause = problem;
      }
    }
    return { store: new PartitionStore(index, { topic: index.topic, partition }), ...(rebuiltBecause !== undefined && { rebuiltBecause }) };
  }

  /** Opens (or creates) the topic file `file` and the partition's index in it; the store's close() closes the file. */
  static open(file: string, id: PartitionId): OpenResult {
    const opened = TopicIndex.open(file, id.topic);
    try {
      const { store, rebuiltBecause } = PartitionStore.in(opened.index, id.partition);
      const why = opened.rebuiltBecause ?? rebuiltBecause;
      return { store, ...(why !== undefined && { rebuiltBecause: why }) };
    } catch (err) {
      opened.index.close();
      throw err;
    }
  }

  /**
   * A partition's index in a file opened read-only, as it is: nothing checked, written or
   * rebuilt (an operator's look at a data directory a proxy may own). Throws IndexFileError when
   * the file has no index of the partition.
   */
  static within(index: TopicIndex, partition: number): PartitionStore {
    if (!hasCheckpoint(index.db, partition)) throw new IndexFileError(`no index of partition ${partition} in ${index.file}`);
    return new PartitionStore(index, { topic: index.topic, partition });
  }

  /** The connection of the topic's file, shared with the topic's other partitions: its SQL stays in this module. */
  private get db(): Database.Database {
    return this.index.db;
  }

  /** Whether the store can still be used: false once closed or removed (a rebuild, a deleted topic, a shutdown). */
  get isOpen(): boolean {
    return this.index.open;
  }

  get file(): string {
    return this.index.file;
  }

  private get partition(): number {
    return this.id.partition;
  }

  /** Reads the mirrored state back from the file: what was committed. */
  reload(): void {
    const db = this.db;
    const p = this.partition;
    const row = db.prepare('SELECT * FROM checkpoint WHERE partition = ?').get(p) as Record<string, number | string>;
    this.cp = {
      topicId: row.topic_id as string,
      nextOffset: row.next_offset as number,
      logStartOffset: row.log_start as number,
      lastStableOffset: row.last_stable as number,
      highWatermark: row.high_watermark as number,
      firstDirty: row.first_dirty as number,
      cleanBytes: row.clean_bytes as number,
      lastCleanMs: row.last_clean_ms as number,
    };
    this.identity = row.key_identity as string;
    const carry = db
      .prepare('SELECT topic_start, open_pass, open_release, pass, pass_end, pass_release, open_time, pass_time FROM carry WHERE partition = ?')
      .raw()
      .get(p) as number[] | undefined;
    this.carryState = carry
      ? {
          topicStart: carry[0]!,
          openPass: carry[1]!,
          openRelease: carry[2]!,
          pass: carry[3]!,
          passEnd: carry[4]!,
          passRelease: carry[5]!,
          openTime: carry[6]!,
          passTime: carry[7]!,
        }
      : NO_CARRY;
    const segments = (db.prepare('SELECT base, rolling_ts, max_ts, bytes FROM segments WHERE partition = ? ORDER BY base').raw().all(p) as number[][]).map(
      ([base, rollingTimestamp, maxTimestamp, bytes]) => ({ base: base!, rollingTimestamp: rollingTimestamp!, maxTimestamp: maxTimestamp!, bytes: bytes! }),
    );
    this.segmentList.splice(0, this.segmentList.length, ...segments);
    this.openTransactions.clear();
    for (const [pid, first] of db.prepare('SELECT pid, first_offset FROM open_txns WHERE partition = ?').raw().all(p) as [number, number][])
      this.openTransactions.set(pid, first);
    this.rows = db.prepare('SELECT COUNT(*) FROM records WHERE partition = ?').pluck().get(p) as number;
    this.keysPending = keysOwed(db, p, this.cp.firstDirty);
    if (this.judge) {
      this.judge.reload();
      this.latest.drop();
    } else {
      this.latest = new LatestRecords(
        db,
        p,
        () => this.cp.firstDirty,
        () => this.settleKeys(),
      );
      this.judge = new ConditionJudge(db, p, this.latest);
    }
  }

  /**
   * Runs `work` in one transaction. When it fails, the in-memory mirror is read back from the
   * file (or, if even that fails, the file is closed, so that its next user reopens it) and the
   * error is rethrown.
   */
  write<T>(work: () => T): T {
    try {
      return this.db.transaction(work)();
    } catch (err) {
      try {
        this.reload();
      } catch {
        this.close();
      }
      throw err;
    }
  }

  /** Throws the partition's rows away and starts it empty, in one transaction. */
  clear(): void {
    this.asStoredUntil = 0;
    this.latest.drop();
    this.write(() => startEmpty(this.db, this.partition));
    this.reload();
  }

  /** Deletes every row of the partition, its checkpoint too: the file no longer holds it. */
  remove(): void {
    this.write(() => {
      for (const table of PARTITION_TABLES) this.db.prepare(`DELETE FROM ${table} WHERE partition = ?`).run(this.partition);
    });
  }

  get checkpoint(): Readonly<Checkpoint> {
    return this.cp;
  }

  /** What the carry passes seen in the store said. */
  get carry(): Readonly<CarryState> {
    return this.carryState;
  }

  /** The topic's own log start: the last pass start's word, else the store's. */
  get topicStart(): number {
    return this.carryState.topicStart >= 0 ? this.carryState.topicStart : this.cp.logStartOffset;
  }

  /**
   * Whether topicStart can be trusted: a pass start was read, or the store starts at 0, or the
   * index has read all the store held (up to the high watermark it last saw) and found no pass,
   * so the store's log start moved for another reason (its own retention). A new index of a
   * store a pass already let go has not read that pass's start yet: the store's log start is
   * then the last release end, not the topic's start.
   */
  knowsTopicStart(): boolean {
    return this.carryState.topicStart >= 0 || this.cp.logStartOffset === 0 || this.cp.nextOffset >= this.cp.highWatermark;
  }

  private updateCarry(change: Partial<CarryState>): void {
    const next = { ...this.carryState, ...change };
    this.db
      .prepare(
        'UPDATE carry SET topic_start = ?, open_pass = ?, open_release = ?, pass = ?, pass_end = ?, pass_release = ?, open_time = ?, pass_time = ? WHERE partition = ?',
      )
      .run(next.topicStart, next.openPass, next.openRelease, next.pass, next.passEnd, next.passRelease, next.openTime, next.passTime, this.partition);
    this.carryState = next;
  }

  /** The virtual segments in offset order; the last one is the active segment. */
  get segments(): readonly Segment[] {
    return this.segmentList;
  }

  get rowCount(): number {
    return this.rows;
  }

  /** Adjusts the row count after a clean's statements deleted rows (clean()). */
  rowsDeleted(n: number): void {
    this.rows -= n;
  }

  /**
   * Runs a clean of the partition in one transaction (write()): `work` gets the statements a
   * clean executes on its rows (clean-statements.ts); the cleaner decides which run, and so what
   * survives (src/engine/cleaner/clean-partition.ts).
   */
  clean<T>(work: (rows: CleanStatements) => T): T {
    const statements = (this.cleanStatements ??= new CleanStatements(this.db, this.partition));
    return this.write(() => {
      this.settleKeys();
      return work(statements);
    });
  }

  /**
   * Whether the cleaned part's key entries are still owed: the cleaner leaves the partition
   * alone until its index has read what the store held (the pass's end builds them), unless it
   * is caught up and the end is not coming (a pass stopped halfway).
   */
  get keysOwed(): boolean {
    return this.keysPending;
  }

  /**
   * Whether the index has yet to read records the store held when last asked (its last stable
   * offset): a pass read halfway may still end, and one stopped halfway is known only once the
   * index has read all there was.
   */
  get behindStore(): boolean {
    return this.cp.nextOffset < this.cp.lastStableOffset;
  }

  /**
   * Makes the key entries the cleaned part's rows are owed (carried-rows.ts buildKeys), those of
   * the rows below `end`, in a transaction of its own or the caller's.
   */
  settleKeys(end = this.cp.firstDirty): void {
    if (!this.keysPending) return;
    this.write(() => {
      this.rows -= buildKeys(this.db, this.partition, end);
    });
    this.keysPending = false;
  }

  setTopicId(topicId: string): void {
    this.updateCheckpoint({ topicId });
  }

  /** The key identity mode the key digests were made with; '' before any were. */
  get keyIdentity(): string {
    return this.identity;
  }

  setKeyIdentity(mode: string): void {
    this.db.prepare('UPDATE checkpoint SET key_identity = ? WHERE partition = ?').run(mode, this.partition);
    this.identity = mode;
  }

  /** Writes checkpoint fields (in the caller's transaction, if any). */
  updateCheckpoint(change: Partial<Checkpoint>): void {
    const next = { ...this.cp, ...change };
    this.index.saveCheckpoint.run(
      next.topicId,
      next.nextOffset,
      next.logStartOffset,
      next.lastStableOffset,
      next.highWatermark,
      next.firstDirty,
      next.cleanBytes,
      next.lastCleanMs,
      this.partition,
    );
    this.cp = next;
  }

  /**
   * Stores the rows of one fetch and the position it reached, in one transaction. The rows must
   * start at or after nextOffset and be in offset order; their batches extend or roll segments.
   */
  ingest(rows: RowBuffer, position: UpstreamPosition, roll: RollPolicy, transactionsChanged: boolean): void {
    this.write(() => {
      if (rows.copies === 0 && rows.conditional === 0) {
        this.insertRows(rows, 0, rows.length);
        this.latest.add(rows, 0, rows.length);
      } else this.insertInRuns(rows);
      for (const e of rows.events) this.carryEvent(e);
      this.rollSegments(rows, roll);
      if (transactionsChanged) this.saveOpenTransactions();
      this.updateCheckpoint(position);
      // Read to the store's end, with no pass open: whatever lay below where this index started was not carried, or is here now.
      if (this.judge.gapBelow > 0 && this.carryState.openPass < 0 && position.nextOffset >= position.highWatermark) this.judge.gapClosed();
    });
  }

  /**
   * Rows read at their own offsets are inserted in runs, and so are copies (carried-rows.ts); a
   * conditional record is judged against the rows before it, so the run before it goes in first.
   */
  private insertInRuns(rows: RowBuffer): void {
    const n = rows.length;
    for (let i = 0; i < n;) {
      let j = i;
      while (j < n && rows.phys[j]! < 0 && !this.toJudge(rows, j)) j++;
      if (j > i) {
        this.insertRows(rows, i, j);
        this.latest.add(rows, i, j);
      }
      if (j < n && rows.phys[j]! < 0) {
        this.judge.judge(rows, j);
        this.insertRows(rows, j, j + 1);
        this.latest.add(rows, j, ++j);
      }
      i = j;
      while (j < n && rows.phys[j]! >= 0) j++;
      if (j > i) this.applyCopies(rows, i, j);
      i = j;
    }
  }

  /** Whether row i holds a condition that can make it a key's latest record (not aborted data). */
  private toJudge(rows: RowBuffer, i: number): boolean {
    return rows.conditions[i]! !== Condition.None && rows.hasKey[i] === 1 && (rows.flags[i]! & RecordFlag.Aborted) === 0;
  }

  /**
   * Applies the carried copies in rows [from, to) (carried-rows.ts) as of the partition's
   * cleaned part now, in the caller's transaction (ingest's, or write()'s); returns how many rows
   * the partition gained, net.
   */
  applyCopies(rows: RowBuffer, from: number, to: number): number {
    // A cleaned part with no entry yet takes its copies' entries later, all at once.
    if (!this.keysPending && noKeyEntries(this.db, this.partition)) this.keysPending = true;
    const gained = applyCopies(this.db, this.partition, rows, from, to, this.cp.firstDirty, this.keysPending ? 'later' : 'now');
    this.rows += gained;
    return gained;
  }

  private carryEvent(e: CarryEvent): void {
    if (e.kind === 'release') {
      // Share group ids may hold any character: kept as a JSON array.
      this.db
        .prepare('INSERT OR REPLACE INTO carry_releases VALUES (?, ?, ?, ?, ?)')
        .run(this.partition, e.at, e.pass, e.releasedEnd, JSON.stringify(e.groups));
      return;
    }
    if (e.kind === 'start') {
      this.updateCarry({ openPass: e.at, openRelease: e.releaseEnd, openTime: e.time, topicStart: Math.max(this.carryState.topicStart, e.topicStart) });
      return;
    }
    this.rows -= prunePass(this.db, this.partition, e.pass, e.releaseEnd, this.cp.firstDirty, this.keysPending ? 'later' : 'now');
    // The carrier's word replaces this index's below the release: the latest records are read again.
    this.latest.drop();
    const firstDirty = Math.max(this.cp.firstDirty, e.releaseEnd);
    // Owed entries are made now, below the new first dirty offset: the rows the pass made cleaned owe theirs too.
    this.settleKeys(firstDirty);
    // The pass's copies hold every survivor below its release end.
    if (this.judge.gapBelow > 0 && e.releaseEnd >= this.judge.gapBelow) this.judge.gapClosed();
    this.updateCheckpoint({ firstDirty, cleanBytes: this.bytesBelow(firstDirty) });
    const opened = this.carryState.openPass === e.pass;
    // An end whose start this index never saw has only its own time: later than the copies' by the pass's length.
    const passTime = opened ? this.carryState.openTime : e.time;
    this.updateCarry({ ...(opened && { openPass: -1, openRelease: -1, openTime: -1 }), pass: e.pass, passEnd: e.at, passRelease: e.releaseEnd, passTime });
  }

  private insertRows(rows: RowBuffer, from: number, to: number): void {
    const { keyStage, chunkParams, oneParams, insertChunk, insertOne } = this.index;
    const n = to;
    let i = from;
    for (; i + INSERT_CHUNK <= n; i += INSERT_CHUNK) {
      keyStage.putRun(rows.keys, i, INSERT_CHUNK);
      for (let j = 0; j < INSERT_CHUNK; j++) this.fillRow(chunkParams, j * INSERT_COLUMNS, rows, i + j, keyStage.view(j));
      insertChunk.run(chunkParams);
    }
    for (; i < n; i++) {
      this.fillRow(oneParams, 0, rows, i, keyStage.put(0, rows.keys, i));
      insertOne.run(oneParams);
    }
    this.rows += to - from;
  }

  private fillRow(params: unknown[], at: number, rows: RowBuffer, i: number, key: Buffer): void {
    const pid = rows.producerIds[i]!;
    const txnFirst = rows.txnFirsts[i]!;
    params[at] = this.partition;
    params[at + 1] = rows.offsets[i];
    params[at + 2] = rows.hasKey[i] ? key : null;
    params[at + 3] = rows.flags[i];
    params[at + 4] = rows.timestamps[i];
    params[at + 5] = rows.sizes[i];
    params[at + 6] = pid < 0 ? null : pid;
    params[at + 7] = txnFirst < 0 ? null : txnFirst;
  }

  private rollSegments(rows: RowBuffer, roll: RollPolicy): void {
    let open = this.segmentList.at(-1);
    let touched: Segment | undefined;
    for (let b = 0; b < rows.batchCount; b++) {
      const seg = appendToSegment(open, rows.batchFirst[b]!, rows.batchLast[b]!, rows.batchBytes[b]!, rows.batchMaxTimestamp[b]!, roll);
      if (seg !== open) {
        if (touched) this.writeSegment(touched);
        this.segmentList.push(seg);
        open = seg;
      }
      touched = seg;
    }
    if (touched) this.writeSegment(touched);
  }

  private writeSegment(s: Segment): void {
    this.index.upsertSegment.run(this.partition, s.base, s.rollingTimestamp, s.maxTimestamp, s.bytes);
  }

  private saveOpenTransactions(): void {
    this.db.prepare('DELETE FROM open_txns WHERE partition = ?').run(this.partition);
    const insert = this.db.prepare('INSERT INTO open_txns (partition, pid, first_offset) VALUES (?, ?, ?)');
    for (const [pid, first] of this.openTransactions) insert.run(this.partition, pid, first);
  }

  /**
   * The upstream's log start moved to `start`: forget what the store no longer holds, the rows
   * whose bytes were below it (a row whose carried copy is at or past it stays). With `topic`
   * the compacted topic's own log start moves there (compact,delete retention): every row below
   * it goes. Segments that end at or before it go; the one it falls in stays (Kafka's log start
   * may sit inside a segment). Returns whether rows in the cleaned part went, which changes the
   * survivors.
   */
  dropBelow(start: number, topic = false): boolean {
    if (start <= this.cp.logStartOffset && !(topic && start > this.topicStart)) return false;
    const before = this.cp.firstDirty;
    const p = this.partition;
    const gone = topic ? 'offset < ?' : 'offset < ? AND (phys IS NULL OR phys < ?)';
    const args = topic ? [start] : [start, start];
    let cleanedChanged = false;
    this.latest.drop();
    this.write(() => {
      // Records below the new start that this index never read may come back as copies, later in the store.
      if (start > this.cp.nextOffset) this.judge.skippedBelow(start);
      this.judge.dropBelow(start);
      cleanedChanged =
        start > before ||
        (this.db
          .prepare(`SELECT EXISTS (SELECT 1 FROM records WHERE partition = ? AND ${gone} AND offset < ?)`)
          .pluck()
          .get(p, ...args, before) as number) === 1;
      // By key (the primary key), for the keys of the rows going only: no scan of every key.
      this.db
        .prepare(`DELETE FROM keys WHERE partition = ? AND key IN (SELECT key FROM records WHERE partition = ? AND ${gone} AND key IS NOT NULL) AND offset < ?`)
        .run(p, p, ...args, start);
      this.rows -= this.db.prepare(`DELETE FROM records WHERE partition = ? AND ${gone}`).run(p, ...args).changes;
      const physical = Math.max(start, this.cp.logStartOffset);
      let segmentsGone = 0;
      while (segmentsGone + 1 < this.segmentList.length && this.segmentList[segmentsGone + 1]!.base <= physical) segmentsGone++;
      if (segmentsGone > 0) {
        this.db.prepare('DELETE FROM segments WHERE partition = ? AND base < ?').run(p, this.segmentList[segmentsGone]!.base);
        this.segmentList.splice(0, segmentsGone);
      }
      for (const [pid, first] of this.openTransactions) if (first < physical) this.openTransactions.set(pid, physical);
      this.saveOpenTransactions();
      const firstDirty = Math.max(before, start);
      this.updateCheckpoint({
        logStartOffset: physical,
        nextOffset: Math.max(this.cp.nextOffset, physical),
        firstDirty,
        cleanBytes: this.bytesBelow(firstDirty),
      });
      if (topic && this.carryState.topicStart >= 0) this.updateCarry({ topicStart: Math.max(this.carryState.topicStart, start) });
      // A release below the log start went with its pass's copies, which lie before it.
      this.db.prepare('DELETE FROM carry_releases WHERE partition = ? AND at < ?').run(p, physical);
    });
    this.index.vacuumIfWorthIt();
    return cleanedChanged;
  }

  /** Bytes of the rows below `end`. */
  bytesBelow(end: number): number {
    return this.db.prepare('SELECT COALESCE(SUM(size), 0) FROM records WHERE partition = ? AND offset < ?').pluck().get(this.partition, end) as number;
  }

  /** Bytes of the rows in [from, to). */
  bytesIn(from: number, to: number): number {
    return this.db
      .prepare('SELECT COALESCE(SUM(size), 0) FROM records WHERE partition = ? AND offset >= ? AND offset < ?')
      .pluck()
      .get(this.partition, from, to) as number;
  }

  /** How many offsets are held below `end`, and the smallest and largest of them. */
  offsetsBelowStats(end: number): { count: number; min: number; max: number } {
    const [count, min, max] = this.db
      .prepare('SELECT COUNT(*), MIN(offset), MAX(offset) FROM records WHERE partition = ? AND offset < ?')
      .raw()
      .get(this.partition, end) as [number, number | null, number | null];
    return { count, min: min ?? 0, max: max ?? 0 };
  }

  /**
   * The offset after the last record a client may see: every row but a void one is one (a
   * survivor below the cleaner's horizon, any record past it), and no row sits at an offset
   * kcompact's own records or removed records take, so the index holds nothing a client sees from
   * there to nextOffset.
   */
  visibleEnd(): number {
    const max = this.index.lastVisible.get(this.partition) as number | undefined;
    return max === undefined ? 0 : max + 1;
  }

  /**
   * Visits the offsets held below `end`, ascending, a chunk at a time: a statement's all() costs
   * a fraction of stepping it row by row, and a chunk keeps millions of rows from being held at once.
   */
  eachOffsetBelow(end: number, visit: (offset: number) => void): void {
    const chunk = this.db.prepare('SELECT offset FROM records WHERE partition = ? AND offset > ? AND offset < ? ORDER BY offset LIMIT ?').pluck();
    for (let after = -1; ;) {
      const offsets = chunk.all(this.partition, after, end, OFFSETS_CHUNK) as number[];
      for (const offset of offsets) visit(offset);
      if (offsets.length < OFFSETS_CHUNK) return;
      after = offsets[offsets.length - 1]!;
    }
  }

  /**
   * Up to `limit` rows at or after `from` and below `end` that a carry pass copies (every row
   * but markers), ascending: offset, where the bytes are (null: at the offset), delete horizon.
   */
  carriedRows(from: number, end: number, limit: number): [number, number | null, number | null][] {
    // Rows owed their entries may hold a key twice (copies of two passes): a pass copies one.
    this.settleKeys();
    return this.db
      .prepare(
        `SELECT offset, phys, horizon FROM records WHERE partition = ? AND offset >= ? AND offset < ? AND flags & ${RecordFlag.Control} = 0 ORDER BY offset LIMIT ?`,
      )
      .raw()
      .all(this.partition, from, end, limit) as [number, number | null, number | null][];
  }

  /**
   * Where the carried records are, for the fetch view; undefined before any pass was seen
   * starting (copiesFrom -1 until one was seen whole). The marks are the first row of each copy of
   * that pass: a read of the copies for an offset starts at the copy holding it.
   */
  carriedSnapshot(): CarriedSnapshot | undefined {
    const c = this.carryState;
    if (c.pass < 0 && c.openPass < 0) return undefined;
    if (c.pass < 0)
      return {
        copiesBelow: this.cp.logStartOffset,
        topicStart: this.topicStart,
        copiesFrom: -1,
        copiesTo: -1,
        passOnly: false,
        marks: new Float64Array(0),
        ...this.releasesSeen(),
      };
    const marks = this.copyMarks(c.pass, c.passEnd);
    const copiesBelow = Math.max(this.cp.logStartOffset, c.passRelease);
    // Rows at their own offsets there are records clients wrote while the pass ran (copies' rows are at their originals', below it).
    const passOnly =
      this.db
        .prepare('SELECT EXISTS (SELECT 1 FROM records WHERE partition = ? AND offset >= ? AND offset <= ?)')
        .pluck()
        .get(this.partition, c.pass, c.passEnd) === 0;
    return {
      copiesBelow,
      topicStart: this.topicStart,
      copiesFrom: c.pass,
      copiesTo: c.passEnd,
      passOnly,
      marks,
      ...this.releasesSeen(),
    };
  }

  /**
   * The first row of each copy written between `pass` and `passEnd`, and of each stretch of rows
   * in another copy after it, as (offset, phys) pairs in offset order. A pass's copies hold
   * ascending, disjoint runs of rows, so each copy's rows are one stretch: grouped by copy in
   * SQLite, not row by row in JavaScript, where it was a large share of a new index's work. Where
   * the stretches overlap (a fenced carrier's last copy landed among the new carrier's), the rows
   * are walked one by one.
   */
  private copyMarks(pass: number, passEnd: number): Float64Array {
    const copies = this.db
      .prepare('SELECT MIN(offset), MAX(offset), phys FROM records WHERE partition = ? AND phys >= ? AND phys <= ? GROUP BY phys ORDER BY 1')
      .raw()
      .all(this.partition, pass, passEnd) as [number, number, number][];
    const marks = new Float64Array(copies.length * 2);
    for (let i = 0; i < copies.length; i++) {
      if (i > 0 && copies[i]![0] < copies[i - 1]![1]) return this.copyMarksRowByRow(pass, passEnd);
      marks[2 * i] = copies[i]![0];
      marks[2 * i + 1] = copies[i]![2];
    }
    return marks;
  }

  private copyMarksRowByRow(pass: number, passEnd: number): Float64Array {
    const marks: number[] = [];
    const rows = this.db
      .prepare('SELECT offset, phys FROM records WHERE partition = ? AND phys >= ? AND phys <= ? ORDER BY offset')
      .raw()
      .iterate(this.partition, pass, passEnd) as IterableIterator<[number, number]>;
    let last = -1;
    for (const [offset, phys] of rows) {
      if (phys === last) continue;
      marks.push(offset, phys);
      last = phys;
    }
    return Float64Array.from(marks);
  }

  private releasesSeen(): { releases?: PassReleaseSeen[] } {
    const releases = this.releases();
    return releases.length > 0 ? { releases } : {};
  }

  /** The release records the store still holds, in log order. */
  releases(): PassReleaseSeen[] {
    const rows = this.db.prepare('SELECT at, pass, released_end, groups FROM carry_releases WHERE partition = ? ORDER BY at').raw().all(this.partition) as [
      number,
      number,
      number,
      string,
    ][];
    return rows.map(([at, pass, releasedEnd, groups]) => ({ at, pass, releasedEnd, groups: JSON.parse(groups) as string[] }));
  }

  /** Whether the partition has met a conditional record (docs/tables.md): the fetch view then shows only what the index judged. */
  get conditional(): boolean {
    return this.judge.seen;
  }

  /** The first conditional record not judged yet (condition-judge.ts), or -1: cleans stop before it, and reads too. */
  get firstUnjudged(): number {
    return this.judge.firstPending;
  }

  /** What the index decided of the record at `offset`, if it was conditional. */
  verdict(offset: number): StoredVerdict {
    return this.judge.verdict(offset);
  }

  /**
   * The verdict the index will reach on a conditional record at `offset` that it has not read
   * yet, or undefined when that cannot be told now. When the index ends right there and holds no
   * record waiting, nothing can come before the record any more: ingest will judge it against
   * the very rows held now (condition-judge.ts), so the verdict is known before the fetch brings
   * it. The store's retention dropping the key's latest record meanwhile would change either.
   */
  foresee(offset: number, key: Buffer, condition: number): 'won' | 'void' | undefined {
    if (this.cp.nextOffset !== offset || this.judge.gapBelow > 0 || this.judge.firstPending >= 0 || this.asStoredUntil > 0) return undefined;
    const latest = this.latest.latest(key);
    return conditionHolds(condition, latest && !latest.tombstone ? latest.offset : null) ? 'won' : 'void';
  }

  /** The void records held at or after `from`, ascending: the fetch view hides them. */
  voidsFrom(from: number): number[] {
    return this.judge.seen ? this.judge.voidsFrom(from) : [];
  }

  /**
   * The key's latest record that is a value or a tombstone (not void, aborted or a marker), by
   * its digest; undefined when the index holds none (latest-records.ts).
   */
  latestOf(key: Buffer): LatestRecord | undefined {
    return this.latest.latest(key);
  }

  /** Where the record at `offset` is (null: at its offset) and its timestamp; undefined when the index holds no such row. */
  rowAt(offset: number): { phys: number | null; timestamp: number; flags: number } | undefined {
    const row = this.index.rowAt.get(this.partition, offset) as [number | null, number, number] | undefined;
    return row && { phys: row[0], timestamp: row[1], flags: row[2] };
  }

  /**
   * Up to `limit` rows from `from` on that a reader of the table's changes gets (src/engine/api/
   * table-reads.ts): keyed records that are values or tombstones, of one key when given, ascending:
   * offset, where the bytes are (null: at the offset).
   */
  changedRows(from: number, key: Buffer | null, limit: number): [number, number | null][] {
    const byKey = key === null ? '' : 'AND key = ?';
    const sql = `SELECT offset, phys FROM records WHERE partition = ? ${byKey} AND offset >= ? AND key IS NOT NULL AND flags & ${NOT_A_VALUE} = 0 ORDER BY offset LIMIT ?`;
    const rows = this.db.prepare(sql).raw();
    return (key === null ? rows.all(this.partition, from, limit) : rows.all(this.partition, key, from, limit)) as [number, number | null][];
  }

  /** Tombstones still held in the cleaned part, waiting for their delete horizon. */
  tombstonesPending(): number {
    return this.db
      .prepare(`SELECT COUNT(*) FROM ${PENDING_RECORDS} WHERE partition = ? AND ${PENDING_TERM} AND flags & ${RecordFlag.Control} = 0 AND offset < ?`)
      .pluck()
      .get(this.partition, this.cp.firstDirty) as number;
  }

  /**
   * ListOffsets by timestamp, for carried partitions (docs/carrying.md): their copies carry the
   * time of carrying in the store, so the store's own answer could name a copy's offset; the
   * index holds every record's original timestamp. As Kafka answers: for a timestamp, the first
   * offset whose record's timestamp is at or after it; for MAX_TIMESTAMP, the record with the
   * largest timestamp (the first of them). Both over the records the partition still holds: the
   * cleaned part's survivors and every record after it.
   */
  offsetForTime(timestamp: number): OffsetAtTime {
    const p = this.partition;
    const row =
      timestamp === MAX_TIMESTAMP
        ? this.db.prepare('SELECT offset, ts FROM records WHERE partition = ? ORDER BY ts DESC, offset ASC LIMIT 1').raw().get(p)
        : this.db.prepare('SELECT offset, ts FROM records WHERE partition = ? AND ts >= ? ORDER BY offset LIMIT 1').raw().get(p, timestamp);
    const indexedUpTo = this.cp.nextOffset;
    const unread = this.asStoredUntil > indexedUpTo;
    if (!row) return { found: null, indexedUpTo, unread };
    const [offset, ts] = row as [number, number];
    return { found: { offset, timestamp: ts }, indexedUpTo, unread };
  }

  /**
   * The rows held in [from, end), ascending, every column: for inspection and tests (a copy per
   * row; the engine's own paths read what they need).
   */
  rowsIn(from: number, end: number): IndexRow[] {
    return this.db
      .prepare(
        `SELECT offset, key, flags, ts AS timestamp, size, pid AS producerId, txn_first AS txnFirst, horizon, phys
         FROM records WHERE partition = ? AND offset >= ? AND offset < ? ORDER BY offset`,
      )
      .all(this.partition, from, end) as IndexRow[];
  }

  /** The cleaned part's key map: each key digest and the offset of the record it kept, in key order (for inspection and tests). */
  keptKeys(): { key: Buffer; offset: number }[] {
    return this.db.prepare('SELECT key, offset FROM keys WHERE partition = ? ORDER BY key').all(this.partition) as { key: Buffer; offset: number }[];
  }

  /** Gives free pages of the topic's file back to the filesystem once enough have piled up. */
  vacuumIfWorthIt(): void {
    this.index.vacuumIfWorthIt();
  }

  /**
   * Gives back what memory SQLite can of the topic's file (the pages it caches): after a clean,
   * whose reads leave cached pages that ingest rarely reads again.
   */
  shrinkMemory(): void {
    this.index.shrinkMemory();
  }

  /** Closes the topic's file: every partition of the topic, which the registry then opens again. */
  close(): void {
    this.index.close();
  }
}
