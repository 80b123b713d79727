/*
 * How large a topic's index file grows while its keys are rewritten, against the same rows
 * written compactly. Rows are in (partition, offset) order, so a rewrite appends at its
 * partition's end while the row it supersedes is deleted wherever it lies: pages thin out, and
 * SQLite merges a page with its neighbours only once it is about two-thirds empty. The file grows
 * until the oldest pages have thinned that far, about one key lifetime (keys / rewrites per
 * second), then holds.
 *
 * The real file (TopicIndex: schema, pragmas, incremental vacuum as the cleaner runs it), the
 * cleaner's row shapes written straight into it (DirectRows): a bulk writes every key twice (as
 * `make bench-scale` loads its topics) and a clean removes the first writes; then each step
 * rewrites random keys, deletes the rows they supersede, updates the cleaned key map and lets
 * the file give free pages back. Prints the pages in use per quarter lifetime, then VACUUMs for
 * the compact size. Asserts nothing.
 *
 *   node dist/bench/index-fill.js [--keys 200000] [--partitions 100] [--rewrites 2000] [--lifetimes 4]
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DirectRows } from '../src/engine/store/direct-rows.js';
import { TopicIndex } from '../src/engine/store/topic-index.js';
import { printHelpAndExit } from './bench-help.js';
import { numberFlags } from './number-flag.js';
import { table } from './text-table.js';

const OPTIONS = {
  keys: { type: 'string', default: '200000' },
  partitions: { type: 'string', default: '100' },
  rewrites: { type: 'string', default: '2000' },
  lifetimes: { type: 'string', default: '4' },
  help: { type: 'boolean', default: false },
} as const;

const HELP: Record<keyof typeof OPTIONS, string> = {
  keys: 'distinct keys, each held once after the bulk',
  partitions: 'partitions of the topic, keys spread over them',
  rewrites: 'keys rewritten per step (one transaction, then a vacuum check)',
  lifetimes: 'how long to run, in key lifetimes (keys / rewrites steps)',
  help: 'print the flags',
};

const { values } = parseArgs({ options: OPTIONS });
if (values.help) printHelpAndExit('node dist/bench/index-fill.js [flags]', OPTIONS, HELP);
const number = numberFlags(values);
const KEYS = number('keys');
const PARTITIONS = number('partitions');
const REWRITES = number('rewrites');
const LIFETIMES = number('lifetimes');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-index-fill-'));
const { index } = TopicIndex.open(path.join(dir, 'fill.sqlite'), 'fill');
try {
  const direct = new DirectRows(index);
  const digests = Array.from({ length: KEYS }, () => crypto.randomBytes(16));
  const heldAt = new Float64Array(KEYS).fill(-1);
  const nextOffset = new Float64Array(PARTITIONS);
  const write = (key: number) => {
    const partition = key % PARTITIONS;
    const offset = nextOffset[partition]!++;
    direct.addRecord(partition, offset, digests[key]!, Date.now());
    return offset;
  };
  const keep = (key: number, offset: number) => {
    const partition = key % PARTITIONS;
    if (heldAt[key]! >= 0) direct.deleteRecordAt(partition, heldAt[key]!);
    direct.setKey(partition, digests[key]!, offset);
    heldAt[key] = offset;
  };
  const { pageSize } = direct.pageCounts();

  direct.transaction(() => {
    for (let pass = 0; pass < 2; pass++) for (let key = 0; key < KEYS; key++) keep(key, write(key));
  });
  index.vacuumIfWorthIt();

  const rows = [['key lifetimes', 'pages in use', 'free pages', 'bytes per key in use', 'file MiB']];
  const report = (lifetimes: string) => {
    const { pages, free } = direct.pageCounts();
    const used = pages - free;
    rows.push([lifetimes, String(used), String(free), ((used * pageSize) / KEYS).toFixed(1), ((pages * pageSize) / 2 ** 20).toFixed(1)]);
    return used;
  };
  report('0 (after the bulk)');
  const stepsPerLifetime = Math.max(1, Math.round(KEYS / REWRITES));
  const quarter = Math.max(1, Math.round(stepsPerLifetime / 4));
  let lastUsed = 0;
  for (let step = 1; step <= stepsPerLifetime * LIFETIMES; step++) {
    direct.transaction(() => {
      for (let i = 0; i < REWRITES; i++) {
        const key = Math.floor(Math.random() * KEYS);
        keep(key, write(key));
      }
    });
    index.vacuumIfWorthIt();
    if (step % quarter === 0) lastUsed = report((step / stepsPerLifetime).toFixed(2));
  }
  direct.vacuum();
  const compact = direct.pageCounts().pages;
  console.log(
    `index fill: ${KEYS} keys over ${PARTITIONS} partitions, ${REWRITES} random rewrites per step, ${LIFETIMES} key lifetimes of ${stepsPerLifetime} steps`,
  );
  console.log(table(rows));
  console.log(
    `compact (after VACUUM): ${compact} pages, ${((compact * pageSize) / KEYS).toFixed(1)} bytes per key; in use at the end / compact: ${(lastUsed / compact).toFixed(2)}x`,
  );
} finally {
  index.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
