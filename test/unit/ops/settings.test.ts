import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError, resolveConfig } from '../../../src/config/settings.js';

const base = { upstream: 'a:1' };

test('shutdown and metrics settings: defaults, flags, environment and file', () => {
  const defaults = resolveConfig(base, {}, {});
  assert.equal(defaults.drainTimeoutMs, 10_000);
  assert.equal(defaults.metricsPerPartition, false);
  assert.deepEqual([defaults.metricsTopicsInclude, defaults.metricsTopicsExclude], [[], []]);

  const fromFlags = resolveConfig({ ...base, drainTimeoutMs: '2500', metricsPerPartition: 'true', metricsTopicsInclude: 'orders-*, users' }, {}, {});
  assert.equal(fromFlags.drainTimeoutMs, 2500);
  assert.equal(fromFlags.metricsPerPartition, true);
  assert.deepEqual(fromFlags.metricsTopicsInclude, ['orders-*', 'users']);

  const fromEnv = resolveConfig(base, { KCOMPACT_METRICS_PER_PARTITION: 'TRUE', KCOMPACT_METRICS_TOPICS_EXCLUDE: '["tmp-*"]' }, {});
  assert.deepEqual([fromEnv.metricsPerPartition, fromEnv.metricsTopicsExclude], [true, ['tmp-*']]);

  const fromFile = resolveConfig(base, {}, { metricsPerPartition: true, metricsTopicsInclude: ['a'], drainTimeoutMs: 0 });
  assert.deepEqual([fromFile.metricsPerPartition, fromFile.metricsTopicsInclude, fromFile.drainTimeoutMs], [true, ['a'], 0]);
});

test('bad shutdown and metrics settings fail fast naming the key', () => {
  const cases: [Record<string, unknown>, Record<string, string>, Record<string, unknown>, RegExp][] = [
    [{ ...base, metricsPerPartition: 'yes' }, {}, {}, /invalid --metrics-per-partition .*expected true or false/],
    [{ ...base, drainTimeoutMs: '-1' }, {}, {}, /invalid --drain-timeout-ms .*integer from 0/],
    [base, {}, { metricsPerPartition: true, metricsTopicsInclude: ['a', ''] }, /config key "metricsTopicsInclude": entry 1 must be a non-empty topic name/],
    [base, { KCOMPACT_METRICS_TOPICS_INCLUDE: 'orders' }, {}, /KCOMPACT_METRICS_TOPICS_INCLUDE .*has no effect without --metrics-per-partition/],
    [base, {}, { metricsTopicsExclude: ['x'] }, /"metricsTopicsExclude" has no effect without/],
  ];
  for (const [cli, env, file, pattern] of cases) {
    assert.throws(
      () => resolveConfig(cli, env, file),
      (err: unknown) => err instanceof ConfigError && pattern.test(err.message),
      String(pattern),
    );
  }
});
