import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createProduceGuard } from '../../../../src/compaction/produce-guard/produce-guard.js';
import { checkKeys } from '../../../../src/compaction/produce-guard/keyless-records.js';
import { keylessRejection, reservedHeaderRejection } from '../../../../src/compaction/produce-guard/rejection.js';
import { ApiKey, encodeRequestFrame, type BodyInit, type ProduceRequest, type ProduceResponse } from '../../../../src/protocol/messages.js';
import { decodeRequestHeader } from '../../../../src/protocol/headers.js';
import { Attributes, BATCH_HEADER_SIZE, encodeBatch, type BatchFields } from '../../../../src/protocol/records/batch.js';
import { FilterChain } from '../../../../src/proxy/filter/filter-chain.js';
import { FilterHarness } from '../../../support/filter-harness.js';
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
      assert.deepEqual(await checkKeys(await batch(['a', null, '', null, 'b'], codec), 9), { judge: 'proxy', keyless: [1, 3], reserved: [] });
      assert.deepEqual(await checkKeys(await batch(['', 'x'], codec), 9), { judge: 'proxy', keyless: [], reserved: [] });
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
    assert.deepEqual(await checkKeys(withHeaders, 9), { judge: 'proxy', keyless: [0, 2], reserved: [] });
  });

  test('a batch without a producer whose first record starts with kcompact.carry poses as a carry batch; with a producer it does not', async () => {
    const carry = { key: Buffer.from('kcompact.carry'), value: Buffer.from([1, 1, 0]) };
    const records = [{ timestampDelta: 0, offsetDelta: 0, key: Buffer.from('k'), value: Buffer.from('v'), headers: [carry] }];
    const posing = await encodeBatch(FIELDS, records, 0);
    assert.deepEqual(await checkKeys(posing, 9), { judge: 'proxy', keyless: [], reserved: [0] });
    const idempotent = await encodeBatch({ ...FIELDS, producerId: 7n, producerEpoch: 0, baseSequence: 0 }, records, 0);
    assert.deepEqual(await checkKeys(idempotent, 9), { judge: 'proxy', keyless: [], reserved: [] });
    const later = [{ ...records[0]!, headers: [{ key: Buffer.from('trace'), value: null }, carry] }];
    assert.deepEqual(await checkKeys(await encodeBatch(FIELDS, later, 0), 9), { judge: 'proxy', keyless: [], reserved: [] });
  });

  // A store that re-batches what it serves (Event Hubs; kfake --rebatch in the 'gzip-only' store
  // profile) hands each record out as a batch of its own, without a producer: any record that
  // starts with kcompact.carry would then be taken for kcompact's own.
  for (const codec of [0, 1, 4]) {
    test(`codec ${codec}: a record past the first that starts with kcompact.carry poses too, whatever its header's value`, async () => {
      const record = (i: number, headers: { key: Buffer; value: Buffer | null }[], key: Buffer | null = Buffer.from(`k${i}`)) => ({
        timestampDelta: i,
        offsetDelta: i,
        key,
        value: i === 2 ? null : Buffer.alloc(150 * i, i),
        headers,
      });
      const trace = { key: Buffer.from('trace'), value: Buffer.from('t') };
      const records = [
        record(0, [trace]),
        record(1, [{ key: Buffer.from('kcompact.carry'), value: Buffer.from([1, 2, 0, 0]) }]),
        record(2, []),
        record(3, [{ key: Buffer.from('kcompact.carry'), value: null }, trace], null),
        record(4, [{ key: Buffer.from('kcompact.carrx'), value: null }]),
        record(5, [trace, { key: Buffer.from('kcompact.carry'), value: Buffer.from([2, 2]) }]),
      ];
      const produced = await encodeBatch({ ...FIELDS, lastOffsetDelta: records.length - 1 }, records, codec);
      assert.deepEqual(await checkKeys(produced, 9), { judge: 'proxy', keyless: [3], reserved: [1, 3] });
      const idempotent = await encodeBatch(
        { ...FIELDS, lastOffsetDelta: records.length - 1, producerId: 7n, producerEpoch: 0, baseSequence: 0 },
        records,
        codec,
      );
      assert.deepEqual(await checkKeys(idempotent, 9), { judge: 'proxy', keyless: [3], reserved: [] }, 'a producer id: never taken for a carry batch');
    });
  }

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

test('a rejection for the header kcompact.carry names every record that poses with it', () => {
  const r = reservedHeaderRejection('cmp', 1, [1, 3], 0n);
  assert.equal(r.errorCode, 87);
  assert.deepEqual(
    r.recordErrors!.map((e) => e.batchIndex),
    [1, 3],
  );
  assert.match(r.recordErrors![0]!.batchIndexErrorMessage!, /cannot start with the header kcompact.carry without a producer id/);
});

