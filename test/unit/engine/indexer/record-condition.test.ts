import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { IF_MATCH_HEADER, IF_NONE_MATCH_HEADER } from '../../../../src/engine/api/table-reads.js';
import { conditionOf } from '../../../../src/engine/indexer/record-condition.js';
import { Condition } from '../../../../src/engine/store/condition.js';
import { encodeBatch, iterateBatches, scanRecordKeys, batchPayload } from '../../../../src/protocol/records/batch.js';

/** The condition the index reads from a record with these headers. */
async function conditionWith(headers: [string, string | null][]): Promise<number> {
  const batch = await encodeBatch(
    {
      baseOffset: 0n,
      partitionLeaderEpoch: -1,
      attributes: 0,
      lastOffsetDelta: 0,
      baseTimestamp: 1n,
      maxTimestamp: 1n,
      producerId: -1n,
      producerEpoch: -1,
      baseSequence: -1,
    },
    [
      {
        timestampDelta: 0,
        offsetDelta: 0,
        key: Buffer.from('k'),
        value: Buffer.from('v'),
        headers: headers.map(([key, value]) => ({ key: Buffer.from(key), value: value === null ? null : Buffer.from(value) })),
      },
    ],
    0,
  );
  const header = iterateBatches(batch).batches[0]!;
  const [r] = scanRecordKeys(await batchPayload(batch, header), header);
  return r!.headerCount === 0 ? Condition.None : conditionOf(r!.payload, r!.headersStart, r!.headerCount);
}

describe('conditionOf', () => {
  test('reads If-Match offsets and If-None-Match', async () => {
    assert.equal(await conditionWith([]), Condition.None);
    assert.equal(await conditionWith([['traceparent', '00-abc']]), Condition.None);
    assert.equal(await conditionWith([[IF_MATCH_HEADER, '0']]), 0);
    assert.equal(
      await conditionWith([
        ['x', 'y'],
        [IF_MATCH_HEADER, '123456789012'],
      ]),
      123456789012,
    );
    assert.equal(await conditionWith([[IF_NONE_MATCH_HEADER, '*']]), Condition.IfNoneMatch);
  });

  test('a malformed, repeated or contradicting condition never holds', async () => {
    for (const headers of [
      [[IF_MATCH_HEADER, '']],
      [[IF_MATCH_HEADER, '-1']],
      [[IF_MATCH_HEADER, '012']],
      [[IF_MATCH_HEADER, '1e3']],
      [[IF_MATCH_HEADER, '12345678901234567']],
      [[IF_MATCH_HEADER, null]],
      [[IF_NONE_MATCH_HEADER, '']],
      [[IF_NONE_MATCH_HEADER, '**']],
      [
        [IF_MATCH_HEADER, '1'],
        [IF_MATCH_HEADER, '1'],
      ],
      [
        [IF_MATCH_HEADER, '1'],
        [IF_NONE_MATCH_HEADER, '*'],
      ],
    ] as [string, string | null][][]) {
      assert.equal(await conditionWith(headers), Condition.Never, JSON.stringify(headers));
    }
  });
});
