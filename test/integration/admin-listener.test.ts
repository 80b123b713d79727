/**
 * The management listeners of a real `kcompact proxy` process in front of kfake, as the pod
 * network and an operator meet them: the metrics listener serves the probes and /metrics and none
 * of the admin routes (nothing a refused request asks for happens, and the refusals are logged
 * once per source and minute and counted); the admin listener serves the admin verbs, on loopback
 * without a token, elsewhere only with the token of a file that can be rotated; the CLI finds it
 * from the same settings and says what to do when it cannot get in.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import kafkajs from 'kafkajs';
import type { EngineStatus } from '../../src/engine/api/engine-reports.js';
import type { StatusReport } from '../../src/ops/admin-reports.js';
import { ADMIN_PATHS, startCliProxy, type CliProxy } from '../support/kcompact-cli.js';
import { scrape } from '../support/prometheus.js';
import { makeTempDir, pollUntil, requirePeers, runProcess, startKfake, type RunResult } from '../support/index.js';

const main = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/cli/main.js');
const TOPIC = 'table';
const STATIC_TOPIC = JSON.stringify([{ topic: TOPIC, configs: { 'cleanup.policy': 'compact', 'segment.ms': '1000' } }]);
const TOKEN = 'Zmlyc3QtdG9rZW4tb2YtdGhlLWFkbWluLWxpc3RlbmVy';
const ROTATED = 'cm90YXRlZC10b2tlbi1vZi10aGUtYWRtaW4tbGlzdGVuZXI=';

function kcompact(args: string[], env: Record<string, string> = {}): Promise<RunResult> {
  return runProcess(process.execPath, [main, ...args], { timeoutMs: 60_000, env: { ...process.env, ...env } });
}

/** Five records with old timestamps and a current one: the first five are cleanable, three superseded. */
async function produceRound(bootstrap: string): Promise<void> {
  const producer = new kafkajs.Kafka({ clientId: 'admin-listener-test', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING }).producer();
  await producer.connect();
  try {
    const old = String(Date.now() - 60_000);
    await producer.send({
      topic: TOPIC,
      acks: -1,
      messages: [
        ['a', '1'],
        ['b', '1'],
        ['a', '2'],
        ['b', '2'],
        ['a', '3'],
      ].map(([key, value]) => ({ key, value, timestamp: old })),
    });
    await producer.send({ topic: TOPIC, acks: -1, messages: [{ key: 'c', value: 'roll' }] });
  } finally {
    await producer.disconnect();
  }
}

async function engine(cli: CliProxy): Promise<EngineStatus & StatusReport> {
  const res = await cli.http('/status');
  assert.equal(res.status, 200, res.body);
  return JSON.parse(res.body) as EngineStatus & StatusReport;
}

const refusedLines = (cli: CliProxy) => cli.logs().filter((l) => l.msg === 'refused a management request');

test('the metrics listener serves probes and metrics and no admin route; the admin listener serves them on loopback', async (t: TestContext) => {
  if (!requirePeers(t)) return;
  const kfake = await startKfake({ brokers: 1 });
  // Only requests clean: a cleaner round would race the assertions.
  const cli = await startCliProxy({ upstream: kfake.bootstrap, args: ['--topics', STATIC_TOPIC, '--cleaner-backoff-ms', '86400000'] });
  try {
    await produceRound(cli.bootstrap);
    await pollUntil('the round is indexed', 30_000, async () =>
      (await engine(cli)).partitions.find((p) => p.topic === TOPIC)?.nextOffset === 6 ? true : undefined,
    );

    for (const probe of ['/livez', '/readyz', '/startupz', '/metrics'])
      assert.equal((await cli.http(probe, 'GET', { listener: 'metrics' })).status, 200, probe);
    let refused = 0;
    for (const route of ADMIN_PATHS) {
      for (const method of ['GET', 'POST']) {
        const res = await cli.http(`${route}?topic=${TOPIC}`, method, { listener: 'metrics' });
        refused++;
        assert.equal(res.status, 404, `${method} ${route} on the metrics listener`);
        assert.match(res.body, /the admin routes are served on the admin listener/);
      }
    }
    // The probes and metrics are not on the admin listener either.
    assert.equal((await cli.http('/metrics', 'GET', { listener: 'admin' })).status, 404);

    const status = await engine(cli);
    const partition = status.partitions.find((p) => p.topic === TOPIC)!;
    assert.deepEqual([status.cleaner?.cleansTotal, partition.cleanedUpTo], [0, 0], 'the refused POST /compact cleaned nothing');
    assert.ok(!cli.logs().some((l) => /rebuil/i.test(l.msg)), 'the refused POST /rebuild-index dropped no index');
    assert.deepEqual(status.listeners?.admin, { address: cli.admin, token: false });

    const lines = refusedLines(cli);
    assert.equal(lines.length, 1, `one line for ${refused} refusals from one source within the minute`);
    assert.deepEqual([lines[0]!.level, lines[0]!.listener, lines[0]!.source, lines[0]!.reason], ['warn', 'metrics', '127.0.0.1', 'admin-route']);
    const metrics = await scrape(cli.management);
    assert.equal(metrics.value('kcompact_management_requests_refused_total', { listener: 'metrics', reason: 'admin-route' }), refused);
    assert.equal(metrics.value('kcompact_management_requests_refused_total', { listener: 'admin', reason: 'no-token' }), 0);

    // The same clean through the admin listener happens.
    const clean = await cli.http(`/compact?topic=${TOPIC}`, 'POST');
    assert.equal(clean.status, 200, clean.body);
    assert.equal((JSON.parse(clean.body) as { cleaned: { removed: number }[] }).cleaned[0]?.removed, 3);
    const verb = await kcompact(['status', '--admin-listen', cli.admin, '--json']);
    assert.equal(verb.code, 0, verb.stderr);
    assert.equal((JSON.parse(verb.stdout) as StatusReport).cleaner?.cleansTotal, 1);
    const wrongListener = await kcompact(['compact', '--admin-listen', cli.management]);
    assert.equal(wrongListener.code, 1);
    assert.match(
      wrongListener.stderr,
      new RegExp(
        `http://${cli.management} is the proxy's metrics listener \\(probes and /metrics\\), not its admin listener: give --admin-listen / KCOMPACT_ADMIN_LISTEN / config key "adminListen" the proxy's admin address`,
      ),
    );
  } finally {
    await cli.stop();
    await kfake.stop();
  }
});

