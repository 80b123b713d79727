/**
 * The `kcompact` command as an operator runs it: flags, KCOMPACT_* environment, a config file,
 * fail-fast validation, and a clean exit on SIGTERM.
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ApiKey } from '../../src/protocol/messages.js';
import { startFakeBroker } from '../support/fake-broker.js';
import { freePortRun } from '../support/kcompact.js';
import { RawConnection } from '../support/raw-client.js';
import { freePort, pollUntil } from '../support/index.js';
import { runProcess } from '../support/processes.js';
import { envOf, flagOf, SETTING_KEYS, SETTINGS } from '../../src/config/settings.js';

const main = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/cli/main.js');

function kcompact(args: string[], env: Record<string, string> = {}) {
  return spawn(process.execPath, [main, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
}

test('--help documents every verb, and every flag with its environment twin, config key and default', () => {
  const top = spawnSync(process.execPath, [main, '--help'], { encoding: 'utf8' });
  assert.equal(top.status, 0);
  for (const verb of ['proxy', 'status', 'inspect', 'compact', 'rebuild-index', 'get', 'put', 'inject'])
    assert.match(top.stdout, new RegExp(`\\n  ${verb} `), verb);
  const proxy = spawnSync(process.execPath, [main, 'proxy', '--help'], { encoding: 'utf8' }).stdout.replace(/\s+/g, ' ');
  for (const key of SETTING_KEYS) {
    const s = SETTINGS[key];
    assert.ok(proxy.includes(`--${flagOf(key)} <${s.arg}>`), key);
    assert.ok(proxy.includes(`config key: ${key}) (env: ${envOf(key)})`), `${key}: config key and env`);
    if (s.defaultText) assert.ok(proxy.includes(`default: ${s.defaultText};`), `${key}: default`);
  }
  for (const verb of ['status', 'inspect', 'compact', 'rebuild-index']) {
    const help = spawnSync(process.execPath, [main, verb, '--help'], { encoding: 'utf8' }).stdout.replace(/\s+/g, ' ');
    for (const flag of [
      '--admin-listen <HOST:PORT>',
      '(env: KCOMPACT_ADMIN_LISTEN)',
      '--admin-token-file <FILE>',
      '(env: KCOMPACT_ADMIN_TOKEN_FILE)',
      '--config <FILE>',
      '--json',
    ])
      assert.ok(help.includes(flag), `${verb} ${flag}`);
    assert.equal(help.includes('--data-dir <DIR>'), verb === 'status' || verb === 'inspect', `${verb} --data-dir`);
  }
});

test('each kind of invalid configuration exits 2 naming the key and what is allowed', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-cli-'));
  const write = (name: string, value: unknown) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, typeof value === 'string' ? value : JSON.stringify(value));
    return file;
  };
  const cases: [string, string[], Record<string, string>, RegExp][] = [
    ['bad host:port', ['--upstream', 'a:1', '--listen', 'localhost'], {}, /invalid --listen \/ KCOMPACT_LISTEN \/ config key "listen": expected HOST:PORT/],
    ['port out of range', ['--upstream', 'a:1', '--metrics-listen', '127.0.0.1:99999'], {}, /config key "metricsListen": port 99999 is above 65535/],
    ['negative number', ['--upstream', 'a:1', '--max-frame-bytes=-1'], {}, /config key "maxFrameBytes": expected an integer from 1024 to 2147483647, got "-1"/],
    [
      'non-integer number',
      ['--upstream', 'a:1'],
      { KCOMPACT_REQUEST_TIMEOUT_MS: '1.5' },
      /KCOMPACT_REQUEST_TIMEOUT_MS .*expected an integer from 100 to 3600000/,
    ],
    [
      'unknown config file key',
      ['--config', write('unknown.json', { upstream: 'a:1', dataDirectory: '/x' })],
      {},
      /unknown config file key "dataDirectory"; allowed keys: .*dataDir/,
    ],
    [
      'unknown log level',
      ['--upstream', 'a:1'],
      { KCOMPACT_LOG_LEVEL: 'trace' },
      /config key "logLevel": expected one of debug, info, warn, error, got "trace"/,
    ],
    ['malformed topics JSON', ['--upstream', 'a:1', '--topics', '[{"topic": "t",'], {}, /config key "topics": expected a JSON array of .*not valid JSON/],
    [
      'topic config Kafka refuses',
      [
        '--config',
        write('topics.json', { upstream: 'a:1', topics: [{ topic: 't', configs: { 'cleanup.policy': 'compact', 'min.cleanable.dirty.ratio': '2' } }] }),
      ],
      {},
      /config key "topics": static topic t: Invalid value 2\.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1/,
    ],
    [
      'unreadable config file',
      ['--config', path.join(dir, 'missing.json')],
      {},
      /cannot read config file .*missing\.json \(--config \/ KCOMPACT_CONFIG\): ENOENT/,
    ],
    ['config file not JSON', ['--config', write('broken.json', '{"upstream": "a:1",')], {}, /broken\.json \(--config \/ KCOMPACT_CONFIG\) is not valid JSON/],
    ['admin verb with a bad endpoint', ['status', '--admin-listen', 'nohost'], {}, /config key "adminListen": expected HOST:PORT/],
    [
      'admin listener off loopback without a token',
      ['--upstream', 'a:1', '--admin-listen', '0.0.0.0:9645'],
      {},
      /config key "adminListen" is 0\.0\.0\.0:9645, reachable beyond this machine, and no .*config key "adminTokenFile" is set/,
    ],
    [
      'admin verb with a short token',
      ['status', '--admin-token-file', write('short-token', 'abc\n')],
      {},
      /config key "adminTokenFile": .*short-token: the token has 3 characters; use at least 16/,
    ],
    ['unknown flag', ['status', '--colour'], {}, /unknown option '--colour'/],
  ];
  try {
    for (const [what, args, env, pattern] of cases) {
      const argv = args[0] === 'status' ? args : ['proxy', ...args];
      const r = spawnSync(process.execPath, [main, ...argv], { encoding: 'utf8', env: { ...process.env, ...env } });
      assert.equal(r.status, 2, `${what}: exit code (stderr: ${r.stderr})`);
      assert.match(r.stderr, pattern, what);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('invalid configuration fails fast naming the key and what is allowed', () => {
  const bad = spawnSync(process.execPath, [main, 'proxy', '--upstream', 'localhost'], { encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /invalid --upstream \/ KCOMPACT_UPSTREAM .*expected HOST:PORT/);
  const missing = spawnSync(process.execPath, [main, 'proxy'], { encoding: 'utf8', env: { ...process.env, KCOMPACT_UPSTREAM: '' } });
  assert.equal(missing.status, 2);
  assert.match(missing.stderr, /missing --upstream/);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-cli-'));
  try {
    const file = path.join(dir, 'bad.json');
    fs.writeFileSync(file, JSON.stringify({ upstream: 'a:1', maxFrameBytes: 'big' }));
    const fromFile = spawnSync(process.execPath, [main, 'proxy', '--config', file], { encoding: 'utf8' });
    assert.equal(fromFile.status, 2);
    assert.match(fromFile.stderr, /config key "maxFrameBytes": expected an integer/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('runs from a config file with environment overrides, serves, and exits 0 on SIGTERM', async () => {
  const broker = await startFakeBroker();
  const port = await freePortRun(4);
  const management = `127.0.0.1:${port + 3}`;
  const admin = `127.0.0.1:${await freePort()}`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-cli-'));
  const file = path.join(dir, 'kcompact.json');
  fs.writeFileSync(
    file,
    JSON.stringify({
      upstream: [broker.address],
      listen: '127.0.0.1:1',
      dataDir: path.join(dir, 'data'),
      logLevel: 'info',
      metricsListen: management,
      adminListen: admin,
    }),
  );
  const proc = kcompact(['proxy', '--config', file], { KCOMPACT_LISTEN: `127.0.0.1:${port}` });
  let stderr = '';
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  try {
    await pollUntil('proxy started', 15_000, async () =>
      stderr.includes('kcompact proxy started') && stderr.includes('"role":"broker 0"') ? true : undefined,
    );
    const lines = stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.ok(
      lines.every((l) => typeof l.time === 'string' && typeof l.level === 'string' && typeof l.msg === 'string'),
      'every log line is structured JSON',
    );
    assert.ok(fs.existsSync(path.join(dir, 'data')), 'the data directory is created');
    const conn = await RawConnection.open(`127.0.0.1:${port}`);
    conn.request(ApiKey.Metadata, 12, { topics: [] }, 3);
    const res = await conn.response(ApiKey.Metadata, 12);
    assert.deepEqual([res.body.brokers[0].host, res.body.brokers[0].port], ['127.0.0.1', port + 1]);
    // Not spawnSync: the fake broker answers from this process, which must keep running meanwhile.
    const compact = await runProcess(process.execPath, [main, 'compact', '--admin-listen', admin, '--json'], { timeoutMs: 60_000 });
    assert.equal(compact.code, 0, compact.stderr);
    assert.deepEqual(JSON.parse(compact.stdout), { cleaned: [], carried: [], retention: [], failed: [] }, 'kcompact compact --json prints the clean report');
    proc.kill('SIGTERM');
    assert.equal(await exited, 0);
    assert.ok(await conn.closesWithin(2000), 'client connections are closed on shutdown');
  } finally {
    proc.kill('SIGKILL');
    await broker.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
