import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiKey } from '../../../../src/protocol/messages.js';
import { lastStableOffsets } from '../../../../src/engine/indexer/partition-requests.js';
import type { UpstreamClient } from '../../../../src/upstream/client.js';

interface Asked {
  apiKey: number;
  body: { isolationLevel: number; topics: { name: string; partitions: { partitionIndex: number; timestamp: bigint }[] }[] };
}

/** A client that records what it is asked and answers with `answer`. */
function recordingClient(answer: unknown): { client: UpstreamClient; asked: Asked[] } {
  const asked: Asked[] = [];
  const client = {
    version: () => 7,
    request: async (apiKey: number, _version: number, body: Asked['body']) => {
      asked.push({ apiKey, body });
      return answer;
    },
  } as unknown as UpstreamClient;
  return { client, asked };
}

test('the last stable offsets of many partitions are asked in one ListOffsets, read committed, latest', async () => {
  const { client, asked } = recordingClient({
    topics: [
      {
        name: 'a',
        partitions: [
          { partitionIndex: 0, errorCode: 0, offset: 10n },
          { partitionIndex: 1, errorCode: 0, offset: 11n },
        ],
      },
      { name: 'b', partitions: [{ partitionIndex: 0, errorCode: 6, offset: -1n }] },
    ],
  });
  const wanted = [
    { topic: 'a', partition: 0 },
    { topic: 'b', partition: 0 },
    { topic: 'a', partition: 1 },
    { topic: 'b', partition: 2 },
  ];
  const answers = await lastStableOffsets(client, wanted);
  assert.equal(asked.length, 1);
  assert.equal(asked[0]!.apiKey, ApiKey.ListOffsets);
  assert.equal(asked[0]!.body.isolationLevel, 1);
  assert.deepEqual(
    asked[0]!.body.topics.map((t) => [t.name, t.partitions.map((p) => [p.partitionIndex, p.timestamp])]),
    [
      [
        'a',
        [
          [0, -1n],
          [1, -1n],
        ],
      ],
      [
        'b',
        [
          [0, -1n],
          [2, -1n],
        ],
      ],
    ],
  );
  // In the order asked; an error or a partition the answer left out has no offset.
  assert.deepEqual(answers, [
    { topic: 'a', partition: 0, errorCode: 0, offset: 10 },
    { topic: 'b', partition: 0, errorCode: 6, offset: -1 },
    { topic: 'a', partition: 1, errorCode: 0, offset: 11 },
    { topic: 'b', partition: 2, errorCode: -1, offset: -1 },
  ]);
});