test('an admin listener opened wider takes only the token of its file, rotated without a restart; the CLI sends it from the same settings', async (t: TestContext) => {
  if (!requirePeers(t)) return;
  const kfake = await startKfake({ brokers: 1 });
  const temp = makeTempDir('kcompact-admin-token-');
  const tokenFile = path.join(temp.path, 'token');
  const wrongFile = path.join(temp.path, 'wrong-token');
  fs.writeFileSync(tokenFile, `${TOKEN}\n`);
  fs.writeFileSync(wrongFile, 'bm90LXRoZS1wcm94eXMtdG9rZW4tYXQtYWxs\n');
  const cli = await startCliProxy({ upstream: kfake.bootstrap, adminHost: '0.0.0.0', adminTokenFile: tokenFile, args: ['--topics', STATIC_TOPIC] });
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
  try {
    assert.equal((await cli.http('/status', 'GET', { headers: {} })).status, 401);
    assert.equal((await cli.http('/status', 'GET', { headers: bearer(ROTATED) })).status, 401);
    assert.equal((await cli.http('/status')).status, 200, 'the token of the file');
    // Opened wider: reachable on the machine's other addresses, with the token and only with it.
    const port = Number(cli.admin.split(':')[1]);
    const external = Object.values(os.networkInterfaces())
      .flatMap((l) => l ?? [])
      .find((i) => !i.internal && i.family === 'IPv4')?.address;
    if (external !== undefined) {
      assert.equal((await fetch(`http://${external}:${port}/status`)).status, 401, `no token via ${external}`);
      assert.equal((await fetch(`http://${external}:${port}/status`, { headers: bearer(TOKEN) })).status, 200, `the token via ${external}`);
    }

    // The CLI: the token file from a flag, the environment or the proxy's config file.
    const config = path.join(temp.path, 'kcompact.json');
    fs.writeFileSync(config, JSON.stringify({ upstream: kfake.bootstrap, adminListen: `0.0.0.0:${port}`, adminTokenFile: tokenFile }));
    const asked = await Promise.all([
      kcompact(['status', '--admin-listen', cli.admin, '--admin-token-file', tokenFile, '--json']),
      kcompact(['status', '--json'], { KCOMPACT_ADMIN_LISTEN: cli.admin, KCOMPACT_ADMIN_TOKEN_FILE: tokenFile }),
      kcompact(['status', '--config', config, '--json']),
    ]);
    for (const r of asked) {
      assert.equal(r.code, 0, r.stderr);
      assert.deepEqual((JSON.parse(r.stdout) as StatusReport).listeners?.admin, { address: `0.0.0.0:${port}`, token: true });
    }
    const without = await kcompact(['compact', '--admin-listen', cli.admin]);
    assert.equal(without.code, 1);
    assert.match(
      without.stderr,
      new RegExp(
        `the admin listener at http://${cli.admin} requires a bearer token: give --admin-token-file / KCOMPACT_ADMIN_TOKEN_FILE / config key "adminTokenFile" the proxy's token file`,
      ),
    );
    const wrong = await kcompact(['compact', '--admin-listen', cli.admin, '--admin-token-file', wrongFile]);
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, new RegExp(`refused the token in ${wrongFile}: it is not the one the proxy's adminTokenFile holds now`));
    assert.equal((await engine(cli)).cleaner?.cleansTotal, 0, 'the refused verbs cleaned nothing');

    // Rotation: the file changes, the proxy takes the new token within seconds and refuses the old one.
    fs.writeFileSync(tokenFile, `${ROTATED}\n`);
    await pollUntil('the rotated token is in force', 20_000, async () =>
      (await cli.http('/status', 'GET', { headers: bearer(ROTATED) })).status === 200 ? true : undefined,
    );
    assert.equal((await cli.http('/status', 'GET', { headers: bearer(TOKEN) })).status, 401, 'the old token is refused');
    const afterRotation = await kcompact(['compact', '--config', config, '--json']);
    assert.equal(afterRotation.code, 0, afterRotation.stderr);

    const lines = refusedLines(cli);
    assert.equal(lines.filter((l) => l.source === '127.0.0.1' && l.level === 'warn').length, 1, 'once per source and minute');
    assert.ok(
      lines.every((l) => !JSON.stringify(l).includes(TOKEN) && !JSON.stringify(l).includes(ROTATED)),
      'no token in the log',
    );
    const metrics = await scrape(cli.management);
    assert.ok((metrics.value('kcompact_management_requests_refused_total', { listener: 'admin', reason: 'no-token' }) ?? 0) >= 2);
    assert.ok((metrics.value('kcompact_management_requests_refused_total', { listener: 'admin', reason: 'wrong-token' }) ?? 0) >= 3);
  } finally {
    await cli.stop();
    await kfake.stop();
    temp.remove();
  }
});
