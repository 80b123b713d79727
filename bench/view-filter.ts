/*
 * The fetch view's filter on the compaction benchmark's shape (issue 3 (b)): the last ~9 MB of a
 * log of uniformly random updates over a key space, batches of 500 records, filtered to the
 * latest record per key. Prints ms per pass (informative, not a test).
 *   node dist/bench/view-filter.js [passes]
 */
import { encodeBatch, type RecordInput } from '../src/protocol/records/batch.js';
import { visibleRecords } from '../src/compaction/fetch-view/visible-records.js';

const passes = Number(process.argv[2] ?? 50);
const RECORDS = 1_000_000;
const KEYS = 10_000;
const PER_BATCH = 500;

let seed = 7;
const rnd = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
const keys = new Int32Array(RECORDS);
const latest = new Int32Array(KEYS).fill(-1);
for (let i = 0; i < RECORDS; i++) latest[(keys[i] = Math.floor(rnd() * KEYS))] = i;
const survivorList = [...latest].filter((o) => o >= 0).sort((a, b) => a - b);
const first = survivorList[0]!;
const from = first - (first % PER_BATCH);
const survivors = Float64Array.from(survivorList);

const value = Buffer.alloc(100, 'v');
const parts: Buffer[] = [];
for (let base = from; base < RECORDS; base += PER_BATCH) {
  const recs: RecordInput[] = [];
  for (let i = 0; i < PER_BATCH; i++) recs.push({ timestampDelta: 0, offsetDelta: i, key: Buffer.from(`key-${String(keys[base + i]).padStart(8, '0')}`), value, headers: [] });
  parts.push(await encodeBatch({ baseOffset: BigInt(base), partitionLeaderEpoch: 0, attributes: 0, lastOffsetDelta: PER_BATCH - 1, baseTimestamp: 0n, maxTimestamp: 0n, producerId: -1n, producerEpoch: -1, baseSequence: -1 }, recs, 0));
}
const records = Buffer.concat(parts);

function lowerBound(x: number): number {
  let lo = 0;
  let hi = survivors.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (survivors[mid]! < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
const visibility = { cleanedUpTo: RECORDS, survivors: (a: number, b: number) => survivors.slice(lowerBound(a), lowerBound(b)) };

let kept = 0;
for (let i = 0; i < 5; i++) kept = (await visibleRecords(records, visibility, 0)).batches.reduce((n, b) => n + b.length, 0);
const t0 = performance.now();
for (let i = 0; i < passes; i++) await visibleRecords(records, visibility, 0);
const ms = (performance.now() - t0) / passes;
console.log(`${(records.length / 1e6).toFixed(1)} MB raw from offset ${from}, ${survivors.length} survivors, ${(kept / 1e6).toFixed(2)} MB kept: ${ms.toFixed(2)} ms per pass, ${(records.length / 1e3 / ms).toFixed(0)} MB/s`);
