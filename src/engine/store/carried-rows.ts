/**
 * What carried copies and carry passes do to a partition's rows (docs/carrying.md). A row's
 * offset is always its original's; `phys` says where its bytes are in the store when that is a
 * copy.
 *
 * - A copy of a row the index holds moves the row's bytes there.
 * - A copy of a row the index does not hold (an index rebuilt from a store that let the original
 *   go, or one whose original went before its copy was read) becomes the row again, in the
 *   cleaned part, unless the key has a newer row there; it replaces an older one. Where the
 *   cleaned part holds no key entry yet, the entries come later, all at once (KeyEntries).
 * - A pass that ended is the carrier's word on everything below its release end: the rows there
 *   are the ones it copied. Rows there that no copy of this pass (or a later one) refreshed go,
 *   whatever this replica's own cleaner had made of them, so every replica ends up with the
 *   carrier's survivors.
 */
import { perConnection } from './per-connection.js';
import type Database from 'better-sqlite3';
import { KEY_DIGEST_BYTES } from './key-digest.js';
import { KeyStage } from './key-stage.js';
import { RecordFlag } from './record-flags.js';
import type { RowBuffer } from './row-buffer.js';

/**
 * Copies go in runs (the consecutive copies of one ingest), a statement binding many of them at
 * once: chunks of 64, the rest in chunks of 8 and then one by one, so a run of n copies takes
 * n / 64 + 14 statements of a kind at most. Each kind is prepared in 3 sizes at most, when first
 * needed: some 210 KiB of SQLite memory per index file if every kind is.
 */
const COPY_CHUNK = 64;
const SMALL_CHUNK = 8;

/** One multi-row statement, prepared per chunk size on first use, with a parameter array per size. */
class Chunked {
  private readonly made: (Database.Statement | undefined)[] = [];
  private readonly params: unknown[][] = [];

  /** `sql` gets `n` tuples of `columns` placeholders; the statement's other parameters (`tail` of them) follow them. */
  constructor(
    private readonly db: Database.Database,
    private readonly columns: number,
    private readonly tail: number,
    private readonly sql: (tuples: string) => string,
    private readonly mode: 'run' | 'pluck' | 'raw' = 'run',
  ) {}

  /** The statement for `n` tuples and its parameter array, to fill before running it. */
  bound(n: number): { statement: Database.Statement; args: unknown[] } {
    return { statement: this.statement(n), args: this.params[n]! };
  }

  private statement(n: number): Database.Statement {
    let st = this.made[n];
    if (!st) {
      const tuple = `(${new Array(this.columns).fill('?').join(',')})`;
      st = this.db.prepare(this.sql(new Array(n).fill(tuple).join(',')));
      if (this.mode === 'pluck') st.pluck();
      else if (this.mode === 'raw') st.raw();
      this.made[n] = st;
      this.params[n] = new Array(n * this.columns + this.tail);
    }
    return st;
  }

  /**
   * `count` items bound chunk by chunk: for each chunk, where it starts among them, its size, its
   * statement and that statement's parameter array, to fill and run before asking for the next.
   */
  *chunks(count: number): Generator<Chunk> {
    for (let at = 0; at < count;) {
      const n = chunkSize(count - at);
      yield { at, n, ...this.bound(n) };
      at += n;
    }
  }
}

interface Chunk {
  at: number;
  n: number;
  statement: Database.Statement;
  args: unknown[];
}

interface Statements {
  /** (offset, phys, size) → moves the rows held at those offsets. */
  move: Chunked;
  /** (offset) → the offsets among them the partition holds. */
  held: Chunked;
  /** (partition, offset, key, flags, ts, size, horizon, phys) → inserts them. */
  insertRows: Chunked;
  /** (i, key) → [i, offset] for the keys the cleaned part holds. */
  keysOf: Chunked;
  /** (partition, key, offset) → adds the entries of keys that have none. */
  addKeys: Chunked;
  /** (offset) → deletes the rows at them. */
  deleteRows: Chunked;
  /** (partition, key, offset) → sets the keys' entries. */
  setKeys: Chunked;
  anyHeld: Database.Statement;
  forgetUnrefreshedKeys: Database.Statement;
  deleteUnrefreshed: Database.Statement;
  keysFor: Database.Statement;
  buildKeys: Database.Statement;
  keyedRowsBelow: Database.Statement;
  deleteUnkept: Database.Statement;
  anyKeyEntry: Database.Statement;
  anyKeyedRowBelow: Database.Statement;
  /** The key digests a statement of a chunk binds (COPY_CHUNK at most). */
  keyStage: KeyStage;
}

