import { test } from 'node:test';
import assert from 'node:assert/strict';
import { resolveConfig, ConfigError, envOf, flagOf, SETTINGS } from '../../../src/config/settings.js';

test('flag, env and file key names derive from one setting name', () => {
  assert.equal(flagOf('dataDir'), 'data-dir');
  assert.equal(envOf('dataDir'), 'KCOMPACT_DATA_DIR');
  assert.equal(envOf('brokerPortBase'), 'KCOMPACT_BROKER_PORT_BASE');
  assert.ok(SETTINGS.some((s) => s.key === 'upstream'));
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
  assert.deepEqual(c.upstream, [{ host: 'a', port: 1 }, { host: '::1', port: 9093 }]);
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
    assert.throws(() => resolveConfig(cli, env, file), (err: unknown) => err instanceof ConfigError && pattern.test(err.message), String(pattern));
  }
});
