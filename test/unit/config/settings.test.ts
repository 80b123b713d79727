import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfigFile } from '../../../src/config/file.js';
import { resolveConfig, resolveSettings, ConfigError, envOf, flagOf, SETTING_KEYS } from '../../../src/config/settings.js';

test('flag, env and file key names derive from one setting name', () => {
  assert.equal(flagOf('dataDir'), 'data-dir');
  assert.equal(envOf('dataDir'), 'KCOMPACT_DATA_DIR');
  assert.equal(envOf('brokerPortBase'), 'KCOMPACT_BROKER_PORT_BASE');
  assert.ok(SETTING_KEYS.includes('upstream'));
});

test('command line beats environment beats file beats default', () => {
  const file = { upstream: ['f:1'], listen: '127.0.0.1:7000', logLevel: 'warn', dataDir: '/file' };
  const env = { KCOMPACT_LISTEN: '127.0.0.1:8000', KCOMPACT_DATA_DIR: '/env' };
  const c = resolveConfig({ dataDir: '/cli' }, env, file);
  assert.deepEqual(c.upstream, [{ host: 'f', port: 1 }]);
  assert.deepEqual(c.listen, { host: '127.0.0.1', port: 8000 });
  assert.equal(c.dataDir, '/cli');
  assert.equal(c.logLevel, 'warn');
  assert.equal(c.brokerPortBase, 8001);
  assert.equal(c.maxFrameBytes, 100 * 1024 * 1024);
  assert.equal(c.advertisedHost, '127.0.0.1');
});

test('upstream lists and IPv6 addresses parse', () => {
  const c = resolveConfig({ upstream: 'a:1, [::1]:9093', listen: '0.0.0.0:9092' }, {}, {});
  assert.deepEqual(c.upstream, [
    { host: 'a', port: 1 },
    { host: '::1', port: 9093 },
  ]);
  assert.equal(c.advertisedHost, '127.0.0.1');
});

test('bad values fail fast naming the flag, env var and file key', () => {
  const cases: [Record<string, unknown>, Record<string, string>, Record<string, unknown>, RegExp][] = [
    [{}, {}, {}, /missing --upstream \/ KCOMPACT_UPSTREAM/],
    [{ upstream: 'nohost' }, {}, {}, /invalid --upstream .*expected HOST:PORT/],
    [{ upstream: 'a:1', listen: 'x:70000' }, {}, {}, /invalid --listen .*above 65535/],
    [{ upstream: 'a:1' }, { KCOMPACT_MAX_FRAME_BYTES: 'lots' }, {}, /KCOMPACT_MAX_FRAME_BYTES .*integer/],
    [{ upstream: 'a:1' }, {}, { logLevel: 'loud' }, /config key "logLevel".*debug, info, warn, error/],
    [{ upstream: 'a:1' }, {}, { colour: 'red' }, /unknown config file key "colour"/],
    [{ upstream: 'a:1', listen: '127.0.0.1:9092', brokerPortBase: '9000' }, {}, {}, /would put broker ports on the listen port/],
  ];
  for (const [cli, env, file, pattern] of cases) {
    assert.throws(
      () => resolveConfig(cli, env, file),
      (err: unknown) => err instanceof ConfigError && pattern.test(err.message),
      String(pattern),
    );
  }
});