const UNREFRESHED = 'partition = ? AND offset < ? AND (phys IS NULL OR phys < ?)';
/** The rows the cleaned part holds a key entry for: keyed, not markers. */
const KEYED = `key IS NOT NULL AND flags & ${RecordFlag.Control} = 0`;

const statements = perConnection((db): Statements => {
  const made: Statements = {
    move: new Chunked(
      db,
      3,
      1,
      (t) => `UPDATE records SET phys = c.column2, size = c.column3 FROM (VALUES ${t}) AS c WHERE records.partition = ? AND records.offset = c.column1`,
    ),
    held: new Chunked(db, 1, 1, (t) => `SELECT offset FROM records WHERE offset IN (${t}) AND partition = ?`, 'pluck'),
    anyHeld: db.prepare('SELECT 1 FROM records WHERE partition = ? AND offset >= ? AND offset <= ? LIMIT 1').pluck(),
    insertRows: new Chunked(db, 8, 0, (t) => `INSERT INTO records (partition, offset, key, flags, ts, size, horizon, phys) VALUES ${t}`),
    // CROSS JOIN keeps the planner from scanning the partition's keys for the few asked for.
    keysOf: new Chunked(
      db,
      2,
      1,
      (t) => `SELECT c.column1, k.offset FROM (VALUES ${t}) AS c CROSS JOIN keys k ON k.partition = ? AND k.key = c.column2`,
      'raw',
    ),
    deleteRows: new Chunked(db, 1, 1, (t) => `DELETE FROM records WHERE offset IN (${t}) AND partition = ?`),
    setKeys: new Chunked(db, 3, 0, (t) => `INSERT OR REPLACE INTO keys (partition, key, offset) VALUES ${t}`),
    addKeys: new Chunked(db, 3, 0, (t) => `INSERT INTO keys (partition, key, offset) VALUES ${t} ON CONFLICT DO NOTHING`),
    // By key (the primary key), for the keys of the rows going only, and only where the key's entry is such a row.
    forgetUnrefreshedKeys: db.prepare(
      `DELETE FROM keys WHERE partition = ? AND key IN (SELECT key FROM records WHERE ${UNREFRESHED} AND key IS NOT NULL)
       AND EXISTS (SELECT 1 FROM records r WHERE r.partition = keys.partition AND r.offset = keys.offset AND r.offset < ? AND (r.phys IS NULL OR r.phys < ?))`,
    ),
    deleteUnrefreshed: db.prepare(`DELETE FROM records WHERE ${UNREFRESHED}`),
    // In key order (and a key's offsets ascending, the last replacing the others): the b-tree's pages are written one after another.
    keysFor: db.prepare(
      `INSERT OR REPLACE INTO keys (partition, key, offset) SELECT partition, key, offset FROM records
       WHERE partition = ? AND offset >= ? AND offset < ? AND ${KEYED} ORDER BY key, offset`,
    ),
    // In the b-tree's order (a sort, cheaper than a GROUP BY's temporary b-tree), a key's greatest
    // offset first: the key's other rows change nothing, so the changes count the keys. An entry
    // already there (none is, where entries were owed) keeps the greater offset; deleteUnkept
    // makes the rows agree.
    buildKeys: db.prepare(
      `INSERT INTO keys (partition, key, offset) SELECT ?, key, offset FROM records WHERE partition = ? AND offset < ? AND ${KEYED} ORDER BY key, offset DESC
       ON CONFLICT DO UPDATE SET offset = excluded.offset WHERE excluded.offset > keys.offset`,
    ),
    keyedRowsBelow: db.prepare(`SELECT COUNT(*) FROM records WHERE partition = ? AND offset < ? AND ${KEYED}`).pluck(),
    deleteUnkept: db.prepare(
      `DELETE FROM records WHERE partition = ? AND offset < ? AND ${KEYED}
       AND offset <> (SELECT k.offset FROM keys k WHERE k.partition = ? AND k.key = records.key)`,
    ),
    anyKeyEntry: db.prepare('SELECT 1 FROM keys WHERE partition = ? LIMIT 1').pluck(),
    anyKeyedRowBelow: db.prepare(`SELECT 1 FROM records WHERE partition = ? AND offset < ? AND ${KEYED} LIMIT 1`).pluck(),
    keyStage: new KeyStage(COPY_CHUNK),
  };
  return made;
});

