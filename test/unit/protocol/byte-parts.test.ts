import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiKey, decodeResponse, encodeOutgoingResponse, encodeResponseFrame } from '../../../src/protocol/messages.js';
import { ByteParts, wholeFrame } from '../../../src/protocol/wire/byte-parts.js';

function fetchBody(records: (Buffer | ByteParts)[]) {
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
    assert.ok(out instanceof ByteParts);
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

/** Records in pieces, and how often done() gave their buffers back. */
function recordParts(parts: Buffer[]): { records: ByteParts; released: () => number } {
  let released = 0;
  const length = parts.reduce((n, p) => n + p.length, 0);
  return { records: new ByteParts(parts, length, () => released++), released: () => released };
}

for (const version of [4, 12, 16]) {
  test(`Fetch v${version}: records given in parts go out as those parts, given back once the frame is done`, () => {
    const large = [Buffer.alloc(70_000, 1), Buffer.alloc(5000, 2)];
    const small = Array.from({ length: 300 }, (_, i) => Buffer.alloc(61, i));
    const parts = [large[0]!, ...small, large[1]!, Buffer.alloc(7, 9)];
    const { records, released } = recordParts(parts);
    const body = fetchBody([records]);
    const out = encodeOutgoingResponse(ApiKey.Fetch, version, 7, body);
    assert.ok(out instanceof ByteParts && out.releases);
    assert.ok(out.parts.includes(large[0]!) && out.parts.includes(large[1]!), "the large parts are the frame's own");
    assert.ok(out.parts.length < 10, `the small parts go as one piece, not ${out.parts.length}`);
    const joined = Buffer.concat(parts);
    const expected = encodeResponseFrame(ApiKey.Fetch, version, 7, fetchBody([joined]));
    assert.deepEqual(wholeFrame(out), expected);
    assert.equal(released(), 0, 'nothing is given back before the frame is done');
    out.done();
    out.done();
    assert.equal(released(), 1);
  });
}

test('records in parts joined into one frame are given back once joined', () => {
  const { records, released } = recordParts([Buffer.alloc(3000, 1), Buffer.alloc(3000, 2)]);
  const frame = encodeResponseFrame(ApiKey.Fetch, 13, 1, fetchBody([records]));
  assert.equal(released(), 1);
  const back = decodeResponse(ApiKey.Fetch, 13, frame, 9);
  assert.deepEqual(back.responses[0]!.partitions[0]!.records, Buffer.concat([Buffer.alloc(3000, 1), Buffer.alloc(3000, 2)]));
});

test('records in small parts only are copied, and given back at once', () => {
  const { records, released } = recordParts([Buffer.alloc(100, 1), Buffer.alloc(200, 2)]);
  const out = encodeOutgoingResponse(ApiKey.Fetch, 13, 1, fetchBody([records, Buffer.alloc(80_000, 3)]));
  assert.ok(out instanceof ByteParts && !out.releases);
  assert.equal(released(), 1);
});

test('parts whose length is not theirs are refused', () => {
  assert.throws(() => new ByteParts([Buffer.alloc(3)], 4), /byte parts of 3 bytes said to be 4/);
});
