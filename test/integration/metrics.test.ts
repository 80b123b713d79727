/**
 * /metrics of the `kcompact proxy` process, scraped while kafkajs produces and consumes through
 * it and its cleaner runs on a compacted topic (kfake upstream, no compaction of its own): the
 * traffic figures move with the traffic, the compaction figures with indexing, cleaning and
 * compacted reads, the index figures agree with the engine's own status, and per-partition
 * series appear only when enabled, for the topics the include and exclude lists admit.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import kafkajs, { type Kafka } from 'kafkajs';
import type { EngineStatus } from '../../src/engine/api/engine-reports.js';
import { pollUntil, requirePeers, startKfake } from '../support/index.js';
import { startCliProxy, type CliProxy } from '../support/kcompact-cli.js';
import { scrape, type Exposition } from '../support/prometheus.js';

const skip = requirePeers();

const TOPICS = ['keep-a', 'keep-out', 'other'];
/** The compacted partitions: the topics' and kcompact's own configs topic's. */
const COMPACTED_PARTITIONS = TOPICS.length + 1;
/** Compacted by the proxy's configuration; segments roll after 100 ms so a clean has work soon. */
const STATIC_TOPICS = JSON.stringify(TOPICS.map((topic) => ({ topic, configs: { 'cleanup.policy': 'compact', 'segment.ms': '100' } })));
const KEYS = 10;

function client(bootstrap: string): Kafka {
  return new kafkajs.Kafka({ clientId: 'metrics-test', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING, retry: { retries: 3 } });
}

async function engineStatus(cli: CliProxy): Promise<EngineStatus> {
  const res = await cli.http('/status');
  assert.equal(res.status, 200, res.body);
  return JSON.parse(res.body) as EngineStatus;
}

/** Prometheus naming: lower snake case, help text, counters and only counters end in _total, base units. */
function assertConventions(e: Exposition): void {
  const ours = [...e.families.values()].filter((f) => f.name.startsWith('kcompact_'));
  assert.ok(ours.length > 15, 'the kcompact_ families are exported');
  for (const f of ours) {
    assert.match(f.name, /^kcompact_[a-z_]+$/, f.name);
    assert.ok(f.help.length > 10, `${f.name} has help`);
    assert.equal(f.name.endsWith('_total'), f.type === 'counter', `${f.name} (${f.type}): _total iff counter`);
    assert.doesNotMatch(f.name, /_(ms|millis|milliseconds|percent|kb|mb)$/, `${f.name} is in base units`);
  }
}

