/**
 * The admin verbs as an operator runs them: the real `kcompact` CLI against a real `kcompact
 * proxy` process in front of kfake (a store without compaction). `status` and `inspect` report
 * what the fetch view serves (survivors, tombstones pending, dirty ratio before and after a
 * clean), `compact` cleans, `rebuild-index` drops the index and reads it again from the upstream
 * while readers see the uncleaned log and ends at the same survivors, and with the proxy stopped
 * `status` and `inspect` read its data directory without changing a byte.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { fileURLToPath } from 'node:url';
import type { CleanReport } from '../../src/engine/api/engine-reports.js';
import type { InspectReport, StatusReport } from '../../src/ops/admin-reports.js';
import { freePortRun } from '../support/kcompact.js';
import {
  comparable,
  franzConsume,
  franzProduce,
  freePort,
  genRecord,
  makeTempDir,
  pollUntil,
  requirePeers,
  runProcess,
  startBackground,
  startKfake,
  tail,
  type ConsumeSummary,
  type RunResult,
} from '../support/index.js';

const main = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/cli/main.js');

const TOPIC = 'table';
const KEYS = 10;
const TOMBSTONE_EVERY = 7;

function kcompact(args: string[]): Promise<RunResult> {
  return runProcess(process.execPath, [main, ...args], { timeoutMs: 120_000 });
}

async function ok(args: string[]): Promise<RunResult> {
  const r = await kcompact(args);
  assert.equal(r.code, 0, `kcompact ${args.join(' ')} exited ${r.code}; stderr:\n${tail(r.stderr)}`);
  return r;
}

async function json<T>(args: string[]): Promise<T> {
  return JSON.parse((await ok([...args, '--json'])).stdout) as T;
}

/** Kafka's survivors of a clean ending at `end` over records 0..: each key's latest offset below it. */
function expectedCleaned(end: number): { survivors: number[]; tombstones: number } {
  const latest = new Map<string, number>();
  for (let i = 0; i < end; i++) latest.set(genRecord(i, KEYS, 32, 0).key!.toString(), i);
  const survivors = [...latest.values()].sort((a, b) => a - b);
  return { survivors, tombstones: survivors.filter((i) => genRecord(i, KEYS, 32, TOMBSTONE_EVERY).value === null).length };
}

