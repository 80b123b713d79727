import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ErrorCode } from '../../../src/protocol/errors.js';
import { UpstreamError } from '../../../src/upstream/error-class.js';
import { withRetries } from '../../../src/upstream/retry.js';

const FAST = { baseMs: 1, maxMs: 2 };

test('a retriable failure is tried again, with a wait from the backoff rule, until it succeeds', async () => {
  let calls = 0;
  const waits: number[] = [];
  const value = await withRetries(
    async () => {
      if (++calls < 3) throw new UpstreamError('Produce to t', ErrorCode.NOT_LEADER_OR_FOLLOWER);
      return 'done';
    },
    { attempts: 5, rule: FAST, onRetry: (_err, failures, waitMs) => waits.push(failures, waitMs) },
  );
  assert.equal(value, 'done');
  assert.equal(calls, 3);
  assert.equal(waits.length, 4);
  assert.deepEqual([waits[0], waits[2]], [1, 2]);
});

test('a failure that will not pass is thrown at once; attempts are a limit', async () => {
  let calls = 0;
  await assert.rejects(
    withRetries(
      async () => {
        calls++;
        throw new UpstreamError('Produce to t', ErrorCode.TOPIC_AUTHORIZATION_FAILED);
      },
      { attempts: 5, rule: FAST },
    ),
    /TOPIC_AUTHORIZATION_FAILED/,
  );
  assert.equal(calls, 1);
  calls = 0;
  await assert.rejects(
    withRetries(
      async () => {
        calls++;
        throw new Error('connection closed');
      },
      { attempts: 3, rule: FAST },
    ),
    /connection closed/,
  );
  assert.equal(calls, 3);
});

test('the caller may narrow what is retried', async () => {
  let calls = 0;
  await assert.rejects(
    withRetries(
      async () => {
        calls++;
        throw new Error('the upstream cannot hold the topic');
      },
      { attempts: 3, rule: FAST, retriable: () => false },
    ),
  );
  assert.equal(calls, 1);
});