test('each kind of invalid value names the setting and what it allows', () => {
  const cases: [Record<string, unknown>, Record<string, string>, Record<string, unknown>, RegExp][] = [
    [
      { upstream: 'a:1', metricsListen: 'localhost' },
      {},
      {},
      /invalid --metrics-listen \/ KCOMPACT_METRICS_LISTEN \/ config key "metricsListen": expected HOST:PORT/,
    ],
    [{ upstream: 'a:b' }, {}, {}, /invalid --upstream .*expected HOST:PORT/],
    [{ upstream: 'a:1' }, {}, { requestTimeoutMs: -5 }, /config key "requestTimeoutMs": expected an integer from 100 to 3600000, got -5/],
    [{ upstream: 'a:1' }, {}, { cleanerBackoffMs: 1.5 }, /config key "cleanerBackoffMs": expected an integer from 10 to/],
    [{ upstream: 'a:1' }, { KCOMPACT_MAX_FRAME_BYTES: '0x100000' }, {}, /KCOMPACT_MAX_FRAME_BYTES .*expected an integer/],
    [{ upstream: 'a:1' }, { KCOMPACT_MAX_FRAME_BYTES: '1e6' }, {}, /KCOMPACT_MAX_FRAME_BYTES .*expected an integer/],
    [{ upstream: 'a:1', logLevel: 'verbose' }, {}, {}, /invalid --log-level .*expected one of debug, info, warn, error/],
    [
      { upstream: 'a:1', topics: '[{"topic":' },
      {},
      {},
      /invalid --topics .*expected a JSON array of \{"topic": NAME, "configs": \{NAME: VALUE\}\}, but the value is not valid JSON/,
    ],
    [{ upstream: 'a:1', topics: '{"topic":"t"}' }, {}, {}, /invalid --topics .*expected a JSON array/],
    [{ upstream: 'a:1', brokerConfigs: '{x' }, {}, {}, /invalid --broker-configs .*expected a JSON object .*not valid JSON/],
    [
      { upstream: 'a:1' },
      {},
      { topics: [{ topic: 't', configs: { 'cleanup.policy': 'compacted' } }] },
      /invalid --topics .*config key "topics": static topic t: Invalid value compacted for configuration cleanup.policy/,
    ],
    [
      { upstream: 'a:1' },
      {},
      { topics: [{ topic: 't', configs: { 'flush.ms': '1' } }] },
      /config key "topics": static topic t: flush.ms is not a config kcompact handles/,
    ],
    [
      { upstream: 'a:1' },
      {},
      {
        topics: [
          { topic: 't', configs: {} },
          { topic: 't', configs: {} },
        ],
      },
      /config key "topics": static topic t is listed twice/,
    ],
    [
      { upstream: 'a:1' },
      {},
      // Fine alone; against the broker default of max.compaction.lag.ms it is not.
      { topics: [{ topic: 't', configs: { 'min.compaction.lag.ms': '5000' } }], brokerConfigs: { 'log.cleaner.max.compaction.lag.ms': '1000' } },
      /config key "topics": static topic t: conflict topic config setting min.compaction.lag.ms \(5000\) > max.compaction.lag.ms \(1000\)/,
    ],
    [
      { upstream: 'a:1' },
      {},
      { brokerConfigs: { 'log.cleaner.threads': '2' } },
      /config key "brokerConfigs": broker config log.cleaner.threads is not one kcompact knows; it takes: .*log.cleanup.policy/,
    ],
    [
      { upstream: 'a:1' },
      {},
      { brokerConfigs: { 'log.cleaner.min.cleanable.ratio': 'half' } },
      /config key "brokerConfigs": broker config log.cleaner.min.cleanable.ratio=half is not a valid DOUBLE/,
    ],
  ];
  for (const [cli, env, file, pattern] of cases) {
    assert.throws(
      () => resolveConfig(cli, env, file),
      (err: unknown) => err instanceof ConfigError && pattern.test(err.message),
      String(pattern),
    );
  }
});

test('resolveSettings checks only the settings asked for, and the file keys', () => {
  assert.deepEqual(resolveSettings(['metricsListen', 'dataDir'], {}, { KCOMPACT_DATA_DIR: '/env' }, { metricsListen: '127.0.0.1:7000', upstream: 'bad' }), {
    metricsListen: { host: '127.0.0.1', port: 7000 },
    dataDir: '/env',
  });
  assert.deepEqual(resolveSettings(['metricsListen'], {}, {}, {}), {});
  assert.throws(() => resolveSettings(['metricsListen'], {}, {}, { metricsListne: 'x:1' }), /unknown config file key "metricsListne"/);
  assert.throws(() => resolveSettings(['metricsListen'], { metricsListen: 'x' }, {}, {}), /invalid --metrics-listen/);
});

