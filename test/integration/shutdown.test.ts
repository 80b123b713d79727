/**
 * SIGTERM to the `kcompact proxy` process: readiness fails, the listeners close, the requests in
 * flight are answered, the key index is checkpointed and closed, and the process exits 0 within
 * its deadline. With kafkajs producing and consuming through it (kfake upstream), no record the
 * producers saw acknowledged is missing upstream, and a restart on the same data directory
 * reopens the index and goes on from its checkpoint. With a request held by a broker that
 * answers on cue, the drain is watched step by step. With an upstream that stops answering or
 * refuses every connection while the config reader retries, nothing waits for it: the process
 * still exits 0 soon after the drain.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import kafkajs, { type Kafka } from 'kafkajs';
import { ApiKey } from '../../src/protocol/messages.js';
import type { EngineStatus } from '../../src/engine/api/engine-reports.js';
import { PartitionStore } from '../../src/engine/store/partition-store.js';
import { makeTempDir, pollUntil, requirePeers, startKfake } from '../support/index.js';
import { carrierArgs, startCliProxy, type CliProxy, type LogLine } from '../support/kcompact-cli.js';
import { startFakeBroker } from '../support/fake-broker.js';
import { startFailingUpstream, type FailingUpstream } from '../support/failing-upstream.js';
import { holdNext } from '../support/held-request.js';
import { refused } from '../support/refused.js';
import { RawConnection } from '../support/raw-client.js';

const skip = requirePeers();

const TOPIC = 'orders';
const STATIC_TOPICS = JSON.stringify([{ topic: TOPIC, configs: { 'cleanup.policy': 'compact' } }]);
const DRAIN_MS = 5_000;
/** What the process may take past the drain: closing the key index. */
const CLOSE_MS = 15_000;

function client(bootstrap: string, retries: number): Kafka {
  return new kafkajs.Kafka({ clientId: 'shutdown-test', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING, retry: { retries, initialRetryTime: 100 } });
}

async function partitionStatus(cli: CliProxy): Promise<EngineStatus['partitions'][number] | undefined> {
  const res = await cli.http('/status');
  return res.status === 200 ? (JSON.parse(res.body) as EngineStatus).partitions.find((p) => p.topic === TOPIC && p.partition === 0) : undefined;
}

/** The shutdown lines, in the order they must come. */
function assertShutdownLog(logs: LogLine[]): void {
  for (const line of logs)
    assert.ok(['debug', 'info', 'warn', 'error'].includes(line.level) && typeof line.time === 'string', `structured: ${JSON.stringify(line)}`);
  const at = (msg: string) => {
    const i = logs.findIndex((l) => l.msg === msg);
    assert.ok(i >= 0, `the log says "${msg}"`);
    return i;
  };
  const steps = [
    at('shutting down: readiness fails, listeners close, in-flight requests drain'),
    at('connections drained'),
    at('closing the key index'),
    at('shutdown complete'),
  ];
  assert.deepEqual(
    steps,
    [...steps].sort((a, b) => a - b),
    'in order',
  );
  assert.equal(logs.find((l) => l.msg.startsWith('shutting down'))?.signal, 'SIGTERM');
  assert.deepEqual(
    logs.filter((l) => l.level === 'error'),
    [],
    'no error logged',
  );
}

