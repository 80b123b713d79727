/**
 * SIGKILL, nothing lost: a `kcompact proxy` process in front of Kafka 4.4 (cleaner off) is
 * killed at seeded random moments while an idempotent acks=all Java producer writes keyed
 * records with updates and tombstones through it, and while it cleans (on demand and on a 50 ms
 * backoff). The producer rides through each kill (same ports after the restart). After every
 * restart on the same data directory:
 * - every acknowledged record is in the upstream at the offset it was acknowledged with, no
 *   record is there twice, each partition holds them in send order;
 * - the index reopens without a rebuild (SIGKILL never leaves it unusable);
 * - the index equals one rebuilt from scratch (a reference proxy's, rebuilt with
 *   `POST /rebuild-index`) table by table, once both have cleaned everything up to the same
 *   horizon, and the compacted view through either proxy is exactly what the records imply.
 * At the end a proxy on an empty data directory rebuilds it all once more and agrees too.
 *
 * KCOMPACT_FAULT_ITERATIONS=N sets the number of kills (default 5; `make soak` runs 40), KCOMPACT_FAULT_SEED the seed
 * (printed, so a failure replays).
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import kafkajs from 'kafkajs';
import { seededRng } from '../unit/protocol/sample-body.js';
import { assertAcknowledgedInOrder, assertSameCompaction, readUpstream } from '../support/compaction-checks.js';
import { FaultProducer } from '../support/fault-clients.js';
import { freePort, makeTempDir, requirePeers, startKafka } from '../support/index.js';
import { freePortRun } from '../support/kcompact.js';
import { startCliProxy, type CliProxy, type LogLine } from '../support/kcompact-cli.js';

const TOPIC = 'faults';
const PARTITIONS = 2;
const GEN = { keys: 150, valueSize: 40, tombstoneEvery: 13 };
/**
 * Virtual segments roll every 100 ms of record time, so nearly everything is cleanable at once;
 * tombstones go at the second clean that covers them; any dirt makes a partition cleanable.
 */
const STATIC_TOPICS = JSON.stringify([
  {
    topic: TOPIC,
    configs: { 'cleanup.policy': 'compact', 'segment.ms': '100', 'delete.retention.ms': '0', 'min.cleanable.dirty.ratio': '0.01' },
  },
]);
const PROXY_ARGS = ['--topics', STATIC_TOPICS, '--cleaner-backoff-ms', '50'];

const kills = Number(process.env.KCOMPACT_FAULT_ITERATIONS ?? 5);
const seed = Number(process.env.KCOMPACT_FAULT_SEED ?? Date.now() % 1_000_000);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Log lines that say an index was found unusable and thrown away. */
const REBUILD_MESSAGES = new Set(['index file unusable, rebuilding it from the upstream', 'resetting partition index']);

/** Kills the proxy's process group; returns the errors it had logged. */
async function sigkill(proxy: CliProxy): Promise<LogLine[]> {
  process.kill(-proxy.pid, 'SIGKILL');
  assert.equal((await proxy.waitExit(10_000)).signal, 'SIGKILL');
  const errors = proxy.logs().filter((l) => l.level === 'error');
  await proxy.stop();
  return errors;
}

test(
  `SIGKILL loop: no acknowledged record is lost or reordered, and the index after restart equals one rebuilt from scratch (${kills} kills)`,
  { timeout: 120_000 + kills * 60_000 },
  async (t) => {
    if (!requirePeers(t)) return;
    t.diagnostic(`seed ${seed} (KCOMPACT_FAULT_SEED=${seed} replays this run)`);
    const random = seededRng(seed);
    const kafka = await startKafka({ compaction: 'off' });
    const data = makeTempDir('kcompact-faults-kill-');
    const port = await freePortRun(5);
    const managementPort = await freePort();
    const startProxy = (dataDir: string, fixed: boolean) =>
      startCliProxy({ upstream: kafka.bootstrap, dataDir, args: PROXY_ARGS, ...(fixed ? { port, managementPort } : {}) });
    let proxy: CliProxy | undefined;
    let reference: CliProxy | undefined;
    let fresh: CliProxy | undefined;
    let producer: FaultProducer | undefined;
    try {
      const admin = new kafkajs.Kafka({ clientId: 'faults-kill', brokers: [kafka.bootstrap], logLevel: kafkajs.logLevel.NOTHING }).admin();
      await admin.connect();
      await admin.createTopics({ waitForLeaders: true, topics: [{ topic: TOPIC, numPartitions: PARTITIONS }] });
      await admin.disconnect();
      proxy = await startProxy(path.join(data.path, 'proxy'), true);
      reference = await startProxy(path.join(data.path, 'reference'), false);
      producer = new FaultProducer({ brokers: proxy.bootstrap, topic: TOPIC, ...GEN, rate: 400 });

      const during = { produce: 0, clean: 0 };
      const errors: LogLine[] = [];
      for (let kill = 1; kill <= kills; kill++) {
        producer.resume();
        await producer.acknowledged(50);
        await pause(Math.floor(random() * 1000));
        if (random() < 0.5) {
          during.clean++;
          void proxy.http(`/compact?topic=${TOPIC}`, 'POST').catch(() => undefined);
          await pause(Math.floor(random() * 40));
        } else {
          during.produce++;
        }
        errors.push(...(await sigkill(proxy)));
        // The producer retries against a dead proxy for a while.
        await pause(Math.floor(random() * 500));
        proxy = await startProxy(proxy.dataDir, true);

        await producer.pause();
        const log = await readUpstream(kafka.bootstrap, TOPIC);
        assertAcknowledgedInOrder(log, producer.acks(), GEN);
        assert.deepEqual(
          proxy.logs().filter((l) => REBUILD_MESSAGES.has(l.msg)),
          [],
          `kill ${kill}: the index reopens as it was (no rebuild)`,
        );
        const rebuilt: { status: number; body: string } = await reference.http(`/rebuild-index?topic=${TOPIC}`, 'POST');
        assert.equal(rebuilt.status, 200, rebuilt.body);
        const cleaned = await assertSameCompaction(TOPIC, log, proxy, reference, 'expired');
        t.diagnostic(
          `kill ${kill}: ${producer.acks().length} acknowledged, upstream ${log.highWatermarks.join('+')} records, cleaned up to ${cleaned.join(', ')}`,
        );
      }
      t.diagnostic(`killed ${during.produce} times while producing, ${during.clean} times right after asking for a clean`);
      assert.deepEqual(producer.failures(), [], 'no record failed for good');

      // One more producing round, then a proxy that starts from an empty data directory.
      producer.resume();
      await producer.acknowledged(50);
      await producer.finish();
      const log = await readUpstream(kafka.bootstrap, TOPIC);
      assertAcknowledgedInOrder(log, producer.acks(), GEN);
      fresh = await startProxy(path.join(data.path, 'fresh'), false);
      await assertSameCompaction(TOPIC, log, proxy, fresh, 'expired');
      errors.push(...[proxy, reference, fresh].flatMap((p) => p.logs().filter((l) => l.level === 'error')));
      assert.deepEqual(errors, [], 'no error logged');
    } finally {
      await producer?.close();
      await fresh?.stop();
      await reference?.stop();
      await proxy?.stop();
      await kafka.stop();
      data.remove();
    }
  },
);
