/**
 * The compacted topic the read columns share: updates over six keys and a tombstone, a record
 * past segment.ms that rolls the active segment, cleaned by kcompact up to that segment; and
 * what Kafka's cleaner would have left of it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { RecordView } from '../../summary.js';
import type { Harness } from '../harness.js';
import { COMPACT, generatedRecords } from '../records.js';
import type { KeyValue } from '../types.js';

const SEGMENT_MS = 100;
const KEYS = 6;
/** Three batches of updates over six keys, then a tombstone for one of them. */
const UPDATES = generatedRecords({ start: 0, count: 30, keys: KEYS, valueSize: 24 });
const TOMBSTONE: KeyValue = { key: 'key-000003', value: null };
/** Written past segment.ms: it rolls a new (active) segment, so everything before is cleanable. */
const ROLL = generatedRecords({ start: 30, count: 1, keys: KEYS, valueSize: 24 })[0]!;

/** As the matrix page says it. */
export const CLEANED_TOPIC = 'a compacted topic with 30 updates over six keys and a tombstone, then one record past segment.ms, is cleaned by kcompact';

export interface CleanedTopic {
  /** Kafka's survivors, the tombstone among them, at their original offsets. */
  expected: RecordView[];
  highWatermark: number;
}

/** Kafka's survivors: below the active segment the latest record of each key, tombstones included; then all. */
function survivors(log: RecordView[], activeFrom: number): RecordView[] {
  const latest = new Map<string | null, number>();
  for (const r of log) if (r.offset < activeFrom) latest.set(r.key, r.offset);
  return log.filter((r) => r.offset >= activeFrom || latest.get(r.key) === r.offset);
}

export async function cleanedTopic(h: Harness, topic: string): Promise<CleanedTopic> {
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
  await h.clean(topic, activeFrom);
  return { expected: survivors(log, activeFrom), highWatermark: activeFrom + 1 };
}
