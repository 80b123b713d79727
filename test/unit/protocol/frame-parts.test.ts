import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiKey, decodeResponse, encodeOutgoingResponse, encodeResponseFrame } from '../../../src/protocol/messages.js';
import { FrameParts, wholeFrame } from '../../../src/protocol/wire/frame-parts.js';

function fetchBody(records: Buffer[]) {
  return {
    throttleTimeMs: 0,
    errorCode: 0,
    sessionId: 0,
    responses: [
      {
        topic: 't',
        topicId: 'AAAAAAAAAAAAAAAAAAAAAQ',
        partitions: records.map((r, i) => ({
          partitionIndex: i,
          errorCode: 0,
          highWatermark: 10n,
          lastStableOffset: 10n,
          logStartOffset: 0n,
          abortedTransactions: [],
          records: r,
        })),
      },
    ],
  };
}

for (const version of [4, 12, 13, 16]) {
  test(`Fetch v${version}: a large response goes out in parts that are the frame, its records not copied`, () => {
    const records = [Buffer.alloc(300_000, 1), Buffer.alloc(10, 2), Buffer.alloc(200_000, 3)];
    const body = fetchBody(records);
    const out = encodeOutgoingResponse(ApiKey.Fetch, version, 99, body);
    assert.ok(out instanceof FrameParts);
    assert.ok(out.parts.includes(records[0]!) && out.parts.includes(records[2]!), 'the large records are parts themselves');
    const whole = wholeFrame(out);
    assert.equal(whole.length, out.length);
    assert.deepEqual(whole, encodeResponseFrame(ApiKey.Fetch, version, 99, body));
    assert.equal(whole.readInt32BE(0), whole.length - 4);
    const header = version >= 12 ? 9 : 8;
    const back = decodeResponse(ApiKey.Fetch, version, whole, header);
    assert.deepEqual(
      back.responses[0]!.partitions.map((p) => p.records),
      records,
    );
  });
}

test('a small response stays one buffer', () => {
  const body = fetchBody([Buffer.alloc(2000, 1)]);
  const out = encodeOutgoingResponse(ApiKey.Fetch, 13, 5, body);
  assert.ok(Buffer.isBuffer(out));
  assert.deepEqual(out, encodeResponseFrame(ApiKey.Fetch, 13, 5, body));
});
