/**
 * The store's own segments of compact-only topics (src/compaction/config/store-segments.ts), on
 * Kafka 4.4 with its cleaner off and its default 1 GiB segments: a replica that carries sets the
 * store topic's segment.ms and segment.bytes from the topic's own (segment.ms no shorter than a
 * second), for topics created through it, for topics that were compacted before it started, and
 * again when a client changes them; clients keep seeing the topic's own configs. Then what a
 * pass lets go is freed: the store's bytes (DescribeLogDirs) fall to about the survivors' once
 * the pass's DeleteRecords is in, where with 1 GiB segments nothing would go. The store checks
 * its log start every second here (log.retention.check.interval.ms, 5 minutes by default).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, test } from 'node:test';
import kafkajs from 'kafkajs';
import type { CleanReport } from '../../src/engine/api/engine-reports.js';
import { ApiKey } from '../../src/protocol/messages.js';
import { partitionSize } from '../../bench/kafka-logs.js';
import { startCompactingProxy, type RunningCompactingProxy } from '../support/kcompact.js';
import { askOnce as ask } from '../support/raw-client.js';
import { pollUntil, requirePeers, startKafka, type RunningKafka } from '../support/index.js';
import { createCompactedTopic } from '../support/topics.js';

const KEYS = 400;
const ROUNDS = 16;
const VALUE_BYTES = 1024;
const { SET, DELETE, APPEND } = { SET: 0, DELETE: 1, APPEND: 2 };

const skip = requirePeers();

let kafka: RunningKafka | undefined;

before(async () => {
  if (skip) return;
  kafka = await startKafka({
    compaction: 'off',
    // Kafka's default segments (1 GiB, 7 days); only the store's checks are quick, so a test can watch them.
    properties: { 'log.retention.check.interval.ms': 1000, 'log.segment.delete.delay.ms': 100, 'log.initial.task.delay.ms': 0 },
  });
});

after(async () => {
  await kafka?.stop();
});

function client(bootstrap: string): kafkajs.Kafka {
  return new kafkajs.Kafka({ clientId: 'store-segments-test', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING });
}

/** segment.ms and segment.bytes as `address` describes them: "value/source" (1 a topic override, 5 a default). */
async function segments(address: string, topic: string): Promise<Record<string, string>> {
  const body = await ask(address, ApiKey.DescribeConfigs, 4, {
    resources: [{ resourceType: 2, resourceName: topic, configurationKeys: ['segment.ms', 'segment.bytes'] }],
    includeSynonyms: false,
    includeDocumentation: false,
  });
  const r = body.results[0];
  assert.equal(r.errorCode, 0, `describe ${topic} at ${address}: ${r.errorMessage}`);
  return Object.fromEntries(r.configs.map((c: { name: string; value: string; configSource: number }) => [c.name, `${c.value}/${c.configSource}`]));
}

async function storeSegmentsAre(topic: string, want: Record<string, string>): Promise<void> {
  await pollUntil(`the store's segments of ${topic} to be ${JSON.stringify(want)}`, 15_000, async () => {
    const got = await segments(kafka!.bootstrap, topic);
    return JSON.stringify(got) === JSON.stringify(want) ? true : undefined;
  });
}

async function incrementalAlter(address: string, topic: string, ops: [string, number, string | null][]): Promise<void> {
  const body = await ask(address, ApiKey.IncrementalAlterConfigs, 1, {
    resources: [{ resourceType: 2, resourceName: topic, configs: ops.map(([name, configOperation, value]) => ({ name, configOperation, value })) }],
    validateOnly: false,
  });
  assert.equal(body.responses[0].errorCode, 0, body.responses[0].errorMessage);
}

/** Rewrites every key ROUNDS times, a round every 250 ms: a few seconds of writes, so the store rolls several 1-second segments. */
async function rewrite(producer: kafkajs.Producer, topic: string): Promise<void> {
  for (let round = 0; round < ROUNDS; round++) {
    const started = Date.now();
    const messages = Array.from({ length: KEYS }, (_, k) => ({ key: `key-${k}`, value: randomBytes(VALUE_BYTES) }));
    for (let i = 0; i < messages.length; i += 100) await producer.send({ topic, acks: -1, messages: messages.slice(i, i + 100) });
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 250 - (Date.now() - started))));
  }
}

