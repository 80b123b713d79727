/**
 * Each key's latest record that is a value or a tombstone (not void, aborted or a marker), for
 * the table API's reads and for judging conditional records (condition-judge.ts). The cleaned
 * part answers from its keys table; past the horizon a DigestMap does, built from the rows there
 * the first time a partition needs it and kept up at ingest from then on. Partitions no table
 * reads and no conditional record reaches pay nothing for it at ingest.
 *
 * Private to the store module: PartitionStore keeps it in step with its rows.
 */
import type Database from 'better-sqlite3';
import { DigestMap } from './digest-map.js';
import { KEY_DIGEST_BYTES } from './key-digest.js';
import { perConnection } from './per-connection.js';
import { NOT_A_VALUE, RecordFlag } from './record-flags.js';
import type { RowBuffer } from './row-buffer.js';

const statements = perConnection((db: Database.Database) => ({
  pastHorizon: db
    .prepare(`SELECT offset, key, flags FROM records WHERE partition = ? AND offset >= ? AND key IS NOT NULL AND flags & ${NOT_A_VALUE} = 0 ORDER BY offset`)
    .raw(),
  cleaned: db
    .prepare('SELECT k.offset, r.flags FROM keys k JOIN records r ON r.partition = k.partition AND r.offset = k.offset WHERE k.partition = ? AND k.key = ?')
    .raw(),
}));

export interface LatestRecord {
  offset: number;
  tombstone: boolean;
}

export class LatestRecords {
  private map: DigestMap | undefined;
  private readonly s: ReturnType<typeof statements>;

  constructor(
    db: Database.Database,
    private readonly partition: number,
    private readonly horizon: () => number,
    /** Makes the cleaned part's key entries where they are owed (PartitionStore.settleKeys). */
    private readonly settleKeys: () => void,
  ) {
    this.s = statements(db);
  }

  /** Whether ingest keeps it up (add). */
  get active(): boolean {
    return this.map !== undefined;
  }

  /** Forgets the map (rows went other than by ingest and clean): built again when next needed. */
  drop(): void {
    this.map = undefined;
  }

  /**
   * A map of the rows past the horizon, in offset order; `visit` sees each such row first, with
   * the map as of just before it, and leaves it out by answering false.
   */
  rebuild(visit?: (offset: number, key: Buffer, map: DigestMap) => boolean): void {
    const map = new DigestMap();
    for (const [offset, key, flags] of this.s.pastHorizon.iterate(this.partition, this.horizon()) as IterableIterator<[number, Buffer, number]>) {
      if (visit && !visit(offset, key, map)) continue;
      map.set(key, 0, offset, (flags & RecordFlag.Tombstone) !== 0);
    }
    this.map = map;
  }

  /** Rows [from, to) of `rows` went in at their own offsets. */
  add(rows: RowBuffer, from: number, to: number): void {
    const map = this.map;
    if (!map) return;
    for (let i = from; i < to; i++) {
      const flags = rows.flags[i]!;
      if (rows.hasKey[i] === 1 && (flags & NOT_A_VALUE) === 0) map.set(rows.keys, i * KEY_DIGEST_BYTES, rows.offsets[i]!, (flags & RecordFlag.Tombstone) !== 0);
    }
  }

  /** The key's latest record (its digest at key[at, at + 16)), or undefined when the partition holds none. */
  latest(key: Buffer, at = 0): LatestRecord | undefined {
    if (!this.map) this.rebuild();
    return this.map!.get(key, at) ?? this.inCleaned(key.subarray(at, at + KEY_DIGEST_BYTES));
  }

  /** The key's record in the cleaned part, or undefined. */
  inCleaned(key: Buffer): LatestRecord | undefined {
    this.settleKeys();
    const row = this.s.cleaned.get(this.partition, key) as [number, number] | undefined;
    return row && { offset: row[0], tombstone: (row[1] & RecordFlag.Tombstone) !== 0 };
  }
}
