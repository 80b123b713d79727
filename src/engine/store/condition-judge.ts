/**
 * Judges a partition's conditional records (condition.ts, docs/tables.md) as the index takes them
 * in, in the log's order, so that every replica reaches the same verdicts: a record's condition is
 * weighed against its key's latest record before it that is neither void, aborted nor a marker.
 *
 * A replica new to a carried store starts reading at the store's log start, and the survivors
 * below it arrive later, as the copies of the pass that let them go. Conditional records read
 * before those copies wait (verdict NULL) and are judged in offset order once the index holds
 * everything below them: when a pass ends whose release covers where it started reading, or when
 * it has read the whole store (nothing below was carried). Until then the cleaner stops before the
 * first of them and the fetch view withholds them.
 *
 * Private to the store module: PartitionStore runs it in its transactions.
 */
import type Database from 'better-sqlite3';
import { conditionHolds } from './condition.js';
import { KEY_DIGEST_BYTES } from './key-digest.js';
import type { LatestRecords } from './latest-records.js';
import { perConnection } from './per-connection.js';
import { RecordFlag } from './record-flags.js';
import type { RowBuffer } from './row-buffer.js';
import { VOID_RECORDS, VOID_TERM } from './schema.js';

const statements = perConnection((db: Database.Database) => ({
  state: db.prepare('SELECT seen, gap_below FROM conditions WHERE partition = ?').raw(),
  saveState: db.prepare('INSERT OR REPLACE INTO conditions (partition, seen, gap_below) VALUES (?, ?, ?)'),
  setVoid: db.prepare(`UPDATE records SET flags = flags | ${RecordFlag.Void} WHERE partition = ? AND offset = ?`),
  record: db.prepare('INSERT OR REPLACE INTO conditional (partition, offset, condition, won) VALUES (?, ?, ?, ?)'),
  pending: db.prepare('SELECT offset, condition FROM conditional INDEXED BY conditional_pending WHERE partition = ? AND won IS NULL').raw(),
  firstPending: db.prepare('SELECT MIN(offset) FROM conditional INDEXED BY conditional_pending WHERE partition = ? AND won IS NULL').pluck(),
  verdict: db.prepare('SELECT won FROM conditional WHERE partition = ? AND offset = ?').raw(),
  dropBelow: db.prepare('DELETE FROM conditional WHERE partition = ? AND offset < ?'),
  voidsFrom: db.prepare(`SELECT offset FROM ${VOID_RECORDS} WHERE partition = ? AND ${VOID_TERM} AND offset >= ? ORDER BY offset`).pluck(),
}));

type Statements = ReturnType<typeof statements>;

/** What the index knows of a conditional record at an offset: won, void, not judged yet, or not conditional (or unknown). */
export type StoredVerdict = 'won' | 'void' | 'pending' | 'none';

export class ConditionJudge {
  private readonly s: Statements;
  /** Whether the partition has met a conditional record. */
  seen = false;
  /** While above 0: the index lacks records below it, and conditional records wait. */
  gapBelow = 0;
  /** The first conditional record waiting for its verdict, or -1. */
  firstPending = -1;

  constructor(
    db: Database.Database,
    private readonly partition: number,
    private readonly latest: LatestRecords,
  ) {
    this.s = statements(db);
    this.reload();
  }

  reload(): void {
    const row = this.s.state.get(this.partition) as [number, number] | undefined;
    this.seen = row !== undefined && row[0] === 1;
    this.gapBelow = row?.[1] ?? 0;
    this.firstPending = (this.s.firstPending.get(this.partition) as number | null) ?? -1;
  }

  private save(): void {
    this.s.saveState.run(this.partition, this.seen ? 1 : 0, this.gapBelow);
  }

  /** The index skipped records below `start` it never read: conditional records from here wait for them. */
  skippedBelow(start: number): void {
    if (start <= this.gapBelow) return;
    this.gapBelow = start;
    this.save();
  }

  /**
   * Judges row i of `rows`, not yet stored, whose offset is past every stored row's but the
   * copies': sets its Void flag when its condition fails, or leaves it waiting.
   */
  judge(rows: RowBuffer, i: number): void {
    const offset = rows.offsets[i]!;
    const condition = rows.conditions[i]!;
    if (!this.seen) {
      this.seen = true;
      this.save();
    }
    if (this.gapBelow > 0) {
      this.s.record.run(this.partition, offset, condition, null);
      if (this.firstPending < 0) this.firstPending = offset;
      return;
    }
    const latest = this.latest.latest(rows.keys, i * KEY_DIGEST_BYTES);
    const won = conditionHolds(condition, latest && !latest.tombstone ? latest.offset : null);
    if (!won) rows.flags[i]! |= RecordFlag.Void;
    this.s.record.run(this.partition, offset, condition, won ? 1 : 0);
  }

  /**
   * The index now holds every record below where it started reading: the waiting records are
   * judged, in offset order, in one walk over the rows past the horizon (the cleaner stopped
   * before the first of them), each against the latest records before it.
   */
  gapClosed(): void {
    if (this.gapBelow === 0) return;
    const waiting = new Map(this.s.pending.all(this.partition) as [number, number][]);
    const verdicts: [number, number, boolean][] = [];
    this.latest.rebuild((offset, key, map) => {
      const condition = waiting.get(offset);
      if (condition === undefined) return true;
      const latest = map.get(key) ?? this.latest.inCleaned(key);
      const won = conditionHolds(condition, latest && !latest.tombstone ? latest.offset : null);
      verdicts.push([offset, condition, won]);
      return won;
    });
    for (const [offset, condition, won] of verdicts) {
      if (!won) this.s.setVoid.run(this.partition, offset);
      this.s.record.run(this.partition, offset, condition, won ? 1 : 0);
    }
    this.gapBelow = 0;
    this.firstPending = -1;
    this.save();
  }

  /** The store let go of everything below `start`: so do the verdicts. */
  dropBelow(start: number): void {
    this.s.dropBelow.run(this.partition, start);
    this.firstPending = (this.s.firstPending.get(this.partition) as number | null) ?? -1;
  }

  verdict(offset: number): StoredVerdict {
    const row = this.s.verdict.get(this.partition, offset) as [number | null] | undefined;
    if (row === undefined) return 'none';
    return row[0] === null ? 'pending' : row[0] === 1 ? 'won' : 'void';
  }

  /** The void records held at or after `from`, ascending. */
  voidsFrom(from: number): number[] {
    return this.s.voidsFrom.all(this.partition, from) as number[];
  }
}
