import { test } from 'node:test';
import assert from 'node:assert/strict';
import { topicFilter } from '../../../src/ops/metrics/topic-filter.js';

test('an empty include list admits every topic', () => {
  const all = topicFilter([], []);
  assert.ok(all('orders') && all('__consumer_offsets'));
});

test('include globs admit, exclude wins over include', () => {
  const f = topicFilter(['orders-*', 'users'], ['orders-test*']);
  assert.equal(f('orders-eu'), true);
  assert.equal(f('orders-'), true, '* matches an empty run');
  assert.equal(f('users'), true);
  assert.equal(f('users-2'), false, 'names without * match exactly');
  assert.equal(f('orders-test-1'), false);
  assert.equal(f('payments'), false);
});

test('dots and other regular-expression characters in names are literal', () => {
  const f = topicFilter(['a.b', 'c+*'], []);
  assert.equal(f('a.b'), true);
  assert.equal(f('aXb'), false);
  assert.equal(f('c+1'), true);
  assert.equal(f('cc1'), false);
});
