import assert from 'node:assert/strict';
import { comparableRecords } from '../records.js';
import { CLEANED_TOPIC, cleanedTopic } from './cleaned-topic.js';
import type { OperationCheck } from './operation.js';

/** After the last survivor, the share consumer reads on this long: nothing more may come. */
const IDLE_MS = 1500;

export const shareRead: OperationCheck = {
  op: 'shareRead',
  title: 'share group',
  checks:
    `${CLEANED_TOPIC}; a share consumer (KIP-932) in a new share group that starts at the earliest offset gets exactly the ` +
    'survivors at their original offsets, each once and at its first delivery, and nothing else.',
  async run(h, client, name) {
    const topic = name;
    const { expected } = await cleanedTopic(h, topic);
    const run = await client.shareRead!(h.bootstrap, {
      topic,
      group: `${name}-share`,
      isolation: 'read_committed',
      expected: expected.length,
      idleMs: IDLE_MS,
    });
    assert.deepEqual(comparableRecords(run.records), expected, 'exactly the survivors, at their original offsets');
    assert.equal(run.records.length, expected.length, 'each survivor delivered once');
    assert.deepEqual([...new Set(run.records.map((r) => r.deliveryCount))], [1], 'at its first delivery');
  },
};