test('a config file that cannot be read or parsed names --config and the file', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-settings-'));
  try {
    assert.throws(
      () => loadConfigFile(path.join(dir, 'missing.json')),
      (err: unknown) => err instanceof ConfigError && /cannot read config file .*missing\.json \(--config \/ KCOMPACT_CONFIG\): ENOENT/.test(err.message),
    );
    fs.writeFileSync(path.join(dir, 'bad.json'), '{"upstream": ');
    assert.throws(
      () => loadConfigFile(path.join(dir, 'bad.json')),
      (err: unknown) => err instanceof ConfigError && /bad\.json \(--config \/ KCOMPACT_CONFIG\) is not valid JSON/.test(err.message),
    );
    fs.writeFileSync(path.join(dir, 'list.json'), '[]');
    assert.throws(() => loadConfigFile(path.join(dir, 'list.json')), /must hold a JSON object of settings/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('the admin listener: loopback by default, elsewhere only with a usable token file, never on the metrics port', () => {
  const temp = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-admin-settings-'));
  try {
    const base = resolveConfig({ upstream: 'a:1' }, {}, {});
    assert.deepEqual(base.adminListen, { host: '127.0.0.1', port: 9645 });
    assert.equal(base.adminTokenFile, undefined);
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '[::1]'])
      assert.doesNotThrow(() => resolveConfig({ upstream: 'a:1', adminListen: `${host}:7000` }, {}, {}), host);

    const token = path.join(temp, 'token');
    fs.writeFileSync(token, 'dG9rZW4tb2YtdGhlLWFkbWluLWxpc3RlbmVy\n');
    const open = resolveConfig({ upstream: 'a:1' }, { KCOMPACT_ADMIN_LISTEN: '0.0.0.0:9645', KCOMPACT_ADMIN_TOKEN_FILE: token }, {});
    assert.deepEqual([open.adminListen, open.adminTokenFile], [{ host: '0.0.0.0', port: 9645 }, token]);

    const short = path.join(temp, 'short');
    fs.writeFileSync(short, 'abc');
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        { adminListen: '0.0.0.0:9645' },
        /--admin-listen \/ KCOMPACT_ADMIN_LISTEN \/ config key "adminListen" is 0\.0\.0\.0:9645, reachable beyond this machine, and no --admin-token-file .* is set: .*keep it on loopback/,
      ],
      [{ adminListen: '10.1.2.3:9645' }, /reachable beyond this machine/],
      [{ adminListen: 'kcompact.local:9645' }, /reachable beyond this machine/],
      [{ adminListen: '[::]:9645' }, /reachable beyond this machine/],
      [{ adminListen: '127.0.0.1:9644' }, /config key "adminListen" and .*config key "metricsListen" both name port 9644/],
      [{ adminListen: '127.0.0.1:7000', metricsListen: '0.0.0.0:7000' }, /both name port 7000/],
      [{ adminListen: '0.0.0.0:7000', metricsListen: '127.0.0.1:7000', adminTokenFile: token }, /both name port 7000/],
      [{ adminTokenFile: path.join(temp, 'missing') }, /invalid --admin-token-file .*expected the path of a readable file \(ENOENT\)/],
      [{ adminListen: '0.0.0.0:9645', adminTokenFile: short }, /config key "adminTokenFile": .*short: the token has 3 characters; use at least 16/],
    ];
    for (const [cli, pattern] of cases) {
      assert.throws(
        () => resolveConfig({ upstream: 'a:1', ...cli }, {}, {}),
        (err: unknown) => err instanceof ConfigError && pattern.test(err.message),
        String(pattern),
      );
    }
    // Two listeners on distinct hosts of one port, or both on port 0, are fine.
    assert.doesNotThrow(() => resolveConfig({ upstream: 'a:1', adminListen: '127.0.0.1:7000', metricsListen: '127.0.0.2:7000' }, {}, {}));
    assert.doesNotThrow(() => resolveConfig({ upstream: 'a:1', adminListen: '127.0.0.1:0', metricsListen: '127.0.0.1:0' }, {}, {}));
  } finally {
    fs.rmSync(temp, { recursive: true, force: true });
  }
});

test('carryBytesPerSecond: 0 (unbounded) by default, a positive integer or 0, and never so low that no pass fits the carry age', () => {
  assert.equal(resolveConfig({ upstream: 'a:1' }, {}, {}).carryBytesPerSecond, 0);
  assert.equal(resolveConfig({ upstream: 'a:1' }, { KCOMPACT_CARRY_BYTES_PER_SECOND: '1048576' }, {}).carryBytesPerSecond, 1 << 20);
  assert.equal(resolveConfig({ upstream: 'a:1', carryBytesPerSecond: '0' }, {}, { carryBytesPerSecond: 5 }).carryBytesPerSecond, 0);
  for (const bad of ['-1', '1.5', '1e6', 'fast']) {
    assert.throws(
      () => resolveConfig({ upstream: 'a:1' }, { KCOMPACT_CARRY_BYTES_PER_SECOND: bad }, {}),
      (err: Error) =>
        err instanceof ConfigError &&
        err.message.includes('--carry-bytes-per-second / KCOMPACT_CARRY_BYTES_PER_SECOND / config key "carryBytesPerSecond"') &&
        err.message.includes('expected an integer from 0 to'),
      bad,
    );
  }
  // A store keeping 300 s is carried at 150 s, in which 1 byte a second writes 150 bytes: less than any pass.
  assert.throws(
    () => resolveConfig({ upstream: 'a:1', storeRetentionMs: '300000', carryBytesPerSecond: '1' }, {}, {}),
    /carryBytesPerSecond.*1 bytes per second write 150 bytes within the carry age of 150000 ms .*less than the 183 bytes of the smallest carry pass/,
  );
  assert.equal(resolveConfig({ upstream: 'a:1', storeRetentionMs: '300000', carryBytesPerSecond: '2' }, {}, {}).carryBytesPerSecond, 2);
  assert.equal(
    resolveConfig({ upstream: 'a:1', carryBytesPerSecond: '1' }, {}, {}).carryBytesPerSecond,
    1,
    'a retention learned from the store is checked per topic',
  );
});
