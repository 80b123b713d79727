/**
 * The package a user installs: `npm pack` of this clone holds only what runs (compiled code,
 * README, LICENSE, the config examples), and `npm install -g` of that tarball into an empty
 * prefix gives a `kcompact` that serves clients in front of a real store, as a user on a clean
 * machine would run it.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import kafkajs from 'kafkajs';
import { startCliProxy } from '../support/kcompact-cli.js';
import { makeTempDir, requirePeers, startKfake, type RunningKfake, type TempDir } from '../support/index.js';
import { runProcess } from '../support/processes.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const skip = requirePeers(['kfake']);
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { name: string; version: string };

/** npm installs dependencies from the registry and compiles better-sqlite3 when no prebuilt binary is reachable. */
const INSTALL_TIMEOUT_MS = 15 * 60_000;

let temp: TempDir;
let tarball: string;
let packed: string[];
let kfake: RunningKfake;

before(async () => {
  if (skip) return;
  temp = makeTempDir('kcompact-package-');
  // The clone is built already (make test builds first): prepack's build is not run again.
  const pack = await runProcess('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', temp.path], { cwd: root, timeoutMs: 120_000 });
  assert.equal(pack.code, 0, `npm pack failed: ${pack.stderr}`);
  const [report] = JSON.parse(pack.stdout) as { filename: string; files: { path: string }[] }[];
  tarball = path.join(temp.path, report!.filename);
  packed = report!.files.map((f) => f.path);
  kfake = await startKfake();
});

after(async () => {
  await kfake?.stop();
  temp?.remove();
});

test('npm pack holds the compiled code, README, LICENSE and config examples, nothing else', { skip }, () => {
  const allowed = (f: string) =>
    f === 'package.json' || f === 'README.md' || f === 'LICENSE' || f.startsWith('config/') || (f.startsWith('dist/src/') && f.endsWith('.js'));
  assert.deepEqual(
    packed.filter((f) => !allowed(f)),
    [],
    'sources, tests, benchmarks, maps and docs stay out',
  );
  for (const needed of ['dist/src/cli/main.js', 'dist/src/engine/worker/engine-worker.js', 'config/kcompact.json', 'config/examples/kfake.json', 'LICENSE']) {
    assert.ok(packed.includes(needed), `the package holds ${needed}`);
  }
  assert.ok(!packed.some((f) => f.startsWith('dist/test/') || f.startsWith('dist/bench/')));
});

test('npm install -g of the tarball into an empty prefix gives a kcompact that proxies a store', { skip, timeout: INSTALL_TIMEOUT_MS + 120_000 }, async () => {
  const prefix = path.join(temp.path, 'prefix');
  const install = await runProcess('npm', ['install', '-g', '--prefix', prefix, '--no-audit', '--no-fund', '--prefer-offline', tarball], {
    cwd: temp.path,
    timeoutMs: INSTALL_TIMEOUT_MS,
  });
  assert.equal(install.code, 0, `npm install -g failed:\n${install.stdout}\n${install.stderr}`);
  const kcompact = path.join(prefix, 'bin', 'kcompact');
  assert.ok(fs.existsSync(kcompact), 'npm linked the bin');
  const version = await runProcess(kcompact, ['--version'], { cwd: temp.path });
  assert.equal(version.stdout.trim(), pkg.version);
  // inject reads YAML at run time: the package brings the parser along.
  const injected = await runProcess(kcompact, ['inject', path.join(root, 'test', 'fixtures', 'manifests', 'orders-app.yaml')], { cwd: temp.path });
  assert.equal(injected.code, 0, `kcompact inject failed: ${injected.stderr}`);
  assert.match(injected.stdout, /- name: kcompact\n\s+image: ghcr\.io\/kcompact\/kcompact:/);

  const proxy = await startCliProxy({ upstream: kfake.bootstrap, executable: kcompact });
  const kafka = new kafkajs.Kafka({ clientId: 'package-install', brokers: [proxy.bootstrap], logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafka.admin();
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  const consumer = kafka.consumer({ groupId: `package-install-${Date.now()}` });
  try {
    await admin.connect();
    await admin.createTopics({
      waitForLeaders: true,
      topics: [{ topic: 'installed', numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }],
    });
    const described = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: 'installed', configNames: ['cleanup.policy'] }],
    });
    assert.equal(described.resources[0]!.configEntries[0]!.configValue, 'compact', 'the config layer (SQLite, the worker) runs from the package');
    await producer.connect();
    await producer.send({ topic: 'installed', messages: [{ key: 'k', value: 'v' }] });
    await consumer.connect();
    await consumer.subscribe({ topic: 'installed', fromBeginning: true });
    const got = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no record came back through the installed proxy within 30 s')), 30_000);
      void consumer.run({
        eachMessage: async ({ message }) => {
          clearTimeout(timer);
          resolve(`${message.key?.toString()}=${message.value?.toString()}`);
        },
      });
    });
    assert.equal(got, 'k=v');
    assert.equal((await proxy.http('/metrics')).status, 200);
  } finally {
    await consumer.disconnect().catch(() => {});
    await producer.disconnect().catch(() => {});
    await admin.disconnect().catch(() => {});
    await proxy.stop();
  }
});
