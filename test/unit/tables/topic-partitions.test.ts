import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrorCode } from '../../../src/protocol/errors.js';
import type { MetadataResponse } from '../../../src/protocol/messages.js';
import { ApiError } from '../../../src/tables/api-error.js';
import { MetadataPartitions, PARTITION_COUNT_TTL_MS } from '../../../src/tables/topic-partitions.js';

function store(topics: Record<string, { errorCode?: number; partitions: number }>) {
  const asked: string[][] = [];
  const client = {
    metadata: async (names: readonly string[] | null): Promise<MetadataResponse> => {
      asked.push([...(names ?? [])]);
      await new Promise((r) => setImmediate(r));
      return {
        brokers: [],
        topics: (names ?? []).map((name) => {
          const t = topics[name];
          return {
            name,
            errorCode: t ? (t.errorCode ?? ErrorCode.NONE) : ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            partitions: Array.from({ length: t?.partitions ?? 0 }, (_, p) => ({ partitionIndex: p })),
          };
        }),
      } as unknown as MetadataResponse;
    },
  };
  return { client, asked };
}

test("a topic's partition count comes from Metadata, kept for a while, one request for concurrent askers", async () => {
  let now = 0;
  const { client, asked } = store({ orders: { partitions: 6 } });
  const partitions = new MetadataPartitions(client, () => now);
  assert.deepEqual(await Promise.all([partitions.count('orders'), partitions.count('orders')]), [6, 6]);
  assert.equal(asked.length, 1);
  now += PARTITION_COUNT_TTL_MS - 1;
  await partitions.count('orders');
  assert.equal(asked.length, 1, 'still fresh');
  now += 1;
  await partitions.count('orders');
  assert.equal(asked.length, 2, 'asked again once stale');
});

test('an unknown topic is a 404; another Metadata error says which', async () => {
  const { client } = store({ locked: { errorCode: ErrorCode.TOPIC_AUTHORIZATION_FAILED, partitions: 0 } });
  const partitions = new MetadataPartitions(client);
  await assert.rejects(
    partitions.count('nope'),
    (err: unknown) => err instanceof ApiError && err.status === 404 && /topic nope does not exist/.test(err.message),
  );
  await assert.rejects(
    partitions.count('locked'),
    (err: unknown) => err instanceof ApiError && err.status === 502 && /TOPIC_AUTHORIZATION_FAILED/.test(err.message) && /grant/.test(err.fix),
  );
});
