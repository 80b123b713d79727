import assert from 'node:assert/strict';
import { COMPACT, comparableRecords, generatedRecords } from '../records.js';
import type { Generated, ProduceFixture } from '../types.js';
import type { OperationCheck } from './operation.js';

/** Eight records over four keys; the seventh is a tombstone. */
const GENERATED: Generated = { start: 0, count: 8, keys: 4, valueSize: 24, tombstoneEvery: 7 };

/** The produce cell; `idempotence: false` has the client produce with idempotence off (ProduceFixture). */
export function produceWith(options: Pick<ProduceFixture, 'idempotence'>): OperationCheck {
  return {
    op: 'produce',
    title: options.idempotence === false ? 'produce with enable.idempotence=false' : 'produce',
    checks:
      'eight keyed records (one a tombstone) to a new compacted topic are acknowledged at offsets 0–7 where the client reports ' +
      'offsets, and the upstream log holds exactly them; a keyless record is refused with INVALID_RECORD and not written.',
    async run(h, client, name) {
      const topic = name;
      await h.createTopic(topic, 1, COMPACT);
      const records = generatedRecords(GENERATED);
      const run = await client.produce!(h.bootstrap, { topic, records, generated: GENERATED, ...options });
      if (run.partitions) assert.deepEqual(run.partitions, { '0': { count: 8, firstOffset: 0, lastOffset: 7 } }, 'acknowledged offsets');
      const log = await h.upstreamRecords(topic, records.length);
      assert.deepEqual(
        comparableRecords(log),
        records.map((r, offset) => ({ partition: 0, offset, ...r })),
        'the upstream log',
      );
      assert.match(run.keyless ?? 'the keyless record was accepted', /invalid.?record/i, 'the keyless record is refused with INVALID_RECORD');
      assert.deepEqual(await h.endOffsets(topic), [records.length], 'nothing but the keyed records is written');
    },
  };
}

export const produce: OperationCheck = produceWith({});