const TOPIC_ID = 'AAAAAAAAAAAAAAAAAAAAAQ';
const PLAIN_ID = 'AAAAAAAAAAAAAAAAAAAAAg';

interface Partition {
  index: number;
  records: Buffer;
}

function produceBody(topics: { name: string; partitions: Partition[] }[], acks = -1): BodyInit<ProduceRequest> {
  const ids: Record<string, string> = { cmp: TOPIC_ID, plain: PLAIN_ID };
  return {
    transactionalId: null,
    acks,
    timeoutMs: 1000,
    topicData: topics.map((t) => ({ name: t.name, topicId: ids[t.name], partitionData: t.partitions.map((p) => ({ index: p.index, records: p.records })) })),
  };
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

/** A Produce from a client, acks=0 when `acks` is 0 (nobody reads an answer then). */
function produce(guard: ReturnType<typeof guardFor>, version: number, topics: { name: string; partitions: Partition[] }[], acks = -1) {
  return new FilterHarness(guard).request(ApiKey.Produce, version, produceBody(topics, acks), {
    correlationId: 41,
    clientId: 'producer-1',
    expectsResponse: acks !== 0,
  });
}

/** The upstream's answer to whatever was forwarded: every partition appended at offset 10. */
function upstreamAnswer(forwarded: ProduceRequest): BodyInit<ProduceResponse> {
  return {
    responses: forwarded.topicData.map((t) => ({
      name: t.name,
      topicId: t.topicId,
      partitionResponses: t.partitionData.map((p) => ({
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
  };
}

const partitionsOf = (body: ProduceRequest) => body.topicData.map((t) => t.partitionData.map((p) => p.index));

describe('produce guard', () => {
  for (const version of [3, 5, 7, 8, 9, 12, 13]) {
    test(`Produce v${version}: keyless partitions are answered by the proxy, the rest go upstream, answers merge in order`, async () => {
      const guard = guardFor(['cmp']);
      const keyed = await batch(['a', 'b']);
      const keyless = await batch([null, 'x', null, null], 3);
      const run = await produce(guard, version, [
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
      assert.ok(run.kind === 'forward' && run.changed && run.awaitsResponse && run.closeAfter === undefined);
      assert.deepEqual(partitionsOf(run.body), [[0, 2], [0]]);
      assert.ok(run.body.topicData[0]!.partitionData[0]!.records!.equals(keyed), 'the records go on as they came');
      const client = await run.respond(upstreamAnswer(run.body));
      assert.ok(client.kind === 'forward' && client.changed);
      const answer = client.body;
      const byId = version >= 13;
      assert.deepEqual(
        answer.responses.map((t) => (byId ? t.topicId : t.name)),
        byId ? [TOPIC_ID, PLAIN_ID] : ['cmp', 'plain'],
      );
      const [p0, p1, p2] = answer.responses[0]!.partitionResponses;
      assert.deepEqual([p0!.index, p0!.errorCode, p0!.baseOffset], [0, 0, 10n]);
      assert.deepEqual([p2!.index, p2!.errorCode, p2!.baseOffset], [2, 0, 10n]);
      assert.deepEqual([p1!.index, p1!.errorCode, p1!.baseOffset, p1!.logAppendTimeMs], [1, 87, -1n, -1n]);
      if (version >= 5) assert.equal(p1!.logStartOffset, 101n);
      if (version >= 8) {
        assert.deepEqual(
          p1!.recordErrors,
          [0, 2, 3].map((batchIndex) => ({ batchIndex, batchIndexErrorMessage: KAFKA_MESSAGE })),
        );
        assert.equal(p1!.errorMessage, KAFKA_SUMMARY);
      }
      assert.equal(answer.throttleTimeMs, 3);
      assert.deepEqual(guard.stats, { rejectedBatches: 1, keylessRecords: 3 });
    });
  }

  test('a request left with nothing to forward is answered by the proxy', async () => {
    const guard = guardFor(['cmp']);
    const run = await produce(guard, 9, [{ name: 'cmp', partitions: [{ index: 1, records: await batch([null, 'x', null, null], 4) }] }]);
    assert.equal(run.kind, 'respond');
    if (run.kind !== 'respond') return;
    assert.equal(run.frame.readInt32BE(4), 41, 'the correlation id');
    assert.equal(run.body.throttleTimeMs, 0);
    assert.deepEqual(run.body.responses[0]!.partitionResponses[0], keylessRejection('cmp', 1, [0, 2, 3], 101n));
  });

  test('acks=0 with a keyless record closes the connection, as Kafka does', async () => {
    const guard = guardFor(['cmp']);
    const closed = await produce(guard, 9, [{ name: 'cmp', partitions: [{ index: 0, records: await batch([null]) }] }], 0);
    assert.equal(closed.kind, 'close');
    // Kafka appends the valid partitions of an acks=0 request before closing over the rest.
    const mixed = await produce(
      guard,
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
    );
    assert.ok(mixed.kind === 'forward' && mixed.closeAfter !== undefined && !mixed.awaitsResponse);
    assert.deepEqual(partitionsOf(mixed.body), [[1]]);
    assert.equal(mixed.body.acks, 0);
    const keyed = await produce(guard, 9, [{ name: 'cmp', partitions: [{ index: 0, records: await batch(['k']) }] }], 0);
    assert.ok(keyed.kind === 'forward' && !keyed.changed && keyed.closeAfter === undefined, 'nothing to refuse: the connection stays');
  });

  test('keyed records, other topics and unguarded stores pass untouched', async () => {
    const guard = guardFor(['cmp']);
    for (const run of [
      await produce(guard, 9, [{ name: 'cmp', partitions: [{ index: 0, records: await batch(['', 'k'], 2) }] }]),
      await produce(guard, 9, [{ name: 'plain', partitions: [{ index: 0, records: await batch([null]) }] }]),
      await produce(guardFor([]), 9, [{ name: 'cmp', partitions: [{ index: 0, records: await batch([null]) }] }]),
    ])
      assert.ok(run.kind === 'forward' && !run.changed && !run.awaitsResponse && run.closeAfter === undefined);
    assert.deepEqual(guard.stats, { rejectedBatches: 0, keylessRecords: 0 });
  });

  test('with no compacted topic at all a Produce is not even decoded', async () => {
    const frame = encodeRequestFrame(
      { apiKey: ApiKey.Produce, apiVersion: 9, correlationId: 41, clientId: 'producer-1' },
      produceBody([{ name: 'cmp', partitions: [{ index: 0, records: await batch([null]) }] }]),
    );
    // A body cut short: decoding it would fail the request.
    const cut = Buffer.from(frame.subarray(0, frame.length - 20));
    cut.writeInt32BE(cut.length - 4, 0);
    const routed = await new FilterChain([guardFor([])]).request(cut, decodeRequestHeader(cut.subarray(4)), true);
    assert.ok(routed.kind === 'forward' && routed.frame === cut);
    await assert.rejects(async () => new FilterChain([guardFor(['other'])]).request(cut, decodeRequestHeader(cut.subarray(4)), true), /produce-guard/);
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
    const run = await produce(guard, 13, [{ name: 'cmp', partitions: [{ index: 0, records: await batch([null]) }] }]);
    assert.deepEqual(resolved, [[TOPIC_ID]]);
    assert.equal(run.kind, 'respond');
    if (run.kind !== 'respond') return;
    assert.equal(run.body.responses[0]!.topicId, TOPIC_ID);
    assert.equal(run.body.responses[0]!.name, undefined, 'v13 names topics by id alone');
    assert.equal(run.body.responses[0]!.partitionResponses[0]!.logStartOffset, -1n, 'no log start lookup configured');
  });

  test('Produce v13: a keyed topic id passes, a keyless one beside another topic is merged by id', async () => {
    const guard = guardFor(['cmp']);
    const keyed = await produce(guard, 13, [{ name: 'cmp', partitions: [{ index: 0, records: await batch(['k']) }] }]);
    assert.ok(keyed.kind === 'forward' && !keyed.changed);
    const run = await produce(guard, 13, [
      { name: 'plain', partitions: [{ index: 3, records: await batch([null]) }] },
      { name: 'cmp', partitions: [{ index: 0, records: await batch([null]) }] },
    ]);
    assert.ok(run.kind === 'forward' && run.awaitsResponse);
    assert.deepEqual(
      run.body.topicData.map((t) => [t.topicId, t.partitionData.map((p) => p.index)]),
      [[PLAIN_ID, [3]]],
    );
    const client = await run.respond(upstreamAnswer(run.body));
    assert.ok(client.kind === 'forward');
    assert.deepEqual(
      client.body.responses.map((t) => [t.topicId, t.partitionResponses.map((p) => [p.index, p.errorCode])]),
      [
        [PLAIN_ID, [[3, 0]]],
        [TOPIC_ID, [[0, 87]]],
      ],
    );
  });
});
