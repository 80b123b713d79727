import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createPartitionsFilter } from '../../../../src/compaction/config/create-partitions.js';
import { ErrorCode } from '../../../../src/protocol/errors.js';
import { ApiKey } from '../../../../src/protocol/messages.js';
import { FilterHarness } from '../../../support/filter-harness.js';

test('CreatePartitions goes on unchanged, and its answer back as it came', async () => {
  const harness = new FilterHarness(createPartitionsFilter);
  const run = await harness.request(ApiKey.CreatePartitions, 3, {
    topics: [{ name: 'orders', count: 4, assignments: null }],
    timeoutMs: 1000,
    validateOnly: false,
  });
  assert.ok(run.kind === 'forward' && !run.changed && !run.awaitsResponse);
  const answer = await harness.response(ApiKey.CreatePartitions, 3, {
    throttleTimeMs: 0,
    results: [{ name: 'orders', errorCode: ErrorCode.NONE, errorMessage: null }],
  });
  assert.ok(answer.kind === 'forward' && !answer.changed);
});
