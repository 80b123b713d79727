import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { Cleaner } from '../../../../src/engine/cleaner/cleaner.js';
import { rollPolicy } from '../../../../src/engine/store/segment-roller.js';
import { StoreRegistry } from '../../../../src/engine/store/store-registry.js';
import type { TopicPolicy } from '../../../../src/engine/api/topic-policy.js';
import { createLogger } from '../../../../src/common/log.js';
import { DEFAULT_POLICY } from '../../../support/default-policy.js';
import { FakeLog } from './fake-log.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-retention-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

test('compact,delete retention asks the upstream to delete on every partition at once, not one after another', async () => {
  const partitions = 5;
  const policy: TopicPolicy = { ...DEFAULT_POLICY, segmentBytes: 200, delete: true, retentionMs: 50_000 };
  const registry = new StoreRegistry(path.join(dir, 'data'), createLogger(), () => {});
  let inFlight = 0;
  let mostInFlight = 0;
  let release!: () => void;
  const allAsked = new Promise<void>((resolve) => (release = resolve));
  const cleaner = new Cleaner({
    registry,
    policies: () => new Map([['t', policy]]),
    // Each answer waits until every partition has asked (or a second passed): asked one after
    // another, only one is ever in flight.
    deleteRecords: async () => {
      mostInFlight = Math.max(mostInFlight, ++inFlight);
      if (inFlight === partitions) release();
      await Promise.race([allAsked, new Promise((resolve) => setTimeout(resolve, 1000))]);
      inFlight--;
      return true;
    },
    log: createLogger(),
    backoffMs: 1e9,
    clock: () => 100_000,
  });
  for (let p = 0; p < partitions; p++) {
    const log = new FakeLog();
    for (let i = 0; i < 20; i++) await log.append([{ key: `old${i}`, value: 'v' }], 10_000);
    for (let i = 0; i < 20; i++) await log.append([{ key: `new${i}`, value: 'v' }], 90_000);
    await log.feed(registry.ensure('t', p), rollPolicy(policy));
  }
  const report = await cleaner.compactNow('t');
  assert.equal(mostInFlight, partitions);
  assert.deepEqual(
    report.retention.map((r) => [r.partition, r.upstream]).sort(),
    Array.from({ length: partitions }, (_, p) => [p, true]),
  );
  for (let p = 0; p < partitions; p++) {
    const store = registry.get('t', p)!;
    assert.equal(store.checkpoint.logStartOffset, report.retention.find((r) => r.partition === p)!.logStartOffset);
    assert.ok(store.checkpoint.logStartOffset > 0);
  }
  registry.closeAll();
});