test('SIGTERM mid-traffic drains, loses no acknowledged record, closes the index cleanly', { skip, timeout: 300_000 }, async () => {
  const kfake = await startKfake({ brokers: 1 });
  const data = makeTempDir('kcompact-shutdown-');
  const dataDir = path.join(data.path, 'data');
  let cli: CliProxy | undefined;
  let restarted: CliProxy | undefined;
  try {
    const admin = client(kfake.bootstrap, 3).admin();
    await admin.connect();
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic: TOPIC, numPartitions: 1 }] });
    await admin.disconnect();
    cli = await startCliProxy({ upstream: kfake.bootstrap, dataDir, args: ['--topics', STATIC_TOPICS, '--drain-timeout-ms', String(DRAIN_MS)] });
    const proxy = client(cli.bootstrap, 0);

    // Two producers send batches one after another until a send fails; a consumer follows.
    const acked = new Set<string>();
    let stop = false;
    let next = 0;
    const produce = async () => {
      const producer = proxy.producer({ allowAutoTopicCreation: false });
      await producer.connect();
      try {
        while (!stop) {
          const values = Array.from({ length: 10 }, () => `v${next++}`);
          try {
            await producer.send({ topic: TOPIC, acks: -1, messages: values.map((v, i) => ({ key: `k${i}`, value: v })) });
          } catch {
            return;
          }
          for (const v of values) acked.add(v);
        }
      } finally {
        await producer.disconnect().catch(() => {});
      }
    };
    const producers = [produce(), produce()];
    let consumed = 0;
    // When the proxy goes, kafkajs would restart a crashed consumer forever after its disconnect,
    // keeping this test process alive: no restarts.
    const consumer = proxy.consumer({ groupId: 'shutdown-test', maxWaitTimeInMs: 500, retry: { retries: 0, restartOnFailure: async () => false } });
    await consumer.connect();
    await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
    await consumer.run({ eachBatch: async ({ batch }) => void (consumed += batch.messages.length) });
    await pollUntil('traffic flows', 30_000, async () => (acked.size >= 500 && consumed >= 100 ? true : undefined));
    // The indexer's fetches wait up to 500 ms for a MiB: progress to checkpoint must exist first.
    await pollUntil('the index takes records in', 30_000, async () => ((await partitionStatus(cli!))?.nextOffset ?? 0) > 0 || undefined);

    process.kill(cli.pid, 'SIGTERM');
    const exit = await cli.waitExit(DRAIN_MS + CLOSE_MS);
    assert.deepEqual(exit, { code: 0, signal: null }, 'exit code 0');
    stop = true;
    await Promise.all(producers);
    await consumer.disconnect().catch(() => {});
    assert.ok(acked.size >= 500);
    assertShutdownLog(cli.logs());

    // Every acknowledged record is in the upstream.
    const seen = new Set<string>();
    const direct = client(kfake.bootstrap, 3).consumer({ groupId: 'shutdown-check', maxWaitTimeInMs: 200 });
    await direct.connect();
    await direct.subscribe({ topic: TOPIC, fromBeginning: true });
    await direct.run({ eachBatch: async ({ batch }) => batch.messages.forEach((m) => seen.add(m.value!.toString())) });
    try {
      await pollUntil('the upstream holds every acknowledged record', 30_000, async () => ([...acked].every((v) => seen.has(v)) ? true : undefined));
    } finally {
      await direct.disconnect();
    }

    // The index was checkpointed and closed: no WAL left behind, the file is intact.
    const file = path.join(dataDir, 'index', `${TOPIC}.sqlite`);
    assert.ok(fs.existsSync(file), 'the topic index exists');
    const wal = `${file}-wal`;
    assert.ok(!fs.existsSync(wal) || fs.statSync(wal).size === 0, 'the WAL was checkpointed into the database');
    // The file as SQLite's own integrity check sees it (stricter than the store's quick_check at open): SQL of its own.
    const db = new Database(file, { fileMustExist: true });
    try {
      assert.equal(db.pragma('integrity_check', { simple: true }), 'ok');
    } finally {
      db.close();
    }
    const { store, rebuiltBecause } = PartitionStore.open(file, { topic: TOPIC, partition: 0 });
    const checkpointed = store.checkpoint.nextOffset;
    store.close();
    assert.equal(rebuiltBecause, undefined, 'the partition index opens as it was left');
    assert.ok(checkpointed > 0, 'indexing progress was checkpointed');

    // A restart reopens the index where it stopped and catches up with the upstream.
    restarted = await startCliProxy({ upstream: kfake.bootstrap, dataDir, args: ['--topics', STATIC_TOPICS] });
    const first = await pollUntil('the restarted engine reports the partition', 10_000, () => partitionStatus(restarted!));
    assert.ok(first.nextOffset >= checkpointed, `resumes at the checkpoint (${checkpointed}), not from scratch (${first.nextOffset})`);
    await pollUntil('the restarted index catches up', 30_000, async () => {
      const p = await partitionStatus(restarted!);
      return p && p.highWatermark >= acked.size && p.nextOffset === p.highWatermark ? true : undefined;
    });
    assert.deepEqual(
      restarted.logs().filter((l) => l.level === 'warn' || l.level === 'error'),
      [],
      'the index files reopen without a warning (no rebuild)',
    );
  } finally {
    await restarted?.stop();
    await cli?.stop();
    await kfake.stop();
    data.remove();
  }
});

