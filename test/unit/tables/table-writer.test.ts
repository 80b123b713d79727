import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrorCode } from '../../../src/protocol/errors.js';
import { ApiKey } from '../../../src/protocol/messages.js';
import { decodeRecords, readBatchHeader } from '../../../src/protocol/records/batch.js';
import type { UpstreamClient } from '../../../src/upstream/client.js';
import { UpstreamError } from '../../../src/upstream/error-class.js';
import { UpstreamTableWriter, WriteOutcomeUnknown, type TableWrite } from '../../../src/tables/table-writer.js';

type Step = { errorCode: number; baseOffset?: number } | { throws: Error } | { noLeader: Error };

/** A cluster client whose leader answers Produce as the steps say, one per attempt; it keeps what it was sent. */
function cluster(steps: Step[]) {
  const sent: { version: number; body: Record<string, unknown> }[] = [];
  const forgotten: number[] = [];
  const client = {
    leader: async () => {
      const step = steps[0];
      if (step && 'noLeader' in step) {
        steps.shift();
        throw step.noLeader;
      }
      return {
        version: (apiKey: number) => (apiKey === ApiKey.Produce ? 13 : 0),
        request: async (_apiKey: number, version: number, body: Record<string, unknown>) => {
          sent.push({ version, body });
          const s = steps.shift()!;
          if ('throws' in s) throw s.throws;
          if ('noLeader' in s) throw new Error('unexpected');
          return {
            responses: [{ name: 't', partitionResponses: [{ index: 1, errorCode: s.errorCode, baseOffset: BigInt(s.baseOffset ?? -1), errorMessage: null }] }],
          };
        },
      } as unknown as UpstreamClient;
    },
    partitionError: (_t: string, _p: number, code: number) => void forgotten.push(code),
  };
  return { client, sent, forgotten };
}

const write: TableWrite = {
  key: Buffer.from('k'),
  value: Buffer.from('v'),
  headers: [{ key: Buffer.from('kcompact.if-match'), value: Buffer.from('4') }],
  timestamp: 1_700_000_000_123,
};

test('one record with acks=all, by topic name (Produce v12 at most), its key, value, headers and timestamp as given', async () => {
  const { client, sent } = cluster([{ errorCode: ErrorCode.NONE, baseOffset: 42 }]);
  const offset = await new UpstreamTableWriter(client, { produceTimeoutMs: 1234 }).append('t', 1, write, { conditional: true });
  assert.equal(offset, 42);
  assert.equal(sent.length, 1);
  assert.equal(sent[0]!.version, 12);
  const body = sent[0]!.body as { acks: number; timeoutMs: number; topicData: { name: string; partitionData: { index: number; records: Buffer }[] }[] };
  assert.deepEqual([body.acks, body.timeoutMs, body.topicData[0]!.name, body.topicData[0]!.partitionData[0]!.index], [-1, 1234, 't', 1]);
  const batch = body.topicData[0]!.partitionData[0]!.records;
  const header = readBatchHeader(batch, 0);
  assert.equal(header.baseTimestamp, 1_700_000_000_123n);
  const [r] = await decodeRecords(batch, header);
  assert.deepEqual(
    [r!.key?.toString(), r!.value?.toString(), r!.headers.map((h) => [h.key.toString(), h.value?.toString()])],
    ['k', 'v', [['kcompact.if-match', '4']]],
  );
});

test('asked again where the store certainly did not append: no leader, leader not available, not enough replicas', async () => {
  const { client, sent, forgotten } = cluster([
    { noLeader: new Error('the upstream names no leader for t-1') },
    { errorCode: ErrorCode.LEADER_NOT_AVAILABLE },
    { errorCode: ErrorCode.NONE, baseOffset: 7 },
  ]);
  assert.equal(await new UpstreamTableWriter(client).append('t', 1, write, { conditional: true }), 7);
  assert.equal(sent.length, 2);
  assert.deepEqual(forgotten, [ErrorCode.LEADER_NOT_AVAILABLE], 'the stale leader is forgotten');
});

test('NOT_LEADER_OR_FOLLOWER may follow an append: asked again only for an unconditional record', async () => {
  const plain = cluster([{ errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER }, { errorCode: ErrorCode.NONE, baseOffset: 3 }]);
  assert.equal(await new UpstreamTableWriter(plain.client).append('t', 1, write, { conditional: false }), 3);
  const conditional = cluster([{ errorCode: ErrorCode.NOT_LEADER_OR_FOLLOWER }, { errorCode: ErrorCode.NONE, baseOffset: 3 }]);
  await assert.rejects(
    new UpstreamTableWriter(conditional.client).append('t', 1, write, { conditional: true }),
    (err: unknown) => err instanceof UpstreamError && err.errorCode === ErrorCode.NOT_LEADER_OR_FOLLOWER,
  );
  assert.equal(conditional.sent.length, 1);
});

test('a request that got no answer is an unknown outcome, never sent again; a refusal is thrown as the store gave it', async () => {
  const lost = cluster([{ throws: new Error('upstream 10.0.0.1:9092 did not answer Produce within 30000 ms') }, { errorCode: ErrorCode.NONE }]);
  await assert.rejects(
    new UpstreamTableWriter(lost.client).append('t', 1, write, { conditional: false }),
    (err: unknown) => err instanceof WriteOutcomeUnknown && /may or may not have been appended/.test(err.message),
  );
  assert.equal(lost.sent.length, 1);
  const tooLarge = cluster([{ errorCode: ErrorCode.MESSAGE_TOO_LARGE }]);
  await assert.rejects(
    new UpstreamTableWriter(tooLarge.client).append('t', 1, write, { conditional: false }),
    (err: unknown) => err instanceof UpstreamError && err.errorCode === ErrorCode.MESSAGE_TOO_LARGE,
  );
  const down = cluster([
    { errorCode: ErrorCode.LEADER_NOT_AVAILABLE },
    { errorCode: ErrorCode.LEADER_NOT_AVAILABLE },
    { errorCode: ErrorCode.LEADER_NOT_AVAILABLE },
  ]);
  await assert.rejects(new UpstreamTableWriter(down.client).append('t', 1, write, { conditional: false }), UpstreamError);
  assert.equal(down.sent.length, 3, 'three attempts in all');
});