test('metrics while traffic and cleaning run', { skip, timeout: 300_000 }, async (t) => {
  const kfake = await startKfake({ brokers: 1 });
  try {
    const admin = client(kfake.bootstrap).admin();
    await admin.connect();
    await admin.createTopics({ waitForLeaders: true, topics: TOPICS.map((topic) => ({ topic, numPartitions: 1 })) });
    await admin.disconnect();

    await t.test('figures move with traffic, indexing and cleaning; per-partition series follow include and exclude', async () => {
      const cli = await startCliProxy({
        upstream: kfake.bootstrap,
        args: [
          '--topics',
          STATIC_TOPICS,
          '--cleaner-backoff-ms',
          '1000',
          '--metrics-per-partition',
          'true',
          '--metrics-topics-include',
          'keep-*',
          '--metrics-topics-exclude',
          'keep-out',
        ],
      });
      const kafka = client(cli.bootstrap);
      const producer = kafka.producer({ allowAutoTopicCreation: false });
      const follower = kafka.consumer({ groupId: 'metrics-follower', maxWaitTimeInMs: 200 });
      const reader = kafka.consumer({ groupId: 'metrics-reader', maxWaitTimeInMs: 200 });
      try {
        const idle = await scrape(cli.management);
        assert.match(idle.contentType, /^text\/plain; version=0\.0\.4/);
        assertConventions(idle);
        assert.equal(idle.value('kcompact_compaction_engine_up'), 1);
        assert.ok(idle.value('process_cpu_user_seconds_total')! > 0, 'process metrics under their standard names');
        assert.ok(idle.value('nodejs_eventloop_lag_seconds') !== undefined);
        assert.equal(idle.value('kcompact_requests_total', { api: 'Produce' }), undefined);
        assert.equal(idle.value('kcompact_connections'), 0);
        for (const probe of ['/livez', '/readyz', '/startupz']) assert.equal((await cli.http(probe)).status, 200, probe);

        await producer.connect();
        let followed = 0;
        await follower.connect();
        await follower.subscribe({ topic: 'keep-a', fromBeginning: true });
        await follower.run({ eachBatch: async ({ batch }) => void (followed += batch.messages.length) });
        // Every key updated five times, then k0 deleted: most of keep-a is superseded.
        for (let round = 0; round < 5; round++) {
          const messages = Array.from({ length: 2 * KEYS }, (_, i) => ({ key: `k${i % KEYS}`, value: `v${round}-${i}` }));
          await producer.send({ topic: 'keep-a', acks: -1, messages });
        }
        await producer.send({ topic: 'keep-a', acks: -1, messages: [{ key: 'k0', value: null }] });
        for (const topic of ['keep-out', 'other']) {
          await producer.send({ topic, acks: -1, messages: Array.from({ length: KEYS }, (_, i) => ({ key: `k${i}`, value: 'v' })) });
        }
        const produced = 5 * 2 * KEYS + 1;
        await pollUntil('the follower read keep-a', 30_000, async () => (followed >= produced ? true : undefined));

        const busy = await scrape(cli.management);
        assert.ok(busy.value('kcompact_requests_total', { api: 'Produce' })! >= 8, 'Produce requests counted');
        assert.ok(busy.value('kcompact_requests_total', { api: 'Fetch' })! > 0, 'Fetch requests counted');
        assert.ok(busy.value('kcompact_requests_total', { api: 'Metadata' })! > 0);
        assert.ok(busy.value('kcompact_request_duration_seconds_count', { api: 'Produce' })! >= 8);
        assert.ok(busy.value('kcompact_request_duration_seconds_sum', { api: 'Produce' })! > 0);
        assert.equal(
          busy.value('kcompact_request_duration_seconds_bucket', { api: 'Produce', le: '+Inf' }),
          busy.value('kcompact_request_duration_seconds_count', { api: 'Produce' }),
        );
        for (const name of ['kcompact_bytes_received_total', 'kcompact_bytes_sent_total']) {
          for (const peer of ['client', 'upstream']) assert.ok(busy.value(name, { peer })! > 1000, `${name}{peer="${peer}"} grew`);
        }
        assert.ok(busy.value('kcompact_connections')! >= 2, 'producer and follower are connected');
        assert.ok(busy.value('kcompact_connections_total')! >= busy.value('kcompact_connections')!);
        assert.equal(busy.value('kcompact_upstream_errors_total'), 0);
        assert.equal(busy.value('kcompact_request_errors_total'), undefined, 'no request failed');

        await pollUntil('the index caught up with every topic', 30_000, async () => {
          const status = await engineStatus(cli);
          const ours = status.partitions.filter((p) => TOPICS.includes(p.topic));
          return ours.length === TOPICS.length && ours.every((p) => p.highWatermark > 0 && p.nextOffset === p.highWatermark) ? true : undefined;
        });
        // A record past segment.ms rolls the segment, so the updates become cleanable.
        const cleaned = await pollUntil('a clean reaps the superseded records', 30_000, async () => {
          await producer.send({ topic: 'keep-a', acks: -1, messages: [{ key: 'tick', value: 't' }] });
          const res = await cli.http('/compact?topic=keep-a', 'POST');
          assert.equal(res.status, 200, res.body);
          const s = await scrape(cli.management);
          return s.value('kcompact_reaped_records_total')! >= 5 * 2 * KEYS - KEYS ? s : undefined;
        });
        assert.ok(cleaned.value('kcompact_cleaner_cleans_total')! > 0);
        assert.ok(cleaned.value('kcompact_tombstones_pending')! >= 1, "k0's tombstone waits for its delete horizon");
        assert.ok(cleaned.value('kcompact_partition_time_since_last_clean_seconds', { topic: 'keep-a', partition: '0' })! >= 0);
        assert.equal(cleaned.value('kcompact_partition_uncleanable', { topic: 'keep-a', partition: '0' }), 0);

        const filteredBefore = cleaned.value('kcompact_fetch_filtered_records_total')!;
        await reader.connect();
        await reader.subscribe({ topic: 'keep-a', fromBeginning: true });
        await reader.run({ eachBatch: async () => {} });
        await pollUntil('a read from the beginning filters superseded records', 30_000, async () => {
          const s = await scrape(cli.management);
          return s.value('kcompact_fetch_filtered_records_total')! > filteredBefore ? true : undefined;
        });
        await producer.disconnect();
        await follower.disconnect();
        await reader.disconnect();

        const settled = await pollUntil('the index figures agree with the engine status', 30_000, async () => {
          const [s, status] = await Promise.all([scrape(cli.management), engineStatus(cli)]);
          const keepA = status.partitions.find((p) => p.topic === 'keep-a')!;
          const agree =
            s.value('kcompact_index_rows') === status.partitions.reduce((n, p) => n + p.indexedRecords, 0) &&
            s.value('kcompact_partition_index_rows', { topic: 'keep-a', partition: '0' }) === keepA.indexedRecords &&
            s.value('kcompact_tombstones_pending') === status.partitions.reduce((n, p) => n + p.tombstonesPending, 0) &&
            s.value('kcompact_index_lag_records') === 0;
          return agree ? s : undefined;
        });
        assert.equal(settled.value('kcompact_compacted_partitions'), COMPACTED_PARTITIONS, 'aggregates cover every topic');
        assert.equal(settled.value('kcompact_uncleanable_partitions'), 0);
        for (const ratio of ['kcompact_cleaner_max_dirty_ratio', 'kcompact_partition_dirty_ratio']) {
          const v = settled.value(ratio)!;
          assert.ok(v >= 0 && v <= 1, `${ratio} is a 0-1 ratio, got ${v}`);
        }
        assert.ok(settled.value('kcompact_cleaner_time_since_last_run_seconds')! >= 0);
        const partitionSamples = settled.samples.filter((s) => s.name.startsWith('kcompact_partition_'));
        assert.ok(partitionSamples.length >= 5);
        assert.deepEqual([...new Set(partitionSamples.map((s) => s.labels.topic))], ['keep-a'], 'keep-out is excluded, other is not included');
        await pollUntil('connections close with the clients', 10_000, async () =>
          (await scrape(cli.management)).value('kcompact_connections') === 0 ? true : undefined,
        );
      } finally {
        await Promise.allSettled([producer.disconnect(), follower.disconnect(), reader.disconnect()]);
        await cli.stop();
      }
    });

    await t.test('without --metrics-per-partition there is no per-partition series', async () => {
      const cli = await startCliProxy({ upstream: kfake.bootstrap, args: ['--topics', STATIC_TOPICS] });
      try {
        const s = await pollUntil('the index holds the topics', 30_000, async () => {
          const e = await scrape(cli.management);
          return e.value('kcompact_compacted_partitions') === COMPACTED_PARTITIONS && e.value('kcompact_index_rows')! > 0 ? e : undefined;
        });
        assert.deepEqual(
          s.samples.filter((x) => x.name.startsWith('kcompact_partition_')),
          [],
        );
        assert.deepEqual(
          [...s.families.keys()].filter((name) => name.startsWith('kcompact_partition_')),
          [],
        );
      } finally {
        await cli.stop();
      }
    });
  } finally {
    await kfake.stop();
  }
});
