import { test } from 'node:test';
import assert from 'node:assert/strict';
import { unifiedDiff } from '../../../src/inject/line-diff.js';

const lines = (n: number, f: (i: number) => string = (i) => `line ${i}`) => Array.from({ length: n }, (_, i) => f(i + 1)).join('\n') + '\n';

test('equal texts have no diff', () => {
  assert.equal(unifiedDiff('a\nb\n', 'a\nb\n', 'a/x', 'b/x'), '');
});

test('a change is one hunk with three lines of context, removals before additions', () => {
  const before = lines(10);
  const after = before.replace('line 5\n', 'line five\n');
  assert.equal(
    unifiedDiff(before, after, 'a/x', 'b/x'),
    ['--- a/x', '+++ b/x', '@@ -2,7 +2,7 @@', ' line 2', ' line 3', ' line 4', '-line 5', '+line five', ' line 6', ' line 7', ' line 8', ''].join('\n'),
  );
});

test('changes far apart are separate hunks, near ones share one; additions at the end and into an empty file', () => {
  const before = lines(30);
  const after = before.replace('line 2\n', 'line 2\nnew a\n').replace('line 25\n', '').replace('line 28\n', 'line 28\nnew b\n');
  const diff = unifiedDiff(before, after, 'a/x', 'b/x');
  assert.deepEqual(
    diff.split('\n').filter((l) => l.startsWith('@@')),
    ['@@ -1,5 +1,6 @@', '@@ -22,9 +23,9 @@'],
  );
  assert.equal(unifiedDiff('', 'a\n', 'a/x', 'b/x'), '--- a/x\n+++ b/x\n@@ -0,0 +1 @@\n+a\n');
  assert.equal(unifiedDiff('a\n', 'a\nb\n', 'a/x', 'b/x'), '--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n a\n+b\n');
});

test('a last line without a newline is marked as diff marks it', () => {
  assert.equal(unifiedDiff('a\nb', 'a\nb\nc\n', 'a/x', 'b/x'), '--- a/x\n+++ b/x\n@@ -1,2 +1,3 @@\n a\n-b\n\\ No newline at end of file\n+b\n+c\n');
});

test('applying the diff to the old text gives the new one', () => {
  const before = lines(200, (i) => (i % 7 === 0 ? 'same' : `l${i}`));
  const after = lines(210, (i) => (i % 5 === 0 ? 'same' : i % 11 === 0 ? `x${i}` : `l${i}`));
  const diff = unifiedDiff(before, after, 'a', 'b').split('\n').slice(2, -1);
  const old = before.split('\n').slice(0, -1);
  const out: string[] = [];
  let at = 0;
  for (const line of diff) {
    const hunk = line.match(/^@@ -(\d+)(?:,(\d+))? /);
    if (hunk) {
      const start = Number(hunk[1]) - (hunk[2] === '0' ? 0 : 1);
      out.push(...old.slice(at, start));
      at = start;
    } else if (line.startsWith('+')) out.push(line.slice(1));
    else {
      assert.equal(old[at], line.slice(1));
      if (line.startsWith(' ')) out.push(line.slice(1));
      at++;
    }
  }
  out.push(...old.slice(at));
  assert.equal(out.join('\n') + '\n', after);
});