/** How many of `left` items the next statement binds. */
function chunkSize(left: number): number {
  return left >= COPY_CHUNK ? COPY_CHUNK : left >= SMALL_CHUNK ? SMALL_CHUNK : 1;
}

/**
 * Applies the copies in rows [from, to) of `rows` (in the caller's transaction), as applying them
 * one by one in that order would; returns how many rows the partition gained, net. A pass's copies
 * come in offset order; one fetch may hold the copies of two passes, so the offsets can start
 * again: each stretch of ascending offsets is a run of its own.
 */
export function applyCopies(
  db: Database.Database,
  partition: number,
  rows: RowBuffer,
  from: number,
  to: number,
  firstDirty: number,
  keys: KeyEntries = 'now',
): number {
  const s = statements(db);
  let gained = 0;
  for (let i = from; i < to;) {
    let j = i + 1;
    while (j < to && rows.offsets[j]! > rows.offsets[j - 1]!) j++;
    gained += applyRun(s, partition, rows, i, j, firstDirty, keys);
    i = j;
  }
  return gained;
}

/**
 * When the cleaned part's key entries are made: 'now', copy by copy, or 'later', by buildKeys
 * once the copies are in. 'later' is for a cleaned part that holds no entries yet (an index
 * reading its first pass): its copies go in as rows only, every one of them, and buildKeys then
 * keeps each key's greatest offset, which is what applying them one by one would have left. The
 * entries then go in in the b-tree's order, in one statement, instead of at random all over it.
 */
export type KeyEntries = 'now' | 'later';

/**
 * Applies copies in strictly ascending offset order, by sets. Each finds its row held or not as
 * the partition was before the run: one by one, a copy inserts only at its own offset and deletes
 * only below it. So the held rows move; the others of the dirty part go in; of the others in the
 * cleaned part only the last copy of each key counts (each would replace the one before), and it
 * goes in unless the key's entry is newer, replacing the row the entry names.
 */
function applyRun(s: Statements, partition: number, rows: RowBuffer, from: number, to: number, firstDirty: number, keys: KeyEntries): number {
  const unheld: number[] = [];
  // A new index reading a pass holds none of the rows its copies are of: one look says so, for
  // the whole run, instead of a look for each copy.
  if (s.anyHeld.get(partition, rows.offsets[from], rows.offsets[to - 1]) === undefined) {
    for (let i = from; i < to; i++) unheld.push(i);
  } else moveHeld(s, partition, rows, from, to, unheld);
  if (unheld.length === 0) return 0;
  if (keys === 'later') return insertCopies(s, partition, rows, unheld);
  return placeUnheld(s, partition, rows, from, to, firstDirty, unheld);
}

/** Moves the rows the copies in [from, to) are of where the index holds them; collects the others in `unheld`. */
function moveHeld(s: Statements, partition: number, rows: RowBuffer, from: number, to: number, unheld: number[]): void {
  for (const { at: chunkAt, n, statement: move, args } of s.move.chunks(to - from)) {
    const at = from + chunkAt;
    for (let j = 0; j < n; j++) {
      args[3 * j] = rows.offsets[at + j];
      args[3 * j + 1] = rows.phys[at + j];
      args[3 * j + 2] = rows.sizes[at + j];
    }
    args[3 * n] = partition;
    const moved = move.run(args).changes;
    if (moved === 0) for (let j = 0; j < n; j++) unheld.push(at + j);
    else if (moved < n) {
      const { statement: held, args: heldArgs } = s.held.bound(n);
      for (let j = 0; j < n; j++) heldArgs[j] = rows.offsets[at + j];
      heldArgs[n] = partition;
      const found = new Set(held.all(heldArgs) as number[]);
      for (let j = 0; j < n; j++) if (!found.has(rows.offsets[at + j]!)) unheld.push(at + j);
    }
  }
}

