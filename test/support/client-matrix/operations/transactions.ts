import assert from 'node:assert/strict';
import { COMPACT, comparableRecords, generatedRecords } from '../records.js';
import { ABORTED_MARK, type TransactionsFixture } from '../types.js';
import type { OperationCheck } from './operation.js';

const GENERATED = { start: 0, keys: 4, valueSize: 24, transactions: 3, perTxn: 3 };

/** ck.py txn's transactions: even-numbered ones commit, odd ones abort with marked values. */
function fixture(topic: string, transactionalId: string): TransactionsFixture {
  const transactions = Array.from({ length: GENERATED.transactions }, (_, t) => {
    const records = generatedRecords({ ...GENERATED, start: GENERATED.start + t * GENERATED.perTxn, count: GENERATED.perTxn });
    const commit = t % 2 === 0;
    return { commit, records: commit ? records : records.map((r) => ({ ...r, value: ABORTED_MARK + r.value })) };
  });
  return { topic, transactionalId, transactions, generated: GENERATED };
}

export const transactions: OperationCheck = {
  op: 'transactions',
  title: 'transactions',
  checks:
    'a transactional producer commits three records, aborts three (delivered first, so the log holds them), and commits ' +
    'three more to a compacted topic; the same client reading at read_committed from offset 0 gets exactly the six ' +
    'committed records at their offsets in the upstream log.',
  async run(h, client, name) {
    const topic = name;
    await h.createTopic(topic, 1, COMPACT);
    const f = fixture(topic, `${name}-txn`);
    const run = await client.transactions!(h.bootstrap, f, (records) => h.holds(topic, records));
    const written = f.transactions.flatMap((t) => t.records);
    const log = await h.upstreamRecords(topic, written.length);
    const aborted = log.filter((r) => r.value?.startsWith(ABORTED_MARK));
    const committed = log.filter((r) => !r.value?.startsWith(ABORTED_MARK));
    assert.deepEqual(
      aborted.map((r) => r.key),
      f.transactions.filter((t) => !t.commit).flatMap((t) => t.records.map((r) => r.key)),
      'the aborted records are in the log',
    );
    const expected = f.transactions.filter((t) => t.commit).flatMap((t) => t.records);
    assert.deepEqual(
      committed.map(({ key, value }) => ({ key, value })),
      expected,
      'the committed records are in the log',
    );
    assert.deepEqual(comparableRecords(run.records), comparableRecords(committed), 'read_committed: exactly the committed records, at their offsets');
  },
};
