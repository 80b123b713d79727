import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LatestCache } from '../../../../src/compaction/engine-client/latest-cache.js';
import type { LatestAnswer } from '../../../../src/engine/api/table-reads.js';

const answer = (offset: number, indexedTo: number): LatestAnswer => ({
  record: { partition: 0, offset, timestamp: 1, key: Buffer.from('k'), value: Buffer.from('v'), headers: [] },
  indexedTo,
});
const K = Buffer.from('k');

describe('LatestCache', () => {
  it('keeps an answer until its partition moves, and only for reads its index has reached', () => {
    const cache = new LatestCache();
    const moves = cache.movesOf('t', 0);
    cache.put('t', 0, K, answer(5, 10), moves);
    assert.equal(cache.get('t', 0, K, 0)?.record?.offset, 5);
    assert.equal(cache.get('t', 0, K, 11), undefined, 'a read after a write the index has not reached goes to the index');
    assert.equal(cache.get('t', 1, K, 0), undefined);
    cache.moved('t', 1);
    assert.equal(cache.get('t', 0, K, 0)?.record?.offset, 5, "another partition's move");
    cache.moved('t', 0);
    assert.equal(cache.get('t', 0, K, 0), undefined);
  });

  it('does not keep an answer made while its index moved', () => {
    const cache = new LatestCache();
    const moves = cache.movesOf('t', 0);
    cache.moved('t', 0);
    cache.put('t', 0, K, answer(5, 10), moves);
    assert.equal(cache.get('t', 0, K, 0), undefined);
    cache.put('t', 0, K, answer(6, 11), cache.movesOf('t', 0));
    cache.clear();
    assert.equal(cache.get('t', 0, K, 0), undefined, 'a worker started again may have moved every index');
  });
});
