import assert from 'node:assert/strict';
import { comparableRecords } from '../records.js';
import { CLEANED_TOPIC, cleanedTopic } from './cleaned-topic.js';
import type { OperationCheck } from './operation.js';

/** After the last survivor, clients read on this long; at the end they must wait, not spin. */
const IDLE_MS = 1500;
/** More fetches a second than this at the high watermark is a client spinning. */
const MAX_FETCHES_PER_SECOND_AT_END = 10;

export const compactedRead: OperationCheck = {
  op: 'compactedRead',
  title: 'compacted read',
  checks:
    `${CLEANED_TOPIC}; the client reads it from offset 0 and gets exactly the survivors (the tombstone among them) at their ` +
    'original offsets, its fetch position reaches the high watermark, and there it waits for news instead of spinning.',
  async run(h, client, name) {
    const topic = name;
    const { expected, highWatermark } = await cleanedTopic(h, topic);
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
