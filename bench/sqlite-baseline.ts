/**
 * SQLite's own speed at what an index of N live keys holds, measured in the bench's process: N
 * rows written in offset order by the ingest's own statement and key stage
 * (TopicIndex.insertChunk, 64 rows a call, about 10,000 a transaction), then each key's entry
 * made by one INSERT ... SELECT in key order, as a new index's first pass makes them. Nothing is fetched or parsed: this is the floor
 * of a new replica's worker CPU per record, the baseline its records per worker CPU second are
 * measured against in the same run (the machine's speed moves from day to day, and the ratio
 * with it far less than either figure).
 */
import { randomFillSync } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { INSERT_CHUNK, INSERT_COLUMNS, TopicIndex } from '../src/engine/store/topic-index.js';
import { KEY_DIGEST_BYTES } from '../src/engine/store/key-digest.js';

export interface SqliteBaseline {
  records: number;
  cpuSeconds: number;
  /** Records (a row and its key's entry) per CPU second. */
  perCpuSecond: number;
}

/** About the 10,000 rows per transaction of a copy run, in whole statements. */
const TRANSACTION_ROWS = Math.round(10_000 / INSERT_CHUNK) * INSERT_CHUNK;

/** Rows and key entries for `records` distinct keys in a fresh index file under `dir`; the best of `rounds`. */
export function sqliteBaseline(dir: string, records: number, rounds = 3): SqliteBaseline {
  const n = Math.max(INSERT_CHUNK, Math.ceil(records / INSERT_CHUNK) * INSERT_CHUNK);
  const digests = randomFillSync(Buffer.alloc(n * KEY_DIGEST_BYTES));
  let best = Infinity;
  for (let round = 0; round < rounds; round++) best = Math.min(best, oneRound(dir, digests, n));
  return { records: n, cpuSeconds: best, perCpuSecond: n / best };
}

function oneRound(dir: string, digests: Buffer, n: number): number {
  const file = path.join(fs.mkdtempSync(path.join(dir, 'kcompact-sqlite-baseline-')), 'baseline.db');
  const { index } = TopicIndex.open(file, 'baseline');
  try {
    const { chunkParams: params, keyStage } = index;
    const insertRows = index.db.transaction((from: number, to: number) => {
      for (let i = from; i < to; i += INSERT_CHUNK) {
        // The digests are bound as ingest binds them: views into the index's key stage, no Buffer per row.
        keyStage.putRun(digests, i, INSERT_CHUNK);
        for (let j = 0; j < INSERT_CHUNK; j++) {
          const at = j * INSERT_COLUMNS;
          const offset = i + j;
          params[at] = 0;
          params[at + 1] = offset;
          params[at + 2] = keyStage.view(j);
          params[at + 3] = 0;
          params[at + 4] = 1_700_000_000_000 + offset;
          params[at + 5] = 100;
          params[at + 6] = null;
          params[at + 7] = null;
        }
        index.insertChunk.run(params);
      }
    });
    const buildKeys = index.db.prepare('INSERT INTO keys (partition, key, offset) SELECT partition, key, offset FROM records WHERE partition = 0 ORDER BY key');
    const started = process.cpuUsage();
    for (let from = 0; from < n; from += TRANSACTION_ROWS) insertRows(from, Math.min(n, from + TRANSACTION_ROWS));
    buildKeys.run();
    const used = process.cpuUsage(started);
    return (used.user + used.system) / 1e6;
  } finally {
    index.close();
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  }
}
