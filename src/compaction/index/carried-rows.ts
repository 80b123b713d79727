/**
 * What carried copies and carry passes do to a partition's rows (docs/carrying.md). A row's
 * offset is always its original's; `phys` says where its bytes are in the store when that is a
 * copy.
 *
 * - A copy of a row the index holds moves the row's bytes there.
 * - A copy of a row the index does not hold (an index rebuilt from a store that let the original
 *   go, or one whose original went before its copy was read) becomes the row again, in the
 *   cleaned part, unless the key has a newer row there; it replaces an older one.
 * - A pass that ended is the carrier's word on everything below its release end: the rows there
 *   are the ones it copied. Rows there that no copy of this pass (or a later one) refreshed go,
 *   whatever this replica's own cleaner had made of them, so every replica ends up with the
 *   carrier's survivors.
 */
import type Database from 'better-sqlite3';
import { KEY_DIGEST_BYTES } from './key-digest.js';
import { RecordFlag } from './record-flags.js';
import type { RowBuffer } from './row-buffer.js';

interface Statements {
  movePhys: Database.Statement;
  latestOfKey: Database.Statement;
  deleteRow: Database.Statement;
  insertRow: Database.Statement;
  setKey: Database.Statement;
  forgetUnrefreshedKeys: Database.Statement;
  deleteUnrefreshed: Database.Statement;
  keysFor: Database.Statement;
}

const prepared = new WeakMap<Database.Database, Statements>();

const UNREFRESHED = 'partition = ? AND offset < ? AND (phys IS NULL OR phys < ?)';

function statements(db: Database.Database): Statements {
  const known = prepared.get(db);
  if (known) return known;
  const made: Statements = {
    movePhys: db.prepare('UPDATE records SET phys = ?, size = ? WHERE partition = ? AND offset = ?'),
    latestOfKey: db.prepare('SELECT offset FROM keys WHERE partition = ? AND key = ?').pluck(),
    deleteRow: db.prepare('DELETE FROM records WHERE partition = ? AND offset = ?'),
    insertRow: db.prepare('INSERT INTO records (partition, offset, key, flags, ts, size, horizon, phys) VALUES (?, ?, ?, ?, ?, ?, ?, ?)'),
    setKey: db.prepare('INSERT OR REPLACE INTO keys (partition, key, offset) VALUES (?, ?, ?)'),
    // By key (the primary key), for the keys of the rows going only, and only where the key's entry is such a row.
    forgetUnrefreshedKeys: db.prepare(
      `DELETE FROM keys WHERE partition = ? AND key IN (SELECT key FROM records WHERE ${UNREFRESHED} AND key IS NOT NULL)
       AND EXISTS (SELECT 1 FROM records r WHERE r.partition = keys.partition AND r.offset = keys.offset AND r.offset < ? AND (r.phys IS NULL OR r.phys < ?))`,
    ),
    deleteUnrefreshed: db.prepare(`DELETE FROM records WHERE ${UNREFRESHED}`),
    keysFor: db.prepare(
      `INSERT OR REPLACE INTO keys (partition, key, offset) SELECT partition, key, offset FROM records
       WHERE partition = ? AND offset >= ? AND offset < ? AND key IS NOT NULL AND flags & ${RecordFlag.Control} = 0`,
    ),
  };
  prepared.set(db, made);
  return made;
}

/**
 * Applies the copy in row `i` of `rows` (in the caller's transaction); returns how many rows the
 * partition gained (0 or 1).
 */
export function applyCopy(db: Database.Database, partition: number, rows: RowBuffer, i: number, firstDirty: number): number {
  const s = statements(db);
  const offset = rows.offsets[i]!;
  const phys = rows.phys[i]!;
  const size = rows.sizes[i]!;
  if (s.movePhys.run(phys, size, partition, offset).changes === 1) return 0;
  const key = rows.keys.subarray(i * KEY_DIGEST_BYTES, (i + 1) * KEY_DIGEST_BYTES);
  const cleaned = offset < firstDirty;
  let gained = 1;
  if (cleaned) {
    const latest = s.latestOfKey.get(partition, key) as number | undefined;
    if (latest !== undefined && latest > offset) return 0;
    if (latest !== undefined) gained -= s.deleteRow.run(partition, latest).changes;
  }
  const horizon = rows.horizons[i]!;
  s.insertRow.run(partition, offset, Buffer.from(key), rows.flags[i]!, rows.timestamps[i]!, size, horizon < 0 ? null : horizon, phys);
  if (cleaned) s.setKey.run(partition, Buffer.from(key), offset);
  return gained;
}

/**
 * A pass that started at `pass` ended, releasing [.., releaseEnd): the rows below releaseEnd that
 * no copy of it refreshed go, and what stays there is cleaned (keys made for the rows this
 * replica had not cleaned yet). Returns the rows deleted.
 */
export function prunePass(db: Database.Database, partition: number, pass: number, releaseEnd: number, firstDirty: number): number {
  const s = statements(db);
  s.forgetUnrefreshedKeys.run(partition, partition, releaseEnd, pass, releaseEnd, pass);
  const deleted = s.deleteUnrefreshed.run(partition, releaseEnd, pass).changes;
  if (firstDirty < releaseEnd) s.keysFor.run(partition, firstDirty, releaseEnd);
  return deleted;
}
