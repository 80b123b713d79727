import { test } from 'node:test';
import assert from 'node:assert/strict';
import { rebuildProgress } from '../../../src/cli/commands/rebuild-index.js';
import type { PartitionStatus } from '../../../src/engine/api/engine-reports.js';

function status(partition: number, nextOffset: number, highWatermark: number, lastStableOffset = highWatermark): PartitionStatus {
  return {
    topic: 't',
    partition,
    topicId: '',
    leader: 0,
    nextOffset,
    highWatermark,
    lastStableOffset,
    logStartOffset: 0,
    cleanedUpTo: 0,
    indexedRecords: nextOffset,
    dirtyRatio: 0,
    tombstonesPending: 0,
    lastCleanMs: 0,
    lastPass: -1,
    lastPassMs: -1,
    carried: false,
    usedMs: -1,
    uncleanable: false,
  };
}

const targets = [
  { topic: 't', partition: 0, indexedUpTo: 1000 },
  { topic: 't', partition: 1, indexedUpTo: 0 },
];

test('a partition not yet re-created, or not yet heard from, is not caught up', () => {
  const none = rebuildProgress(targets, []);
  assert.deepEqual([none.partitionsDone, none.done, none.total], [0, 0, 1000]);
  // A fresh index before its first fetch: nothing known of the upstream yet.
  const fresh = rebuildProgress(targets, [status(0, 0, 0)]);
  assert.equal(fresh.partitionsDone, 0);
  assert.equal(fresh.total, 1000);
});

test('an empty partition is caught up as soon as its index exists', () => {
  const s = rebuildProgress(targets, [status(1, 0, 0)]);
  assert.deepEqual([s.partitionsDone, s.caughtUp.map((p) => p.partition)], [1, [1]]);
});

test('progress counts offsets towards the dropped index or the upstream end, whichever is further', () => {
  const half = rebuildProgress(targets, [status(0, 400, 1200), status(1, 0, 0)]);
  assert.deepEqual([half.partitionsDone, half.done, half.total], [1, 400, 1200]);
  const done = rebuildProgress(targets, [status(0, 1200, 1200), status(1, 0, 0)]);
  assert.deepEqual([done.partitionsDone, done.done, done.total], [2, 1200, 1200]);
});

test('an index that reaches the dropped position but not the last stable offset is still catching up', () => {
  assert.equal(rebuildProgress(targets.slice(0, 1), [status(0, 1000, 1500)]).partitionsDone, 0);
});

test('a log that shrank below the dropped index counts as caught up at its end', () => {
  const s = rebuildProgress(targets.slice(0, 1), [status(0, 600, 600)]);
  assert.deepEqual([s.partitionsDone, s.done, s.total], [1, 600, 600]);
});
