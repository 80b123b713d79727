import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CatchUpProgress } from '../../../../src/engine/indexer/catch-up-progress.js';
import { createLogger, setLogLevel, setLogSink } from '../../../../src/common/log.js';

function capture(): { lines: Record<string, unknown>[]; restore: () => void } {
  const lines: Record<string, unknown>[] = [];
  setLogLevel('info');
  const previous = setLogSink((line) => lines.push(JSON.parse(line) as Record<string, unknown>));
  return { lines, restore: () => setLogSink(previous) };
}

test('a long catch-up logs progress at most once per interval, then that it caught up', () => {
  const { lines, restore } = capture();
  try {
    let now = 0;
    const progress = new CatchUpProgress(createLogger(), 5000, () => now);
    progress.indexed('t', 0, 0, 1000, 100_000, 100_000);
    now = 4000;
    progress.indexed('t', 0, 1000, 40_000, 100_000, 100_000);
    assert.equal(lines.length, 0);
    now = 6000;
    progress.indexed('t', 0, 40_000, 61_000, 100_000, 100_000);
    now = 9000;
    progress.indexed('t', 0, 61_000, 100_000, 100_000, 100_000);
    assert.deepEqual(
      lines.map((l) => [l.msg, l.nextOffset, l.percent, l.offsetsPerSecond, l.remainingSeconds]),
      [
        ['indexing partition', 61_000, 61, 10_000, 4],
        ['partition index caught up with the upstream', 100_000, undefined, 11_111, undefined],
      ],
    );
  } finally {
    restore();
  }
});

test('a short catch-up logs nothing, and a dropped index starts a new one', () => {
  const { lines, restore } = capture();
  try {
    let now = 0;
    const progress = new CatchUpProgress(createLogger(), 5000, () => now);
    progress.indexed('t', 0, 0, 10, 20, 20);
    now = 1000;
    progress.indexed('t', 0, 10, 20, 20, 20);
    assert.equal(lines.length, 0);
    progress.indexed('t', 1, 0, 500, 1000, 1000);
    now = 7000;
    // Rebuilt: the index went back to 0, so the rate is not measured from 500.
    progress.indexed('t', 1, 0, 100, 1000, 1000);
    now = 13_000;
    progress.indexed('t', 1, 100, 400, 1000, 1000);
    assert.deepEqual(
      lines.map((l) => [l.nextOffset, l.offsetsPerSecond]),
      [[400, 50]],
    );
  } finally {
    restore();
  }
});
