import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createProduceGuard } from '../../../../src/compaction/produce-guard/produce-guard.js';
import { checkKeys } from '../../../../src/compaction/produce-guard/keyless-records.js';
import { keylessRejection } from '../../../../src/compaction/produce-guard/rejection.js';
import { ApiKey, decodeRequest, decodeResponse, encodeRequestFrame, encodeResponseFrame } from '../../../../src/protocol/messages.js';
import { decodeRequestHeader, decodeResponseHeader, responseHeaderVersion } from '../../../../src/protocol/headers.js';
import { Attributes, BATCH_HEADER_SIZE, encodeBatch, type BatchFields } from '../../../../src/protocol/records/batch.js';
import { interceptedRequest, type Interception } from '../../../../src/proxy/interceptor.js';
import { crc32c } from '../../../../src/protocol/records/crc32c.js';
import { TopicIds } from '../../../../src/proxy/topic-ids.js';
import { configView, log } from '../fetch-view/fake-log.js';

const FIELDS: BatchFields = {
  baseOffset: 0n,
  partitionLeaderEpoch: -1,
  attributes: 0,
  lastOffsetDelta: 0,
  baseTimestamp: 1_700_000_000_000n,
  maxTimestamp: 1_700_000_000_000n,
  producerId: -1n,
  producerEpoch: -1,
  baseSequence: -1,
};

function batch(keys: (string | null)[], codec = 0, fields: Partial<BatchFields> = {}): Promise<Buffer> {
  return encodeBatch(
    { ...FIELDS, lastOffsetDelta: keys.length - 1, ...fields },
    keys.map((k, i) => ({ timestampDelta: i, offsetDelta: i, key: k === null ? null : Buffer.from(k), value: Buffer.from(`v${i}`) })),
    codec,
  );
}

/** Kafka 4.4's answer for cmp-1 holding keyless records at 0, 2 and 3 (captured from a real broker). */
const KAFKA_MESSAGE = 'Compacted topic cannot accept message without key in topic partition cmp-1';
const KAFKA_SUMMARY =
  "One or more records have been rejected due to 3 record errors in total, and only showing the first three errors at most: [RecordError(batchIndex=0, message='Compacted topic cannot accept message without key in topic partition cmp-1'), RecordError(batchIndex=2, message='Compacted topic cannot accept message without key in topic partition cmp-1'), RecordError(batchIndex=3, message='Compacted topic cannot accept message without key in topic partition cmp-1')]";

describe('checkKeys', () => {
  for (const codec of [0, 1, 2, 3, 4]) {
    test(`codec ${codec}: reports every keyless record's batch index; an empty key is a key`, async () => {
      assert.deepEqual(await checkKeys(await batch(['a', null, '', null, 'b'], codec), 9), { judge: 'proxy', keyless: [1, 3] });
      assert.deepEqual(await checkKeys(await batch(['', 'x'], codec), 9), { judge: 'proxy', keyless: [] });
    });
  }

  test('records with headers and wide timestamps are skipped by their length', async () => {
    const records = [null, 'k', null].map((k, i) => ({
      timestampDelta: 2 ** 40 + i,
      offsetDelta: i,
      key: k === null ? null : Buffer.from(k),
      value: i === 1 ? null : Buffer.alloc(300 * i, 1),
      headers: [
        { key: Buffer.from('trace'), value: Buffer.alloc(200, i) },
        { key: Buffer.from('n'), value: null },
      ],
    }));
    const withHeaders = await encodeBatch({ ...FIELDS, lastOffsetDelta: 2 }, records, 0);
    assert.deepEqual(await checkKeys(withHeaders, 9), { judge: 'proxy', keyless: [0, 2] });
  });

  test('records that do not add up to the batch are left to the upstream', async () => {
    const good = Buffer.from(await batch([null, 'a'], 0));
    // One more record than the payload holds, with offsets and CRC made consistent.
    good.writeInt32BE(1 + 1, 23);
    good.writeInt32BE(3, 57);
    good.writeUInt32BE(crc32c(good, 21, good.length), 17);
    assert.deepEqual(await checkKeys(good, 9), { judge: 'upstream' });
  });

  test('what Kafka rejects for another reason first is left to the upstream', async () => {
    const good = await batch([null, 'a']);
    const badCrc = Buffer.from(good);
    badCrc[BATCH_HEADER_SIZE + 2]! ^= 1;
    assert.deepEqual(await checkKeys(badCrc, 9), { judge: 'upstream' });
    assert.deepEqual(await checkKeys(await batch([null], 0, { attributes: Attributes.control }), 9), { judge: 'upstream' });
    assert.deepEqual(await checkKeys(await batch([null, null], 0, { lastOffsetDelta: 5 }), 9), { judge: 'upstream' });
    assert.deepEqual(await checkKeys(await batch([null], 0, { producerId: 5n, producerEpoch: 0, baseSequence: -1 }), 9), { judge: 'upstream' });
    assert.deepEqual(await checkKeys(Buffer.concat([good, good]), 9), { judge: 'upstream' }, 'more than one batch');
    assert.deepEqual(await checkKeys(good.subarray(0, good.length - 3), 9), { judge: 'upstream' }, 'a cut-off batch');
    assert.deepEqual(await checkKeys(null, 9), { judge: 'upstream' });
    assert.deepEqual(await checkKeys(await batch([null], 4), 6), { judge: 'upstream' }, 'zstd before Produce v7');
  });
});

