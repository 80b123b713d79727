import { test } from 'node:test';
import assert from 'node:assert/strict';
import { capacityWarnings, renderStatus } from '../../../src/cli/commands/status.js';
import { carryCapacity } from '../../../src/engine/api/carry-capacity.js';
import type { StatusReport } from '../../../src/ops/admin-reports.js';

const HOUR = 3_600_000;
const GIB = 1 << 30;

function report(carryCapacityOf?: StatusReport['carryCapacity']): StatusReport {
  return { source: 'proxy', dataDir: '/data', compactedTopics: [], partitions: [], ...(carryCapacityOf && { carryCapacity: carryCapacityOf }) };
}

test('status warns when the rate cannot rewrite what this replica carries within the carry age, naming each topic with its numbers', () => {
  // 1 MiB/s rewrites 84.4 GiB in a carry age of a day (a store keeping 2 days, carried at half).
  const capacity = carryCapacity(
    [
      { topic: 'orders', partition: 0, liveBytes: 60 * GIB, carryAfterMs: 24 * HOUR },
      { topic: 'orders', partition: 1, liveBytes: 45 * GIB, carryAfterMs: 24 * HOUR },
      { topic: 'users', partition: 0, liveBytes: 0.5 * GIB, carryAfterMs: 24 * HOUR },
    ],
    1 << 20,
  );
  assert.deepEqual(capacityWarnings(report(capacity)), [
    "warning: at carryBytesPerSecond=1048576 (1.0 MiB/s) this replica's carry passes cannot rewrite the live bytes of the partitions it carries within their carry ages " +
      '(capacity ratio 1.25): a store that caps retention lets go the keys not rewritten in time (docs/operating.md, "When carrying cannot keep up")',
    'warning: topic orders: 105.0 GiB live in 2 partitions carried here, carry age 24 h 0 min; at carryBytesPerSecond=1048576 (1.0 MiB/s) rewriting it takes 29 h 52 min (1.24 of the carry age)',
    'warning: topic users: 512.0 MiB live in 1 partition carried here, carry age 24 h 0 min; at carryBytesPerSecond=1048576 (1.0 MiB/s) rewriting it takes 8 min 32 s (0.01 of the carry age)',
  ]);
  const text = renderStatus(report(capacity), Date.now());
  assert.match(text, /\n\nwarning: at carryBytesPerSecond=1048576 .*\nwarning: topic orders: .*\nwarning: topic users: /);
});

test('status warns from 0.8 of the rate, and says nothing below it or when nothing bounds the rate', () => {
  const at = (liveBytes: number) => carryCapacity([{ topic: 't', partition: 0, liveBytes, carryAfterMs: 1000 }], 1000);
  assert.deepEqual(capacityWarnings(report(at(800))), []);
  const warned = capacityWarnings(report(at(801)));
  assert.equal(warned.length, 2);
  assert.match(warned[0]!, /have little room left to rewrite .*\(capacity ratio 0\.80\)/);
  assert.deepEqual(capacityWarnings(report()), []);
  assert.doesNotMatch(renderStatus(report(), Date.now()), /warning/);
});

test('status names the ten topics taking the most of the rate and counts the rest', () => {
  const capacity = carryCapacity(
    Array.from({ length: 13 }, (_, i) => ({ topic: `t${String(i).padStart(2, '0')}`, partition: 0, liveBytes: 100 + i, carryAfterMs: 1000 })),
    100,
  );
  const warned = capacityWarnings(report(capacity));
  assert.equal(warned.length, 12);
  assert.match(warned[1]!, /^warning: topic t12: /, 'the largest first');
  assert.equal(warned[11], 'warning: and 3 more topics carried here');
});
