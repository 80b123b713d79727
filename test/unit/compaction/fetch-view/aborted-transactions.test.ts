import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mergeAbortedTransactions, visibleAbortedTransactions } from '../../../../src/compaction/fetch-view/aborted-transactions.js';

const txn = (producerId: bigint, firstOffset: bigint) => ({ producerId, firstOffset });

test('an aborted transaction whose marker was removed is no longer listed', () => {
  const markers = [
    { producerId: 7n, offset: 5, visible: false },
    { producerId: 7n, offset: 9, visible: true },
    { producerId: 8n, offset: 12, visible: true },
  ];
  assert.deepEqual(visibleAbortedTransactions([txn(7n, 0n), txn(7n, 6n), txn(8n, 10n)], markers), [txn(7n, 6n), txn(8n, 10n)]);
});

test('a transaction whose marker is not in the fetched data stays listed', () => {
  assert.deepEqual(visibleAbortedTransactions([txn(7n, 20n)], [{ producerId: 7n, offset: 5, visible: false }]), [txn(7n, 20n)]);
  assert.equal(visibleAbortedTransactions(null, [{ producerId: 7n, offset: 5, visible: false }]), null);
});

test('lists from continued reads merge without duplicates', () => {
  assert.deepEqual(mergeAbortedTransactions([txn(1n, 2n)], [txn(1n, 2n), txn(3n, 4n)]), [txn(1n, 2n), txn(3n, 4n)]);
  assert.deepEqual(mergeAbortedTransactions(null, [txn(3n, 4n)]), [txn(3n, 4n)]);
  assert.equal(mergeAbortedTransactions(null, null), null);
});