/** The copies the index holds no row of: in the dirty part they go in, in the cleaned part by their keys' entries. */
function placeUnheld(s: Statements, partition: number, rows: RowBuffer, from: number, to: number, firstDirty: number, unheld: readonly number[]): number {
  const dirty: number[] = [];
  const cleaned: number[] = [];
  for (const i of unheld) (rows.offsets[i]! >= firstDirty ? dirty : cleaned).push(i);
  let gained = insertCopies(s, partition, rows, dirty);
  if (cleaned.length === 0) return gained;
  const last = lastOfEachKey(rows, from, cleaned);
  // Those go in whose key has no entry, or an older one: they replace its row. A key without an
  // entry (all of them, for an index reading its first pass) gets the copy's at once, in the
  // same statement that finds it has none; only a chunk where some key had one is looked up.
  const taken = new Uint8Array(to - from);
  for (const i of last) taken[i - from] = 1;
  const replaced: number[] = [];
  const reentered: number[] = [];
  for (const { at, n, statement: addKeys, args } of s.addKeys.chunks(last.length)) {
    fillEntries(s, args, partition, rows, last, at, n);
    if (addKeys.run(args).changes === n) continue;
    const { statement: keysOf, args: lookup } = s.keysOf.bound(n);
    for (let j = 0; j < n; j++) {
      lookup[2 * j] = last[at + j];
      lookup[2 * j + 1] = s.keyStage.put(j, rows.keys, last[at + j]!);
    }
    lookup[2 * n] = partition;
    for (const [i, offset] of keysOf.all(lookup) as [number, number][]) {
      // The entry just added: the index holds no row at a copy's offset, so no older entry names it.
      if (offset === rows.offsets[i]) continue;
      if (offset > rows.offsets[i]!) taken[i - from] = 0;
      else {
        replaced.push(offset);
        reentered.push(i);
      }
    }
  }
  const gone = Float64Array.from(replaced).sort();
  for (const { at, n, statement: del, args } of s.deleteRows.chunks(gone.length)) {
    for (let j = 0; j < n; j++) args[j] = gone[at + j];
    args[n] = partition;
    gained -= del.run(args).changes;
  }
  const inserted: number[] = [];
  for (let i = from; i < to; i++) if (taken[i - from] === 1) inserted.push(i);
  gained += insertCopies(s, partition, rows, inserted);
  for (const { at, n, statement: setKeys, args } of s.setKeys.chunks(reentered.length)) {
    fillEntries(s, args, partition, rows, reentered, at, n);
    setKeys.run(args);
  }
  return gained;
}

/** (partition, key, offset) of the copies which[at .. at + n) into a statement's parameters. */
function fillEntries(s: Statements, args: unknown[], partition: number, rows: RowBuffer, which: readonly number[], at: number, n: number): void {
  for (let j = 0; j < n; j++) {
    const i = which[at + j]!;
    args[3 * j] = partition;
    args[3 * j + 1] = s.keyStage.put(j, rows.keys, i);
    args[3 * j + 2] = rows.offsets[i];
  }
}

/** Room for a row's place in its run beside its key's first bytes in a sort key: 2^29 rows, more than a RowBuffer can hold. */
const PLACES = 2 ** 29;

/**
 * Of the copies `which` (rows of a run from row `from`, in offset order), the last of each key,
 * in the order of the keys' b-tree, near enough: by the first 24 bits of their key digests.
 * Digests are hashes; in their order the b-tree's pages are read and written one after another
 * rather than at random, a large share of the work. The sort also finds a key's copies: they
 * share its 24 bits, which few other keys do, so no map of every key is needed.
 */
function lastOfEachKey(rows: RowBuffer, from: number, which: readonly number[]): number[] {
  const order = new Float64Array(which.length);
  for (let c = 0; c < which.length; c++) {
    const i = which[c]!;
    const k = i * KEY_DIGEST_BYTES;
    order[c] = ((rows.keys[k]! << 16) | (rows.keys[k + 1]! << 8) | rows.keys[k + 2]!) * PLACES + (i - from);
  }
  order.sort();
  const last: number[] = [];
  for (let a = 0; a < order.length;) {
    const prefix = Math.floor(order[a]! / PLACES);
    let b = a + 1;
    while (b < order.length && Math.floor(order[b]! / PLACES) === prefix) b++;
    // Within a prefix the copies are in offset order: one is its key's last unless a later one has
    // its key. A large group (one key copied many times over) is sorted out by a map instead.
    if (b - a > SMALL_GROUP) lastInGroup(rows, from, order, a, b, last);
    else {
      for (let x = a; x < b; x++) {
        const i = from + (order[x]! % PLACES);
        let later = false;
        for (let y = x + 1; y < b && !later; y++) later = sameKey(rows, i, from + (order[y]! % PLACES));
        if (!later) last.push(i);
      }
    }
    a = b;
  }
  return last;
}