function sha256(file: string): string {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

test('admin verbs against a kcompact proxy process in front of kfake', async (t: TestContext) => {
  if (!requirePeers(t)) return;
  const kfake = await startKfake({ brokers: 1 });
  const temp = makeTempDir('kcompact-cli-admin-');
  const dataDir = path.join(temp.path, 'data');
  const port = await freePortRun(3);
  const management = `127.0.0.1:${await freePort()}`;
  const admin = `127.0.0.1:${await freePort()}`;
  const bootstrap = `127.0.0.1:${port}`;
  const configFile = path.join(temp.path, 'kcompact.json');
  fs.writeFileSync(
    configFile,
    JSON.stringify({
      upstream: kfake.bootstrap,
      listen: bootstrap,
      dataDir,
      metricsListen: management,
      adminListen: admin,
      // Only the verbs clean: a round would otherwise race the assertions.
      cleanerBackoffMs: 86_400_000,
      // The figures inspected are those of the index alone: a carry pass after each clean would add its copies.
      carrierGroup: 'none',
      // Segments roll on a record a second younger than their first: a later produce makes the earlier records cleanable.
      topics: [{ topic: TOPIC, configs: { 'cleanup.policy': 'compact', 'segment.ms': '1000' } }],
    }),
  );
  const stderrFile = path.join(temp.path, 'proxy.stderr');
  const proxy = startBackground(process.execPath, [main, 'proxy', '--config', configFile], { stdoutFile: path.join(temp.path, 'proxy.stdout'), stderrFile });
  const proxyLog = () => (fs.existsSync(stderrFile) ? fs.readFileSync(stderrFile, 'utf8') : '');
  const endpoint = ['--admin-listen', admin];
  try {
    await pollUntil(
      'proxy started',
      30_000,
      async () => (proxyLog().includes('kcompact proxy started') ? true : undefined),
      () => {
        const s = proxy.exitStatus();
        return s ? `proxy exited (${s.code}) while starting:\n${tail(proxyLog())}` : undefined;
      },
    );

    await t.test('status names the upstream, the listeners, the compacted topics and the cleaner', async () => {
      const status = await json<StatusReport>(['status', ...endpoint]);
      assert.equal(status.source, 'proxy');
      assert.deepEqual(status.upstream, [kfake.bootstrap]);
      assert.equal(status.listeners?.bootstrap, bootstrap);
      assert.equal(status.listeners?.management, management);
      assert.deepEqual(status.listeners?.admin, { address: admin, token: false });
      assert.deepEqual(
        status.listeners?.brokers.map((b) => [b.nodeId, b.listen, b.upstream]),
        kfake.brokers.map((b) => [b.nodeId, `127.0.0.1:${port + 1 + b.nodeId}`, `${b.host}:${b.port}`]),
      );
      assert.deepEqual(
        status.compactedTopics.map((c) => c.topic),
        // kcompact compacts its own configs topic too (docs/carrying.md).
        ['__kcompact_configs', TOPIC],
      );
      assert.equal(status.cleaner?.backoffMs, 86_400_000);
      const text = (await ok(['status', ...endpoint])).stdout;
      assert.match(text, new RegExp(`upstream\\s+${kfake.bootstrap}`));
      assert.match(text, new RegExp(`\\n${TOPIC}\\s+`));
    });

    let end = 0;
    let before: InspectReport['partitions'][number];
    let served: ConsumeSummary;
    await t.test('inspect after producing and cleaning: survivors, tombstones pending and dirty ratio', async () => {
      await franzProduce(bootstrap, { topic: TOPIC, count: 100, keys: KEYS, tombstoneEvery: TOMBSTONE_EVERY });
      // `compact` first indexes what the upstream holds: the topic's partition is known from here on.
      await ok(['compact', TOPIC, ...endpoint]);
      let next = 100;
      const rolled = await pollUntil('a second virtual segment', 60_000, async () => {
        await franzProduce(bootstrap, { topic: TOPIC, count: 1, start: next++, keys: KEYS, tombstoneEvery: TOMBSTONE_EVERY });
        const p = (await json<InspectReport>(['inspect', TOPIC, ...endpoint])).partitions[0];
        return p && p.segments >= 2 && p.nextOffset === next ? p : undefined;
      });
      end = rolled.firstUncleanable;
      assert.ok(end >= 100, `the first segment holds the first produce (ends at ${end})`);
      assert.equal(rolled.cleanedUpTo, 0);
      assert.equal(rolled.dirtyRatio, 1, 'nothing cleaned yet: all of the cleanable bytes are dirty');

      const cleaned = (await ok(['compact', TOPIC, ...endpoint])).stdout;
      assert.match(cleaned, new RegExp(`cleaned ${TOPIC}-0 up to offset ${end}: ${end - KEYS} records removed`));
      const inspected = await json<InspectReport>(['inspect', TOPIC, '0', ...endpoint]);
      assert.equal(inspected.configs?.['cleanup.policy'], 'compact');
      assert.equal(inspected.configs?.['segment.ms'], '1000');
      assert.equal(inspected.configs?.['max.compaction.lag.ms'], '9223372036854775807');
      assert.equal(inspected.partitions[0]!.keyIdentity, 'bytes');
      before = inspected.partitions[0]!;
      const expected = expectedCleaned(end);
      assert.equal(before.cleanedUpTo, end);
      assert.equal(before.survivors, expected.survivors.length);
      assert.equal(before.tombstonesPending, expected.tombstones);
      assert.ok(expected.tombstones > 0, 'the workload leaves tombstones waiting for their horizon');
      assert.equal(before.dirtyRatio, 0);
      assert.equal(before.indexedRecords, expected.survivors.length + (next - end));

      served = await franzConsume(bootstrap, { topic: TOPIC, count: before.survivors + (before.highWatermark - end), records: true, timeoutMs: 30_000 });
      assert.deepEqual(
        served.partitions['0']!.offsets.filter((o) => o < end),
        expected.survivors,
        'readers see what inspect reports',
      );
      const text = (await ok(['inspect', TOPIC, ...endpoint])).stdout;
      assert.match(text, /SURVIVORS/);
      assert.match(text, new RegExp(`\\n0\\s+0\\s+${end}\\s+${next}\\s+${next}\\s+${before.survivors}\\s`));
    });

    await t.test('rebuild-index drops the index, shows progress, and the rebuilt one serves the same records', async () => {
      const rebuilt = await ok(['rebuild-index', TOPIC, ...endpoint]);
      assert.match(
        rebuilt.stderr,
        new RegExp(`rebuilding the index of ${TOPIC}: 1/1 partitions caught up, offset ${before.highWatermark} of ${before.highWatermark}`),
      );
      assert.match(rebuilt.stdout, new RegExp(`rebuilt the index of 1 partition of ${TOPIC} from the upstream: ${before.highWatermark} offsets`));
      const fresh = (await json<InspectReport>(['inspect', TOPIC, ...endpoint])).partitions[0]!;
      assert.deepEqual(
        [fresh.cleanedUpTo, fresh.survivors, fresh.nextOffset, fresh.lastCleanMs],
        [0, 0, before.highWatermark, 0],
        'a new index, caught up and not cleaned',
      );
      const uncleaned = await franzConsume(bootstrap, { topic: TOPIC, count: before.highWatermark, timeoutMs: 30_000 });
      assert.equal(uncleaned.partitions['0']!.count, before.highWatermark, 'while not cleaned, nothing is hidden');

      await ok(['compact', TOPIC, ...endpoint]);
      const after = (await json<InspectReport>(['inspect', TOPIC, ...endpoint])).partitions[0]!;
      assert.deepEqual(
        [after.cleanedUpTo, after.survivors, after.tombstonesPending, after.indexedRecords, after.segments],
        [before.cleanedUpTo, before.survivors, before.tombstonesPending, before.indexedRecords, before.segments],
      );
      const again = await franzConsume(bootstrap, { topic: TOPIC, count: served.count, records: true, timeoutMs: 30_000 });
      assert.deepEqual(comparable(again), comparable(served));
    });

    await t.test('unknown topics, topics not compacted and missing partitions are refused by name', async () => {
      const unknown = await kcompact(['inspect', 'no-such-topic', ...endpoint]);
      assert.equal(unknown.code, 1);
      assert.match(unknown.stderr, /unknown topic no-such-topic: the upstream has no such topic; compacted topics: __kcompact_configs, table/);
      await franzProduce(bootstrap, { topic: 'plain', count: 1 });
      for (const verb of [
        ['inspect', 'plain'],
        ['compact', 'plain'],
        ['rebuild-index', 'plain'],
      ]) {
        const r = await kcompact([...verb, ...endpoint]);
        assert.equal(r.code, 1, verb.join(' '));
        assert.match(r.stderr, /topic plain is not compacted by kcompact: its cleanup.policy has no "compact"/, verb.join(' '));
      }
      const partition = await kcompact(['inspect', TOPIC, '7', ...endpoint]);
      assert.equal(partition.code, 1);
      assert.match(partition.stderr, /topic table has no indexed partition 7; indexed partitions: 0/);
      const report = await json<CleanReport>(['compact', ...endpoint]);
      assert.deepEqual(report.failed, []);
    });

    await t.test('with the proxy stopped, status and inspect read the data directory read-only', async () => {
      await proxy.stop(30_000);
      assert.equal(proxy.exitStatus()?.code, 0, `the proxy exits 0 on SIGTERM:\n${tail(proxyLog())}`);
      const indexFile = path.join(dataDir, 'index', `${TOPIC}.sqlite`);
      const digest = sha256(indexFile);

      const unreachable = await kcompact(['status', ...endpoint]);
      assert.equal(unreachable.code, 1);
      assert.match(
        unreachable.stderr,
        new RegExp(`cannot reach the proxy's admin listener at http://${admin} \\(ECONNREFUSED\\): check that the proxy is running`),
      );
      assert.match(unreachable.stderr, /give its data directory with --data-dir/);

      const status = await ok(['status', ...endpoint, '--data-dir', dataDir, '--json']);
      assert.match(status.stderr, new RegExp(`no proxy answers at ${admin}; reading its data directory`));
      const offline = JSON.parse(status.stdout) as StatusReport;
      assert.equal(offline.source, 'data-dir');
      assert.equal(offline.upstream, undefined);
      assert.deepEqual(
        offline.compactedTopics.filter((c) => c.topic === TOPIC).map((c) => [c.topic, c.partitions, c.indexedRecords, c.tombstonesPending]),
        [[TOPIC, 1, before.indexedRecords, before.tombstonesPending]],
      );
      // The config file names the data directory too.
      const fromConfig = await ok(['inspect', TOPIC, '--config', configFile, '--json']);
      const p = (JSON.parse(fromConfig.stdout) as InspectReport).partitions[0]!;
      assert.deepEqual(
        [p.cleanedUpTo, p.survivors, p.tombstonesPending, p.nextOffset, p.dirtyRatio],
        [before.cleanedUpTo, before.survivors, before.tombstonesPending, before.nextOffset, 0],
      );
      assert.match((await ok(['inspect', TOPIC, '--config', configFile])).stdout, /from the data directory, read-only/);
      const missing = await kcompact(['inspect', 'plain', '--config', configFile]);
      assert.equal(missing.code, 1);
      assert.match(missing.stderr, /topic plain has no index in .*; indexed topics: __kcompact_configs, table/);
      assert.equal(sha256(indexFile), digest, 'the index file is unchanged');
    });
  } finally {
    await proxy.stop(10_000);
    await kfake.stop();
    temp.remove();
  }
});
