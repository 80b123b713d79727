import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EmptyAnswers } from '../../../../src/compaction/fetch-view/empty-answers.js';

test('an empty answer is recalled until it is forgotten or expires', () => {
  let now = 1000;
  const answers = new EmptyAnswers({ ttlMs: 100, clock: () => now });
  const key = EmptyAnswers.key('kafkajs', 't', 0, 5);
  answers.remember(key, 99);
  assert.equal(answers.recall(key), 99);
  assert.equal(answers.recall(EmptyAnswers.key('other', 't', 0, 5)), undefined, 'per client');
  now += 101;
  assert.equal(answers.recall(key), undefined);
  answers.remember(key, 99);
  answers.forget(key);
  assert.equal(answers.recall(key), undefined);
});

test('memory is bounded: the least recently remembered answer goes first', () => {
  const answers = new EmptyAnswers({ capacity: 2 });
  answers.remember('a', 1);
  answers.remember('b', 2);
  answers.remember('a', 1);
  answers.remember('c', 3);
  assert.equal(answers.size, 2);
  assert.equal(answers.recall('b'), undefined);
  assert.equal(answers.recall('a'), 1);
});