/** Copies sharing a prefix beyond which a map finds each key's last. */
const SMALL_GROUP = 16;

/** lastOfEachKey for the copies order[a, b) sharing a prefix: each key's last, in the order of the keys' last copies. */
function lastInGroup(rows: RowBuffer, from: number, order: Float64Array, a: number, b: number, last: number[]): void {
  const lastOf = new Map<string, number>();
  for (let x = a; x < b; x++) {
    const i = from + (order[x]! % PLACES);
    const key = rows.keys.toString('latin1', i * KEY_DIGEST_BYTES, (i + 1) * KEY_DIGEST_BYTES);
    lastOf.delete(key);
    lastOf.set(key, i);
  }
  for (const i of lastOf.values()) last.push(i);
}

function sameKey(rows: RowBuffer, i: number, j: number): boolean {
  return rows.keys.compare(rows.keys, j * KEY_DIGEST_BYTES, (j + 1) * KEY_DIGEST_BYTES, i * KEY_DIGEST_BYTES, (i + 1) * KEY_DIGEST_BYTES) === 0;
}

/** Inserts the rows of the copies at `which` (row indexes, in offset order); returns how many. */
function insertCopies(s: Statements, partition: number, rows: RowBuffer, which: readonly number[]): number {
  for (const { at, n, statement: insert, args } of s.insertRows.chunks(which.length)) {
    for (let j = 0; j < n; j++) {
      const i = which[at + j]!;
      const horizon = rows.horizons[i]!;
      const p = 8 * j;
      args[p] = partition;
      args[p + 1] = rows.offsets[i];
      args[p + 2] = s.keyStage.put(j, rows.keys, i);
      args[p + 3] = rows.flags[i];
      args[p + 4] = rows.timestamps[i];
      args[p + 5] = rows.sizes[i];
      args[p + 6] = horizon < 0 ? null : horizon;
      args[p + 7] = rows.phys[i];
    }
    insert.run(args);
  }
  return which.length;
}

/**
 * A pass that started at `pass` ended, releasing [.., releaseEnd): the rows below releaseEnd that
 * no copy of it refreshed go, and what stays there is cleaned (keys made for the rows this
 * replica had not cleaned yet). Returns the rows deleted.
 */
export function prunePass(db: Database.Database, partition: number, pass: number, releaseEnd: number, firstDirty: number, keys: KeyEntries = 'now'): number {
  const s = statements(db);
  if (keys === 'later') return s.deleteUnrefreshed.run(partition, releaseEnd, pass).changes;
  s.forgetUnrefreshedKeys.run(partition, partition, releaseEnd, pass, releaseEnd, pass);
  const deleted = s.deleteUnrefreshed.run(partition, releaseEnd, pass).changes;
  if (firstDirty < releaseEnd) s.keysFor.run(partition, firstDirty, releaseEnd);
  return deleted;
}

/**
 * The key entries of the rows below `end` that copies put in with their entries owed
 * (KeyEntries 'later'), in the caller's transaction: each key's greatest offset gets the entry,
 * and its other rows there go, as a copy of a key with a newer entry would not have gone in, or
 * would have replaced an older one. Returns the rows deleted.
 */
export function buildKeys(db: Database.Database, partition: number, end: number): number {
  const s = statements(db);
  const entries = s.buildKeys.run(partition, partition, end).changes;
  const rows = s.keyedRowsBelow.get(partition, end) as number;
  // One pass's copies hold a key once: more rows than keys only where copies of two passes met.
  return rows === entries ? 0 : s.deleteUnkept.run(partition, end, partition).changes;
}

/** Whether the partition's cleaned part (below `end`) holds keyed rows and no key entry: copies put in with their entries owed. */
export function keysOwed(db: Database.Database, partition: number, end: number): boolean {
  const s = statements(db);
  return s.anyKeyEntry.get(partition) === undefined && s.anyKeyedRowBelow.get(partition, end) !== undefined;
}

/** Whether the partition has no key entry at all: copies into its cleaned part may owe theirs (KeyEntries 'later'). */
export function noKeyEntries(db: Database.Database, partition: number): boolean {
  return statements(db).anyKeyEntry.get(partition) === undefined;
}
