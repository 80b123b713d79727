/**
 * Large responses the proxy does not change pass through as they arrive instead of being gathered
 * first: a consumer's Fetch throughput depends on it. A hand-written broker holds back the second
 * half of a response so the test can see the first half reach the client before it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiKey, encodeResponseFrame } from '../../src/protocol/messages.js';
import { startProxy } from '../support/kcompact.js';
import { RawConnection } from '../support/raw-client.js';
import { startFakeBroker } from '../support/fake-broker.js';
import { pollUntil } from '../support/index.js';

const TOPIC_ID = 'AAAAAAAAAAAAAAAAAAAAAQ';

function fetchResponse(records: Buffer): object {
  return {
    throttleTimeMs: 0,
    errorCode: 0,
    sessionId: 0,
    responses: [
      {
        topicId: TOPIC_ID,
        partitions: [
          {
            partitionIndex: 0,
            errorCode: 0,
            highWatermark: 10n,
            lastStableOffset: 10n,
            logStartOffset: 0n,
            abortedTransactions: null,
            preferredReadReplica: -1,
            records,
          },
        ],
      },
    ],
  };
}

const fetchRequest = {
  replicaId: -1,
  maxWaitMs: 500,
  minBytes: 1,
  maxBytes: 50 << 20,
  isolationLevel: 0,
  sessionId: 0,
  sessionEpoch: -1,
  topics: [
    {
      topicId: TOPIC_ID,
      partitions: [{ partition: 0, currentLeaderEpoch: -1, fetchOffset: 0n, lastFetchedEpoch: -1, logStartOffset: -1n, partitionMaxBytes: 4 << 20 }],
    },
  ],
  forgottenTopicsData: [],
  rackId: '',
};

for (const version of [16, 17, 18]) {
  test(`a Fetch v${version} is asked upstream as v15 and its response streams to the client as it arrives`, async () => {
    const broker = await startFakeBroker();
    const proxy = await startProxy(broker.address);
    const client = await RawConnection.open(proxy.bootstrap);
    try {
      const records = Buffer.alloc(2 << 20, 0x5a);
      let askedVersion = -1;
      let rest: (() => void) | undefined;
      broker.handle(ApiKey.Fetch, (frame, socket) => {
        askedVersion = frame.readInt16BE(6);
        const response = encodeResponseFrame(ApiKey.Fetch, 15, frame.readInt32BE(8), fetchResponse(records));
        const half = response.length >> 1;
        socket.write(response.subarray(0, half));
        rest = () => socket.write(response.subarray(half));
      });
      let received = 0;
      client.socket.on('data', (chunk: Buffer) => (received += chunk.length));

      client.request(ApiKey.Fetch, version, fetchRequest, 41);
      await pollUntil('the first half of the response reaches the client', 10_000, async () => (received >= records.length / 2 ? true : undefined));
      assert.equal(askedVersion, 15, 'the upstream was asked v15');
      rest!();
      const res = await client.response(ApiKey.Fetch, version);
      assert.equal(res.correlationId, 41);
      assert.deepEqual(res.body.responses[0].partitions[0].records, records, 'a v15 response reads as the same v16+ response');
      assert.deepEqual(res.body.nodeEndpoints, []);
    } finally {
      client.close();
      await proxy.stop();
      await broker.close();
    }
  });
}

test('a Fetch below v16 is asked upstream at its own version', async () => {
  const broker = await startFakeBroker();
  const proxy = await startProxy(broker.address);
  const client = await RawConnection.open(proxy.bootstrap);
  try {
    const asked: number[] = [];
    const answer = (frame: Buffer, socket: import('node:net').Socket) => {
      asked.push(frame.readInt16BE(6));
      socket.write(encodeResponseFrame(ApiKey.Fetch, frame.readInt16BE(6), frame.readInt32BE(8), fetchResponse(Buffer.alloc(0))));
    };
    for (const version of [13, 15]) {
      broker.handle(ApiKey.Fetch, answer);
      client.request(ApiKey.Fetch, version, fetchRequest, version);
      assert.equal((await client.response(ApiKey.Fetch, version)).correlationId, version);
    }
    assert.deepEqual(asked, [13, 15]);
  } finally {
    client.close();
    await proxy.stop();
    await broker.close();
  }
});
