import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AlterOp, applyIncrementalOps } from '../../../../src/compaction/config/incremental-ops.js';

const { SET, DELETE, APPEND, SUBTRACT } = AlterOp;
const op = (name: string, configOperation: number, value: string | null) => ({ name, configOperation, value });

/** Applies one operation after another, as separate requests, returning cleanup.policy after each. */
function steps(...ops: [number, string | null][]): (string | undefined)[] {
  let state: Record<string, string> = {};
  return ops.map(([o, v]) => {
    const r = applyIncrementalOps(state, [op('cleanup.policy', o, v)]);
    assert.ok(r.ok);
    state = r.overrides;
    return state['cleanup.policy'];
  });
}

test('APPEND and SUBTRACT on cleanup.policy give what a Kafka 4.4 broker stored', () => {
  // The sequence run against Kafka; each value is what DescribeConfigs then showed as the override.
  assert.deepEqual(steps([APPEND, 'compact'], [SUBTRACT, 'delete'], [SUBTRACT, 'compact'], [DELETE, null], [SUBTRACT, 'delete']), [
    'delete,compact',
    'compact',
    '',
    undefined,
    '',
  ]);
  assert.deepEqual(steps([APPEND, 'delete'], [APPEND, 'compact,delete'], [SUBTRACT, 'compact,foo']), ['delete', 'delete,compact', 'delete']);
});

test('APPEND keeps raw items (validation comes after) and splits like String.split', () => {
  const r = applyIncrementalOps({ 'cleanup.policy': 'compact' }, [op('cleanup.policy', APPEND, ' delete')]);
  assert.deepEqual(r, { ok: true, overrides: { 'cleanup.policy': 'compact, delete' } });
  const empty = applyIncrementalOps({}, [op('cleanup.policy', APPEND, '')]);
  assert.deepEqual(empty, { ok: true, overrides: { 'cleanup.policy': 'delete,' } });
});

test('SET and DELETE replace or drop the raw value; other configs untouched', () => {
  const r = applyIncrementalOps({ 'segment.ms': '100', 'cleanup.policy': 'compact' }, [op('delete.retention.ms', SET, ' 5 '), op('segment.ms', DELETE, null)]);
  assert.deepEqual(r, { ok: true, overrides: { 'cleanup.policy': 'compact', 'delete.retention.ms': ' 5 ' } });
});

test("APPEND or SUBTRACT on a non-list config, or an unknown operation: Kafka's errors", () => {
  assert.deepEqual(applyIncrementalOps({}, [op('delete.retention.ms', APPEND, '5')]), {
    ok: false,
    errorCode: 40,
    message: "Can't APPEND to key delete.retention.ms because its type is not LIST.",
  });
  assert.deepEqual(applyIncrementalOps({}, [op('segment.ms', SUBTRACT, '5')]), {
    ok: false,
    errorCode: 40,
    message: "Can't SUBTRACT to key segment.ms because its type is not LIST.",
  });
  assert.deepEqual(applyIncrementalOps({}, [op('cleanup.policy', 7, 'x')]), { ok: false, errorCode: -1, message: null });
});
