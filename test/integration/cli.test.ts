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
import { pollUntil } from '../support/index.js';

const main = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/cli/main.js');

function kcompact(args: string[], env: Record<string, string> = {}) {
  return spawn(process.execPath, [main, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
}

test('--help lists every setting with its environment twin', () => {
  const out = spawnSync(process.execPath, [main, 'proxy', '--help'], { encoding: 'utf8' });
  assert.equal(out.status, 0);
  for (const flag of ['--upstream', '--listen', '--data-dir', '--advertised-host', '--broker-port-base', '--max-frame-bytes', '--log-level', '--config']) {
    assert.match(out.stdout, new RegExp(flag), flag);
  }
  assert.match(out.stdout, /env: KCOMPACT_DATA_DIR/);
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
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-cli-'));
  const file = path.join(dir, 'kcompact.json');
  fs.writeFileSync(file, JSON.stringify({ upstream: [broker.address], listen: '127.0.0.1:1', dataDir: path.join(dir, 'data'), logLevel: 'info', metricsListen: management }));
  const proc = kcompact(['proxy', '--config', file], { KCOMPACT_LISTEN: `127.0.0.1:${port}` });
  let stderr = '';
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
  try {
    await pollUntil('proxy started', 15_000, async () => (stderr.includes('kcompact proxy started') && stderr.includes('"role":"broker 0"') ? true : undefined));
    const lines = stderr.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.ok(lines.every((l) => typeof l.time === 'string' && typeof l.level === 'string' && typeof l.msg === 'string'), 'every log line is structured JSON');
    assert.ok(fs.existsSync(path.join(dir, 'data')), 'the data directory is created');
    const conn = await RawConnection.open(`127.0.0.1:${port}`);
    conn.request(ApiKey.Metadata, 12, { topics: [] }, 3);
    const res = await conn.response(ApiKey.Metadata, 12);
    assert.deepEqual([res.body.brokers[0].host, res.body.brokers[0].port], ['127.0.0.1', port + 1]);
    const compact = spawnSync(process.execPath, [main, 'compact', '--metrics-listen', management], { encoding: 'utf8' });
    assert.equal(compact.status, 0, compact.stderr);
    assert.equal(typeof JSON.parse(compact.stdout), 'object', 'kcompact compact prints the clean report');
    proc.kill('SIGTERM');
    assert.equal(await exited, 0);
    assert.ok(await conn.closesWithin(2000), 'client connections are closed on shutdown');
  } finally {
    proc.kill('SIGKILL');
    await broker.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
