/*
 * The fetch view's two read paths on one partition's log of uniformly random updates over a key
 * space, filtered to the latest record per key (issue 3 (b)'s shape by default):
 *   filter:  the raw log's last window (from the first survivor's batch on) through the filter,
 *            as a first read does it (visible-records.ts), in one pass;
 *   cached:  the same survivors read again from the view cache, as a client reads them: answers
 *            of --answer-bytes from offset 0 to the end (view-cache.ts's run, the answer's
 *            assembly, the records joined into one buffer).
 *   head:    the same log as the uncleaned head of a compacted partition, written by an
 *            idempotent client (batches with a producer, passed untouched) and by one without
 *            (each batch's first record is looked at: it could be kcompact's own carry records).
 *   share:   the look a ShareFetch answer of a carried partition gets for copies a share group
 *            is owed (share-copies.ts), over the same window holding none, as a share of the
 *            filter's time.
 * Prints ms per pass of each (informative, not a test). Small batches show the view's cost per
 * batch: `--batch 4 --records 300000 --keys 100000`; `--codec 3` writes the log with lz4.
 *   node dist/bench/view-filter.js [--passes 50] [--batch 500] [--records 1000000] [--keys 10000] [--codec 0]
 */
import { parseArgs } from 'node:util';
import { encodeBatch, type RecordInput } from '../src/protocol/records/batch.js';
import { cachedRecords, visibleRecords, type ViewedBatch } from '../src/compaction/fetch-view/visible-records.js';
import { ViewCache } from '../src/compaction/fetch-view/view-cache.js';
import { sharedCopies } from '../src/compaction/fetch-view/share-copies.js';
import { firstAtLeast } from '../src/common/sorted-search.js';
import { printHelpAndExit } from './bench-help.js';
import { numberFlags } from './number-flag.js';

const OPTIONS = {
  passes: { type: 'string', default: '50' },
  records: { type: 'string', default: '1000000' },
  keys: { type: 'string', default: '10000' },
  batch: { type: 'string', default: '500' },
  'value-size': { type: 'string', default: '100' },
  'answer-bytes': { type: 'string', default: String(1 << 20) },
  codec: { type: 'string', default: '0' },
  help: { type: 'boolean', default: false },
} as const;
const HELP: Record<keyof typeof OPTIONS, string> = {
  passes: 'timed passes of each path (after 5 warm-up passes)',
  records: 'records in the log',
  keys: 'keys, updated uniformly at random',
  batch: 'records per batch',
  'value-size': 'value bytes',
  'answer-bytes': "bytes per answer of the cached path (a client's partition limit)",
  codec: 'codec of the log (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)',
  help: 'print the flags',
};
const { values: args } = parseArgs({ options: OPTIONS });
if (args.help) printHelpAndExit('node dist/bench/view-filter.js [flags]', OPTIONS, HELP);
const number = numberFlags(args);
const passes = number('passes');
const RECORDS = number('records');
const KEYS = number('keys');
const PER_BATCH = number('batch');
const answerBytes = number('answer-bytes');

let seed = 7;
const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
const keys = new Int32Array(RECORDS);
const latest = new Int32Array(KEYS).fill(-1);
for (let i = 0; i < RECORDS; i++) latest[(keys[i] = Math.floor(rnd() * KEYS))] = i;
const survivorList = [...latest].filter((o) => o >= 0).sort((a, b) => a - b);
const first = survivorList[0]!;
const from = first - (first % PER_BATCH);
const survivors = Float64Array.from(survivorList);

const value = Buffer.alloc(number('value-size', { min: 0 }), 'v');
const codec = number('codec', { min: 0 });
const parts: Buffer[] = [];
const withProducer: Buffer[] = [];
for (let base = from; base < RECORDS; base += PER_BATCH) {
  const count = Math.min(PER_BATCH, RECORDS - base);
  const recs: RecordInput[] = [];
  for (let i = 0; i < count; i++)
    recs.push({ timestampDelta: 0, offsetDelta: i, key: Buffer.from(`key-${String(keys[base + i]).padStart(8, '0')}`), value, headers: [] });
  const fields = {
    baseOffset: BigInt(base),
    partitionLeaderEpoch: 0,
    attributes: 0,
    lastOffsetDelta: count - 1,
    baseTimestamp: 0n,
    maxTimestamp: 0n,
    producerId: -1n,
    producerEpoch: -1,
    baseSequence: -1,
  };
  parts.push(await encodeBatch(fields, recs, codec));
  withProducer.push(await encodeBatch({ ...fields, producerId: 1000n, producerEpoch: 0, baseSequence: base - from }, recs, codec));
}
const records = Buffer.concat(parts);
const idempotent = Buffer.concat(withProducer);

const visibility = { cleanedUpTo: RECORDS, survivors: (a: number, b: number) => survivors.slice(firstAtLeast(survivors, a), firstAtLeast(survivors, b)) };

async function timed(what: () => Promise<unknown> | unknown): Promise<number> {
  for (let i = 0; i < 5; i++) await what();
  const t0 = performance.now();
  for (let i = 0; i < passes; i++) await what();
  return (performance.now() - t0) / passes;
}

const filterMs = await timed(() => visibleRecords(records, visibility, 0));

// The cache holds what the filter made of the window, as a first read leaves it.
const snapshot = {};
const cache = new ViewCache(1 << 30);
const viewed: ViewedBatch[] = [];
const seen = await visibleRecords(records, visibility, 0, undefined, (b) => viewed.push(b));
cache.record('t', 0, snapshot, viewed);
const kept = seen.batches.reduce((n, b) => n + b.length, 0);
const lastOffset = viewed[viewed.length - 1]!.last;
let answers = 0;
const cachedMs = await timed(() => {
  answers = 0;
  for (let offset = from; offset <= lastOffset;) {
    const budget = { maxBytes: answerBytes, oneAnyway: true };
    const out = cachedRecords(cache.from('t', 0, snapshot, offset, from, budget)!, budget);
    Buffer.concat(out.batches);
    answers++;
    offset = out.end + 1;
  }
});

const head = { cleanedUpTo: 0, survivors: () => new Float64Array(0) };
const headMs = await timed(() => visibleRecords(idempotent, head, 0));
const lookedMs = await timed(() => visibleRecords(records, head, 0));

const acquired = [{ firstOffset: BigInt(from), lastOffset: BigInt(RECORDS - 1), deliveryCount: 1 }];
const shareMs = await timed(() => sharedCopies(records, acquired, 'group', undefined, true, async () => 0));

const mb = (bytes: number) => (bytes / 1e6).toFixed(1);
console.log(
  `${mb(records.length)} MB raw in ${parts.length} batches of ${PER_BATCH} from offset ${from}, ${survivors.length} survivors, ${mb(kept)} MB kept in ${seen.batches.length} batches`,
);
console.log(`filter: ${filterMs.toFixed(2)} ms per pass, ${(records.length / 1e3 / filterMs).toFixed(0)} MB/s of raw log`);
console.log(
  `head (codec ${codec}): ${headMs.toFixed(2)} ms per pass of batches with a producer; ${lookedMs.toFixed(2)} ms without, whose first records are looked at (${(lookedMs / headMs).toFixed(2)}x)`,
);
console.log(`share: ${shareMs.toFixed(2)} ms per pass looking for copies (${(shareMs / filterMs).toFixed(3)}x the filter's)`);
console.log(
  `cached: ${cachedMs.toFixed(2)} ms per pass of ${answers} answers of ${answerBytes} bytes, ${((seen.batches.length / cachedMs) * 1e3).toFixed(0)} batches/s`,
);
