import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RecordView } from '../../summary.js';
import { COMPACT, comparableRecords, generatedRecords } from '../records.js';
import type { KeyValue } from '../types.js';
import type { OperationCheck } from './operation.js';

const SEGMENT_MS = 100;
const KEYS = 6;
/** Three batches of updates over six keys, then a tombstone for one of them. */
const UPDATES = generatedRecords({ start: 0, count: 30, keys: KEYS, valueSize: 24 });
const TOMBSTONE: KeyValue = { key: 'key-000003', value: null };
/** Written past segment.ms: it rolls a new (active) segment, so everything before is cleanable. */
const ROLL = generatedRecords({ start: 30, count: 1, keys: KEYS, valueSize: 24 })[0]!;
/** After the last survivor, clients read on this long; at the end they must wait, not spin. */
const IDLE_MS = 1500;
/** More fetches a second than this at the high watermark is a client spinning. */
const MAX_FETCHES_PER_SECOND_AT_END = 10;

/** Kafka's survivors: below the active segment the latest record of each key, tombstones included; then all. */
function survivors(log: RecordView[], activeFrom: number): RecordView[] {
  const latest = new Map<string | null, number>();
  for (const r of log) if (r.offset < activeFrom) latest.set(r.key, r.offset);
  return log.filter((r) => r.offset >= activeFrom || latest.get(r.key) === r.offset);
}

export const compactedRead: OperationCheck = {
  op: 'compactedRead',
  title: 'compacted read',
  checks:
    'a compacted topic with 30 updates over six keys and a tombstone, then one record past segment.ms, is cleaned by ' +
    'kcompact; the client reads it from offset 0 and gets exactly the survivors (the tombstone among them) at their ' +
    'original offsets, its fetch position reaches the high watermark, and there it waits for news instead of spinning.',
  async run(h, client, name) {
    const topic = name;
    await h.createTopic(topic, 1, { ...COMPACT, 'segment.ms': String(SEGMENT_MS) });
    const log: RecordView[] = [];
    const write = async (records: KeyValue[]) => {
      const offsets = await h.write(
        topic,
        records.map((r) => ({ ...r, partition: 0 })),
      );
      records.forEach((r, i) => log.push({ partition: 0, offset: offsets[i]!, ...r }));
    };
    for (let b = 0; b < UPDATES.length; b += 10) await write(UPDATES.slice(b, b + 10));
    await write([TOMBSTONE]);
    // Segments roll on record timestamps: the next record must be written past segment.ms.
    await sleep(SEGMENT_MS * 3);
    await write([ROLL]);
    const activeFrom = log[log.length - 1]!.offset;
    const highWatermark = activeFrom + 1;
    await h.clean(topic, activeFrom);
    const expected = survivors(log, activeFrom);
    const run = await client.compactedRead!(h.bootstrap, { topic, expected, highWatermark, idleMs: IDLE_MS });
    assert.deepEqual(comparableRecords(run.records), expected, 'exactly the survivors, at their original offsets');
    const fetches = h.fetches(topic);
    const furthest = Math.max(...fetches.map((f) => f.offset));
    assert.equal(furthest, highWatermark, 'the client fetched from the high watermark');
    if (run.position !== undefined) assert.equal(run.position, highWatermark, "the client's position");
    const atEnd = fetches.filter((f) => f.offset === highWatermark);
    const seconds = (atEnd[atEnd.length - 1]!.at - atEnd[0]!.at) / 1000;
    assert.ok(atEnd.length <= MAX_FETCHES_PER_SECOND_AT_END * (seconds + 1), `${atEnd.length} fetches at the high watermark in ${seconds} s: the client spins`);
  },
};
