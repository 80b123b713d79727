import assert from 'node:assert/strict';
import { COMPACT, comparableRecords, generatedRecords } from '../records.js';
import type { OperationCheck } from './operation.js';

const PARTITIONS = 2;
const COUNT = 12;

export const group: OperationCheck = {
  op: 'group',
  title: 'consumer group',
  checks:
    'a consumer in a new group subscribes to a compacted topic of two partitions, reads its twelve records once each, ' +
    "and commits; the group coordinator then holds each partition's end offset as the committed offset.",
  async run(h, client, name) {
    const topic = name;
    const groupId = `${name}-group`;
    await h.createTopic(topic, PARTITIONS, COMPACT);
    const records = generatedRecords({ start: 0, count: COUNT, keys: COUNT, valueSize: 24 }).map((r, i) => ({ ...r, partition: i % PARTITIONS }));
    const offsets = await h.write(topic, records);
    const run = await client.group!(h.bootstrap, { topic, group: groupId, count: COUNT });
    const expected = comparableRecords(records.map((r, i) => ({ ...r, offset: offsets[i]! })));
    assert.deepEqual(comparableRecords(run.records), expected, 'every record once, at its offset');
    const ends = Object.fromEntries((await h.endOffsets(topic)).map((end, p) => [String(p), end]));
    assert.deepEqual(await h.committed(groupId, topic), ends, 'the committed offsets are the end offsets');
  },
};