test('while draining, readiness fails and the listeners refuse, and the request in flight is still answered', async () => {
  const broker = await startFakeBroker();
  const cli = await startCliProxy({ upstream: broker.address, args: ['--drain-timeout-ms', '60000'] });
  const conn = await RawConnection.open(cli.bootstrap);
  try {
    assert.equal((await cli.http('/readyz')).status, 200);
    const hold = holdNext(broker, ApiKey.ListGroups);
    conn.request(ApiKey.ListGroups, 4, { statesFilter: [] }, 41);
    await pollUntil('the broker holds the request', 10_000, async () => (hold.held() ? true : undefined));

    process.kill(cli.pid, 'SIGTERM');
    const notReady = await pollUntil('readiness fails', 10_000, async () => {
      const res = await cli.http('/readyz');
      return res.status === 503 ? (JSON.parse(res.body) as { status: string; checks: Record<string, { ok: boolean }> }) : undefined;
    });
    assert.equal(notReady.status, 'not ready');
    assert.equal(notReady.checks.shutdown!.ok, false);
    assert.equal((await cli.http('/livez')).status, 200, 'alive while draining');
    assert.ok(await refused(cli.bootstrap), 'the bootstrap listener is closed');
    assert.equal(cli.exitStatus(), undefined, 'the process waits for the request in flight');

    hold.answer({ throttleTimeMs: 0, errorCode: 0, groups: [] });
    assert.equal((await conn.response(ApiKey.ListGroups, 4)).correlationId, 41, 'the answer reaches the client');
    assert.ok(await conn.closesWithin(10_000), 'then its connection closes');
    assert.deepEqual(await cli.waitExit(CLOSE_MS), { code: 0, signal: null });
    assertShutdownLog(cli.logs());
  } finally {
    conn.close();
    await cli.stop();
    await broker.close();
  }
});

/** A short drain, and how long after it the process may take at most with the upstream gone: generous for a busy machine. */
const SHORT_DRAIN_MS = 1_000;
const GONE_BOUND_MS = 5_000;

/**
 * A carrier proxy in front of `upstream` whose config reader has begun to retry (the upstream
 * answers its reads with an error). Requests time out far past the bound, so a wait for an
 * answer that never comes shows as a late exit.
 */
async function proxyRetryingConfigReads(upstream: FailingUpstream): Promise<CliProxy> {
  const cli = await startCliProxy({
    upstream: upstream.address,
    args: ['--drain-timeout-ms', String(SHORT_DRAIN_MS), '--request-timeout-ms', '120000', ...carrierArgs()],
  });
  await pollUntil('the carrier group gives the replica a member id', 10_000, async () => upstream.memberJoined() || undefined);
  upstream.setMode('fail');
  await pollUntil('the config reader retries', 10_000, async () =>
    cli.logs().some((l) => l.msg === 'reading the topic config store failed; retrying') ? true : undefined,
  );
  return cli;
}

/** SIGTERM: exit 0 with every shutdown step logged, within the short drain plus the bound. */
async function assertPromptShutdown(cli: CliProxy): Promise<void> {
  const started = Date.now();
  process.kill(cli.pid, 'SIGTERM');
  // Waits past the proxy's own deadline (drain + 20 s), so a late exit shows with its code.
  const exit = await cli.waitExit(SHORT_DRAIN_MS + 30_000);
  const tookMs = Date.now() - started;
  assert.deepEqual(exit, { code: 0, signal: null }, `exit code 0 (after ${tookMs} ms)`);
  assert.ok(tookMs < SHORT_DRAIN_MS + GONE_BOUND_MS, `exits within the drain timeout plus ${GONE_BOUND_MS} ms, took ${tookMs} ms`);
  assertShutdownLog(cli.logs());
}

test('SIGTERM while the config reader retries and the upstream stops answering: exit 0 soon after the drain', async () => {
  const upstream = await startFailingUpstream();
  let cli: CliProxy | undefined;
  try {
    cli = await proxyRetryingConfigReads(upstream);
    // A hung broker: connections are accepted, nothing is answered. The next requests of both
    // threads wait for a new connection's ApiVersions, and the group's LeaveGroup will too.
    upstream.setMode('silent');
    upstream.dropConnections();
    await pollUntil('both threads wait on the silent upstream', 10_000, async () => {
      const clients = new Set(upstream.unanswered().map((r) => r.split(' ')[0]));
      return clients.has('kcompact') && clients.has('kcompact-indexer') ? true : undefined;
    });
    await assertPromptShutdown(cli);
  } finally {
    await cli?.stop();
    await upstream.close();
  }
});

test('SIGTERM while the config reader retries and every upstream connection is refused: exit 0 soon after the drain', async () => {
  const upstream = await startFailingUpstream();
  let cli: CliProxy | undefined;
  try {
    cli = await proxyRetryingConfigReads(upstream);
    await upstream.close();
    await pollUntil('the proxy meets refused connections', 10_000, async () =>
      cli!.logs().some((l) => JSON.stringify(l.err ?? null).includes('ECONNREFUSED')) ? true : undefined,
    );
    await assertPromptShutdown(cli);
  } finally {
    await cli?.stop();
  }
});
