/**
 * Upstream outage: with an idempotent Java producer and a Java consumer-group member running
 * through a `kcompact proxy` process, the upstream (Kafka 4.4, cleaner off) is killed, kept down
 * until the proxy's readiness fails, and started again on the same ports and log dir. The proxy
 * stays up (same process, no restart); readiness fails while the upstream is away and recovers
 * after; the clients see only retriable errors and go on by themselves; the indexer resumes;
 * every acknowledged record is in the upstream once, in order; the consumer reaches the latest
 * record of every key; and the proxy's index equals one rebuilt from scratch.
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import kafkajs from 'kafkajs';
import { assertAcknowledgedInOrder, assertSameCompaction, indexedTo, readUpstream } from '../support/compaction-checks.js';
import { FaultConsumer, FaultProducer } from '../support/fault-clients.js';
import { makeTempDir, pollUntil, requirePeers, startKafka } from '../support/index.js';
import { startCliProxy, type CliProxy } from '../support/kcompact-cli.js';

const TOPIC = 'outage';
const PARTITIONS = 2;
const GEN = { keys: 100, valueSize: 40, tombstoneEvery: 11 };
/** Cleaned all along (short virtual segments, any dirt); tombstones outlive the test. */
const STATIC_TOPICS = JSON.stringify([{ topic: TOPIC, configs: { 'cleanup.policy': 'compact', 'segment.ms': '100', 'min.cleanable.dirty.ratio': '0.01' } }]);
const PROXY_ARGS = ['--topics', STATIC_TOPICS, '--cleaner-backoff-ms', '200'];

interface Readiness {
  status: string;
  checks: Record<string, { ok: boolean; detail: string }>;
}

async function readiness(proxy: CliProxy): Promise<{ status: number; body: Readiness }> {
  const res = await proxy.http('/readyz');
  return { status: res.status, body: JSON.parse(res.body) as Readiness };
}

test(
  'an upstream outage: clients retry and recover through the same proxy, readiness follows the upstream, nothing acknowledged is lost',
  { timeout: 300_000 },
  async (t) => {
    if (!requirePeers(t)) return;
    const kafka = await startKafka({ compaction: 'off' });
    const data = makeTempDir('kcompact-faults-upstream-');
    let proxy: CliProxy | undefined;
    let fresh: CliProxy | undefined;
    let producer: FaultProducer | undefined;
    let consumer: FaultConsumer | undefined;
    try {
      const admin = new kafkajs.Kafka({ clientId: 'faults-upstream', brokers: [kafka.bootstrap], logLevel: kafkajs.logLevel.NOTHING }).admin();
      await admin.connect();
      await admin.createTopics({ waitForLeaders: true, topics: [{ topic: TOPIC, numPartitions: PARTITIONS }] });
      await admin.disconnect();
      proxy = await startCliProxy({ upstream: kafka.bootstrap, dataDir: path.join(data.path, 'proxy'), args: PROXY_ARGS });
      producer = new FaultProducer({ brokers: proxy.bootstrap, topic: TOPIC, ...GEN, rate: 200 });
      consumer = new FaultConsumer({ brokers: proxy.bootstrap, topic: TOPIC, group: 'outage-group' });
      await producer.acknowledged(200);
      await pollUntil('the consumer reads through the proxy', 60_000, async () => (consumer!.records().length >= 100 ? true : undefined));
      assert.equal((await readiness(proxy)).status, 200, 'ready before the outage');

      await kafka.halt('SIGKILL');
      const ackedBefore = producer.acks().length;
      const down = await pollUntil('readiness fails while the upstream is down', 30_000, async () => {
        const r = await readiness(proxy!);
        return r.status === 503 ? r.body : undefined;
      });
      assert.equal(down.checks.upstream?.ok, false, JSON.stringify(down));
      assert.match(down.checks.upstream!.detail, /no upstream bootstrap address accepts connections/);
      assert.equal((await proxy.http('/livez')).status, 200, 'alive during the outage');
      assert.equal((await proxy.http('/status')).status, 200, 'the engine answers during the outage');
      assert.equal(proxy.exitStatus(), undefined);
      t.diagnostic(`upstream down; readiness says: ${down.checks.upstream!.detail}`);

      await kafka.restart();
      await pollUntil('readiness recovers with the upstream', 30_000, async () => ((await readiness(proxy!)).status === 200 ? true : undefined));
      await producer.acknowledged(200, 90_000);
      t.diagnostic(`${ackedBefore} records acknowledged before the outage, ${producer.acks().length} after it`);
      await producer.pause();
      assert.deepEqual(producer.failures(), [], 'no record failed for good: the producer retried through the outage');

      const log = await readUpstream(kafka.bootstrap, TOPIC);
      assertAcknowledgedInOrder(log, producer.acks(), GEN);
      await indexedTo(proxy, TOPIC, log.highWatermarks);
      const latest = new Map<string, number>();
      for (const r of log.records) latest.set(r.key!, r.offset);
      await pollUntil('the consumer group reaches the latest record of every key', 60_000, async () => {
        const seen = new Set(consumer!.records().map((r) => `${r.key}@${r.offset}`));
        return [...latest].every(([key, offset]) => seen.has(`${key}@${offset}`)) ? true : undefined;
      });
      await consumer.finish();
      const errors = consumer.errors();
      assert.ok(
        errors.every((e) => / true /.test(e)),
        `the consumer saw only retriable errors: ${errors.join('\n')}`,
      );
      const kinds = [...new Set(errors.map((e) => e.split(':')[0]))];
      t.diagnostic(`consumer: ${consumer.records().length} records, ${errors.length} retriable errors (${kinds.join('; ')})`);

      assert.equal(proxy.exitStatus(), undefined, 'the proxy never exited');
      const logs = proxy.logs();
      assert.ok(
        logs.some((l) => /reachable again/.test(l.msg)),
        'the indexer says the upstream is back',
      );
      assert.deepEqual(
        logs.filter((l) => l.level === 'error'),
        [],
        'no error logged: an outage is a warning',
      );

      fresh = await startCliProxy({ upstream: kafka.bootstrap, dataDir: path.join(data.path, 'fresh'), args: PROXY_ARGS });
      await assertSameCompaction(TOPIC, log, proxy, fresh, 'kept');
    } finally {
      await consumer?.close();
      await producer?.close();
      await fresh?.stop();
      await proxy?.stop();
      await kafka.stop();
      data.remove();
    }
  },
);