test(
  'a carrying replica gives compact-only topics store segments of their own, and the store frees what a pass lets go',
  { skip, timeout: 90_000 },
  async (t) => {
    const store = kafka!.bootstrap;

    // A topic compacted before any replica carried: the store keeps its defaults until one starts.
    const bystander = await startCompactingProxy(store);
    try {
      const admin = client(bystander.bootstrap).admin();
      await admin.connect();
      await createCompactedTopic(admin, 'existing', { 'segment.ms': '2000', 'segment.bytes': '2097152' }).finally(() => admin.disconnect());
      assert.deepEqual(await segments(store, 'existing'), { 'segment.bytes': '1073741824/5', 'segment.ms': '604800000/5' });
    } finally {
      await bystander.stop();
    }

    let carrier: RunningCompactingProxy | undefined;
    const admin = () => client(carrier!.bootstrap).admin();
    try {
      carrier = await startCompactingProxy(store, { carry: true });
      await storeSegmentsAre('existing', { 'segment.bytes': '2097152/1', 'segment.ms': '2000/1' });

      // Created through the carrier: set before CreateTopics is answered, segment.ms at least a second.
      const a = admin();
      await a.connect();
      await createCompactedTopic(a, 'rewritten', { 'segment.ms': '100', 'min.cleanable.dirty.ratio': '0.01' }).finally(() => a.disconnect());
      assert.deepEqual(await segments(store, 'rewritten'), { 'segment.bytes': '1073741824/5', 'segment.ms': '1000/1' });
      assert.deepEqual(
        await segments(carrier.bootstrap, 'rewritten'),
        { 'segment.bytes': '1073741824/5', 'segment.ms': '100/1' },
        'clients see the topic its own',
      );

      const producer = client(carrier.bootstrap).producer({ allowAutoTopicCreation: false });
      await producer.connect();
      try {
        await rewrite(producer, 'rewritten');
        const written = await partitionSize(store, 'rewritten');
        const live = KEYS * VALUE_BYTES;
        assert.ok(written > 10 * live, `the store holds the history: ${written} B`);

        // Past a store segment's second, one more record rolls both the store's segment and the virtual one; then clean and carry.
        let report: CleanReport | undefined;
        await pollUntil('a carry pass that lets the history go', 30_000, async () => {
          await new Promise((resolve) => setTimeout(resolve, 1200));
          await producer.send({ topic: 'rewritten', acks: -1, messages: [{ key: 'roll', value: 'roll' }] });
          report = (await carrier!.compactNow('rewritten')) as CleanReport;
          return report.carried.some((p) => p.released) ? true : undefined;
        });
        const freed = await pollUntil('the store to free the range the pass let go', 20_000, async () => {
          const size = await partitionSize(store, 'rewritten');
          return size < 3 * live ? size : undefined;
        });
        t.diagnostic(`store bytes: ${written} written, ${freed} after the pass (survivors ${live} B of values)`);
      } finally {
        await producer.disconnect();
      }

      // A client's change follows: IncrementalAlterConfigs, then AlterConfigs (whole state, which drops the store's overrides).
      await incrementalAlter(carrier.bootstrap, 'rewritten', [['segment.ms', SET, '5000']]);
      assert.deepEqual(await segments(store, 'rewritten'), { 'segment.bytes': '1073741824/5', 'segment.ms': '5000/1' });
      const b = admin();
      await b.connect();
      try {
        await b.alterConfigs({
          validateOnly: false,
          resources: [
            {
              type: kafkajs.ConfigResourceTypes.TOPIC,
              name: 'rewritten',
              configEntries: [
                { name: 'cleanup.policy', value: 'compact' },
                { name: 'segment.bytes', value: '4194304' },
              ],
            },
          ],
        });
      } finally {
        await b.disconnect();
      }
      assert.deepEqual(await segments(store, 'rewritten'), { 'segment.bytes': '4194304/1', 'segment.ms': '604800000/5' });
      assert.deepEqual(await segments(carrier.bootstrap, 'rewritten'), { 'segment.bytes': '4194304/1', 'segment.ms': '604800000/5' });

      // compact,delete keeps the topic's own segment configs upstream, as given; kcompact's own go.
      await incrementalAlter(carrier.bootstrap, 'existing', [['cleanup.policy', APPEND, 'delete']]);
      assert.deepEqual(await segments(store, 'existing'), { 'segment.bytes': '2097152/1', 'segment.ms': '2000/1' });
      await incrementalAlter(carrier.bootstrap, 'existing', [['segment.ms', DELETE, null]]);
      assert.deepEqual(await segments(store, 'existing'), { 'segment.bytes': '2097152/1', 'segment.ms': '604800000/5' });
    } finally {
      await carrier?.stop();
    }
  },
);
