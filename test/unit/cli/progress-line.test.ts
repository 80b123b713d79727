import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ProgressLine } from '../../../src/cli/commands/progress.js';

function recorder(isTTY: boolean) {
  const writes: string[] = [];
  return { stream: { isTTY, write: (t: string) => writes.push(t) }, writes };
}

test('off a terminal: a whole line at most every few seconds, with rate and time left', () => {
  let now = 0;
  const { stream, writes } = recorder(false);
  const line = new ProgressLine(stream, 'rebuilding t', () => now);
  line.update({ done: 0, total: 1000, partitionsDone: 0, partitions: 2 });
  now = 1000;
  line.update({ done: 100, total: 1000, partitionsDone: 0, partitions: 2 });
  assert.equal(writes.length, 1, 'nothing within the interval');
  now = 5000;
  line.update({ done: 500, total: 1000, partitionsDone: 1, partitions: 2 });
  line.finish({ done: 1000, total: 1000, partitionsDone: 2, partitions: 2 });
  assert.deepEqual(writes, [
    'rebuilding t: 0/2 partitions caught up, offset 0 of 1,000 (0.0%)\n',
    'rebuilding t: 1/2 partitions caught up, offset 500 of 1,000 (50.0%), 100/s, about 5.0 s left\n',
    'rebuilding t: 2/2 partitions caught up, offset 1,000 of 1,000 (100.0%)\n',
  ]);
});

test('on a terminal: one line rewritten in place, ended by the last one', () => {
  let now = 0;
  const { stream, writes } = recorder(true);
  const line = new ProgressLine(stream, 'rebuilding t', () => now);
  line.update({ done: 0, total: 10, partitionsDone: 0, partitions: 1 });
  now = 600;
  line.update({ done: 5, total: 10, partitionsDone: 0, partitions: 1 });
  line.finish({ done: 10, total: 10, partitionsDone: 1, partitions: 1 });
  assert.equal(writes.length, 3);
  assert.ok(writes.every((w) => w.startsWith('\r\x1b[K')));
  assert.ok(!writes[1]!.endsWith('\n') && writes[2]!.endsWith('\n'));
});
