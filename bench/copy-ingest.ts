/**
 * Carried copies into the index: how many copies per second a partition's index takes
 * (carried-rows.ts), by runs (PartitionStore.applyCopies) against one copy at a time (the
 * per-row path it replaced, kept in copies-one-by-one.ts), in the same process on the same rows.
 * Three cases, each on an index file of its own: a new replica's index rebuilt from copies of
 * the cleaned part, the same in the dirty part, and a carrier's or an up-to-date replica's index
 * whose rows the copies move. Each round applies every copy in transactions of --run copies,
 * one path after the other; the best round of each counts. Prints figures; asserts nothing.
 *
 *   node dist/bench/copy-ingest.js [--copies 100000] [--run 10000] [--rounds 3] [--cases cleaned,dirty,move]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { applyCopiesOneByOneTo } from '../src/engine/store/copies-one-by-one.js';
import { KEY_DIGEST_BYTES } from '../src/engine/store/key-digest.js';
import { PartitionStore } from '../src/engine/store/partition-store.js';
import { RowBuffer } from '../src/engine/store/row-buffer.js';
import { printHelpAndExit } from './bench-help.js';
import { numberFlags } from './number-flag.js';

const OPTIONS = {
  copies: { type: 'string', default: '100000' },
  run: { type: 'string', default: '10000' },
  rounds: { type: 'string', default: '3' },
  cases: { type: 'string', default: 'cleaned,dirty,move' },
  help: { type: 'boolean', default: false },
} as const;

const HELP: Record<keyof typeof OPTIONS, string> = {
  copies: 'copies applied per case, of as many keys',
  run: 'copies per ingest (one transaction, one run)',
  rounds: 'rounds per path and case; the best counts',
  cases: 'which cases to run: cleaned (a new index, the cleaned part), dirty (the same, dirty part), move (rows held)',
  help: 'print the flags',
};

const { values } = parseArgs({ options: OPTIONS });
if (values.help) printHelpAndExit('node dist/bench/copy-ingest.js [flags]', OPTIONS, HELP);
const number = numberFlags(values);
const COPIES = number('copies');
const RUN = number('run');
const ROUNDS = number('rounds');
/** Survivors are one offset in this many: a cleaned log's. */
const SPACING = 10;

/** One pass's copies of COPIES survivors of as many keys, SPACING offsets apart; a carry record holds 50 of them. */
function copiesOf(pass: number): RowBuffer {
  const rows = new RowBuffer(COPIES);
  for (let c = 0; c < COPIES; c++) {
    const i = rows.pushCopy(c * SPACING, pass + Math.floor(c / 50), 1_700_000_000_000 + c, 120, 0, -1);
    // Key digests are hashes: spread them over the key space as those are.
    for (let w = 0; w < KEY_DIGEST_BYTES; w += 4) rows.keys.writeUInt32BE(Math.imul(c + 1, 0x9e3779b1 + w * 0x85ebca6b) >>> 0, i * KEY_DIGEST_BYTES + w);
    rows.hasKey[i] = 1;
  }
  return rows;
}

/** Applies copies [from, to) of `rows` to the store's partition, in the caller's transaction; returns the rows gained. */
type Apply = (store: PartitionStore, rows: RowBuffer, from: number, to: number) => number;

const byRuns: Apply = (store, rows, from, to) => store.applyCopies(rows, from, to);

/** Applies `rows` in transactions of RUN copies; returns the seconds it took and the rows gained. */
function timed(store: PartitionStore, apply: Apply, rows: RowBuffer): { seconds: number; cpu: number; gained: number } {
  const cpuBefore = process.cpuUsage();
  const started = performance.now();
  let gained = 0;
  for (let from = 0; from < rows.length; from += RUN) {
    const to = Math.min(rows.length, from + RUN);
    gained += store.write(() => apply(store, rows, from, to));
  }
  // Entries a new index owed its copies (carried-rows.ts KeyEntries) are made at the pass's end: timed too.
  store.settleKeys();
  const cpu = process.cpuUsage(cpuBefore);
  return { seconds: (performance.now() - started) / 1000, cpu: (cpu.user + cpu.system) / 1e6, gained };
}

interface Case {
  /** As --cases names it. */
  id: string;
  name: string;
  firstDirty: number;
  /** Whether the index holds the rows already (taken from a first pass's copies, not timed). */
  held: boolean;
}

const CASES: Case[] = [
  { id: 'cleaned', name: 'rebuilt, cleaned part', firstDirty: COPIES * SPACING, held: false },
  { id: 'dirty', name: 'rebuilt, dirty part', firstDirty: 0, held: false },
  { id: 'move', name: 'rows held: a move', firstDirty: COPIES * SPACING, held: true },
];
const chosen = values.cases.split(',');
for (const id of chosen)
  if (!CASES.some((c) => c.id === id)) throw new Error(`--cases takes a comma-separated list of ${CASES.map((c) => c.id).join(', ')}, got ${id}`);

function runCase(c: Case, apply: Apply, dir: string): { rate: number; cpuRate: number } {
  const file = path.join(dir, `copies-${Math.random().toString(36).slice(2)}.sqlite`);
  const { store } = PartitionStore.open(file, { topic: 'bench', partition: 0 });
  try {
    // Where the cleaned part ends decides what a copy of a row not held does.
    store.updateCheckpoint({ firstDirty: c.firstDirty });
    if (c.held) timed(store, byRuns, copiesOf(1_000_000_000));
    const r = timed(store, apply, copiesOf(2_000_000_000));
    const want = c.held ? 0 : COPIES;
    if (r.gained !== want) throw new Error(`${c.name}: ${r.gained} rows gained, want ${want}`);
    return { rate: COPIES / r.seconds, cpuRate: COPIES / r.cpu };
  } finally {
    store.close();
    for (const f of fs.readdirSync(dir)) fs.rmSync(path.join(dir, f), { force: true });
  }
}

const fmt = (n: number) => Math.round(n).toLocaleString('en');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-copies-'));
try {
  console.log(`copy ingest: ${COPIES} copies per case, ${RUN} per transaction, best of ${ROUNDS} rounds, one core`);
  for (const c of CASES.filter((c) => chosen.includes(c.id))) {
    const best = { old: { rate: 0, cpuRate: 0 }, runs: { rate: 0, cpuRate: 0 } };
    for (let round = 0; round < ROUNDS; round++) {
      for (const [which, apply] of [
        ['old', applyCopiesOneByOneTo],
        ['runs', byRuns],
      ] as const) {
        const r = runCase(c, apply, dir);
        if (r.rate > best[which].rate) best[which] = r;
      }
    }
    console.log(
      `${c.name.padEnd(22)} one by one ${fmt(best.old.rate).padStart(9)} copies/s (${fmt(best.old.cpuRate)} per CPU s), ` +
        `by runs ${fmt(best.runs.rate).padStart(9)} copies/s (${fmt(best.runs.cpuRate)} per CPU s): ${(best.runs.rate / best.old.rate).toFixed(1)}x`,
    );
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