test("the rejection is Kafka 4.4's, word for word", () => {
  const r = keylessRejection('cmp', 1, [0, 2, 3], 0n);
  assert.deepEqual(r, {
    index: 1,
    errorCode: 87,
    baseOffset: -1n,
    logAppendTimeMs: -1n,
    logStartOffset: 0n,
    recordErrors: [0, 2, 3].map((batchIndex) => ({ batchIndex, batchIndexErrorMessage: KAFKA_MESSAGE })),
    errorMessage: KAFKA_SUMMARY,
  });
  assert.match(
    keylessRejection('t', 0, [0, 1, 2, 3, 4], 0n).errorMessage!,
    /due to 5 record errors in total.*\[RecordError\(batchIndex=0.*batchIndex=2, [^\]]*'\)\]$/,
  );
});

const TOPIC_ID = 'AAAAAAAAAAAAAAAAAAAAAQ';
const PLAIN_ID = 'AAAAAAAAAAAAAAAAAAAAAg';

interface Partition {
  index: number;
  records: Buffer;
}

function produceFrame(version: number, topics: { name: string; partitions: Partition[] }[], acks = -1): Buffer {
  const ids: Record<string, string> = { cmp: TOPIC_ID, plain: PLAIN_ID };
  return encodeRequestFrame(
    { apiKey: ApiKey.Produce, apiVersion: version, correlationId: 41, clientId: 'producer-1' },
    {
      transactionalId: null,
      acks,
      timeoutMs: 1000,
      topicData: topics.map((t) => ({ name: t.name, topicId: ids[t.name], partitionData: t.partitions.map((p) => ({ index: p.index, records: p.records })) })),
    },
  );
}

function guardFor(compacted: string[], topicIds = knownIds()) {
  return createProduceGuard({ config: configView(compacted), topicIds, log, logStartOffset: async (_t, p) => BigInt(100 + p) });
}

function knownIds(): TopicIds {
  const ids = new TopicIds();
  ids.learn('cmp', TOPIC_ID);
  ids.learn('plain', PLAIN_ID);
  return ids;
}

async function intercept(guard: ReturnType<typeof guardFor>, frame: Buffer, expectsResponse = true): Promise<Interception> {
  return guard.intercept(interceptedRequest(frame, decodeRequestHeader(frame.subarray(4)), expectsResponse));
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function decodeProduceResponse(version: number, frame: Buffer): any {
  const h = decodeResponseHeader(frame.subarray(4), responseHeaderVersion(ApiKey.Produce, version));
  assert.equal(h.correlationId, 41);
  return decodeResponse(ApiKey.Produce, version, frame, 4 + h.bodyOffset);
}

/** The upstream's answer to whatever was forwarded: every partition appended at offset 10. */
function upstreamAnswer(version: number, frame: Buffer): Buffer {
  const header = decodeRequestHeader(frame.subarray(4));
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  const body = decodeRequest<any>(ApiKey.Produce, version, frame, 4 + header.bodyOffset!);
  return encodeResponseFrame(ApiKey.Produce, version, header.correlationId, {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    responses: body.topicData.map((t: any) => ({
      name: t.name,
      topicId: t.topicId,
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      partitionResponses: t.partitionData.map((p: any) => ({
        index: p.index,
        errorCode: 0,
        baseOffset: 10n,
        logAppendTimeMs: -1n,
        logStartOffset: 0n,
        recordErrors: [],
        errorMessage: null,
      })),
    })),
    throttleTimeMs: 3,
  });
}

describe('produce guard', () => {
  for (const version of [3, 5, 7, 8, 9, 12, 13]) {
    test(`Produce v${version}: keyless partitions are answered by the proxy, the rest go upstream, answers merge in order`, async () => {
      const guard = guardFor(['cmp']);
      const keyed = await batch(['a', 'b']);
      const keyless = await batch([null, 'x', null, null], 3);
      const frame = produceFrame(version, [
        {
          name: 'cmp',
          partitions: [
            { index: 0, records: keyed },
            { index: 1, records: keyless },
            { index: 2, records: keyed },
          ],
        },
        { name: 'plain', partitions: [{ index: 0, records: keyless }] },
      ]);
      const decision = await intercept(guard, frame);
      assert.ok('forward' in decision && decision.frame && decision.response);
      const sent = decodeRequest<any>(ApiKey.Produce, version, decision.frame, 4 + decodeRequestHeader(decision.frame.subarray(4)).bodyOffset!); // eslint-disable-line @typescript-eslint/no-explicit-any
      assert.deepEqual(
        sent.topicData.map((t: any) => t.partitionData.map((p: any) => p.index)), // eslint-disable-line @typescript-eslint/no-explicit-any
        [[0, 2], [0]],
      );
      const answer = decodeProduceResponse(version, await decision.response(upstreamAnswer(version, decision.frame)));
      const byId = version >= 13;
      assert.deepEqual(
        // eslint-disable-next-line @typescript-eslint/no-explicit-any
        answer.responses.map((t: any) => (byId ? t.topicId : t.name)),
        byId ? [TOPIC_ID, PLAIN_ID] : ['cmp', 'plain'],
      );
      const [p0, p1, p2] = answer.responses[0].partitionResponses;
      assert.deepEqual([p0.index, p0.errorCode, p0.baseOffset], [0, 0, 10n]);
      assert.deepEqual([p2.index, p2.errorCode, p2.baseOffset], [2, 0, 10n]);
      assert.deepEqual([p1.index, p1.errorCode, p1.baseOffset, p1.logAppendTimeMs], [1, 87, -1n, -1n]);
      if (version >= 5) assert.equal(p1.logStartOffset, 101n);
      if (version >= 8) {
        assert.deepEqual(
          p1.recordErrors,
          [0, 2, 3].map((batchIndex) => ({ batchIndex, batchIndexErrorMessage: KAFKA_MESSAGE })),
        );
        assert.equal(p1.errorMessage, KAFKA_SUMMARY);
      }
      assert.equal(answer.throttleTimeMs, 3);
      assert.deepEqual(guard.stats, { rejectedBatches: 1, keylessRecords: 3 });
    });
  }

  test('a request left with nothing to forward is answered by the proxy', async () => {
    const guard = guardFor(['cmp']);
    const frame = produceFrame(9, [{ name: 'cmp', partitions: [{ index: 1, records: await batch([null, 'x', null, null], 4) }] }]);
    const decision = await intercept(guard, frame);
    assert.ok('respond' in decision);
    const answer = decodeProduceResponse(9, decision.respond);
    assert.deepEqual(answer.responses[0].partitionResponses[0], keylessRejection('cmp', 1, [0, 2, 3], 101n));
  });

  test('acks=0 with a keyless record closes the connection, as Kafka does', async () => {
    const guard = guardFor(['cmp']);
    const decision = await intercept(guard, produceFrame(9, [{ name: 'cmp', partitions: [{ index: 0, records: await batch([null]) }] }], 0), false);
    assert.ok('close' in decision);
    // Kafka appends the valid partitions of an acks=0 request before closing over the rest.
    const mixed = await intercept(
      guard,
      produceFrame(
        9,
        [
          {
            name: 'cmp',
            partitions: [
              { index: 0, records: await batch([null]) },
              { index: 1, records: await batch(['k']) },
            ],
          },
        ],
        0,
      ),
      false,
    );
    assert.ok('forward' in mixed && mixed.closeAfter !== undefined && mixed.frame !== undefined);
    const forwarded = decodeRequest<{ topicData: { partitionData: { index: number }[] }[] }>(
      ApiKey.Produce,
      9,
      mixed.frame,
      4 + decodeRequestHeader(mixed.frame.subarray(4)).bodyOffset!,
    );
    assert.deepEqual(
      forwarded.topicData.map((t) => t.partitionData.map((p) => p.index)),
      [[1]],
    );
  });

  test('keyed records, other topics and unguarded stores pass untouched', async () => {
    const guard = guardFor(['cmp']);
    assert.deepEqual(await intercept(guard, produceFrame(9, [{ name: 'cmp', partitions: [{ index: 0, records: await batch(['', 'k'], 2) }] }])), {
      forward: true,
    });
    assert.deepEqual(await intercept(guard, produceFrame(9, [{ name: 'plain', partitions: [{ index: 0, records: await batch([null]) }] }])), { forward: true });
    const none = guardFor([]);
    const frame = produceFrame(9, [{ name: 'cmp', partitions: [{ index: 0, records: await batch([null]) }] }]);
    const req = interceptedRequest(frame, decodeRequestHeader(frame.subarray(4)), true);
    let decoded = false;
    const body = req.body.bind(req);
    req.body = <T extends object>() => {
      decoded = true;
      return body<T>();
    };
    assert.deepEqual(none.intercept(req), { forward: true });
    assert.equal(decoded, false, 'no compacted topic at all: the request is not even decoded');
  });

  test('Produce v13 with a topic id the proxy does not know yet resolves it first', async () => {
    const ids = new TopicIds();
    const resolved: string[][] = [];
    const guard = createProduceGuard({
      config: configView(['cmp']),
      topicIds: ids,
      log,
      resolveTopicIds: async (unknown) => {
        resolved.push(unknown);
        ids.learn('cmp', TOPIC_ID);
      },
    });
    const decision = await intercept(guard, produceFrame(13, [{ name: 'cmp', partitions: [{ index: 0, records: await batch([null]) }] }]));
    assert.deepEqual(resolved, [[TOPIC_ID]]);
    assert.ok('respond' in decision);
    const answer = decodeProduceResponse(13, decision.respond);
    assert.equal(answer.responses[0].topicId, TOPIC_ID);
    assert.equal(answer.responses[0].partitionResponses[0].logStartOffset, -1n, 'no log start lookup configured');
  });
});
