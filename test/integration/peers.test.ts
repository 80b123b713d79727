/**
 * Smoke test of the test bed itself: every client of the bed, pointed straight at each upstream
 * (a real Kafka 4.4 without compaction, and kfake with 3 brokers), produces and reads the same
 * generated records with identical offsets and digests. The proxy tests run the same scenarios
 * through kcompact and compare with these direct runs.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import {
  ckConsume,
  ckProduce,
  ckTxn,
  comparable,
  franzConsume,
  franzProduce,
  genRecord,
  javaToolOk,
  kafkajsConsume,
  kafkajsProduce,
  kcatAvailable,
  kcatConsume,
  kcatMetadata,
  pollUntil,
  requirePeers,
  startKafka,
  startKfake,
  type ConsumeSummary,
  type ProduceSpec,
} from '../support/index.js';

interface Upstream {
  name: string;
  bootstrap: string;
  brokers: number;
  /**
   * kfake's CreateTopics v5+ response breaks Java's admin client: null configs when none were
   * given (NullPointerException), else config sources of -1 (IllegalArgumentException).
   */
  javaCreatesTopics: boolean;
  stop(): Promise<void>;
}

const SPEC = { count: 300, keys: 40, valueSize: 64, tombstoneEvery: 9, createPartitions: 3 } satisfies Omit<ProduceSpec, 'topic'>;

/** The (key, value) pairs a produce run of SPEC writes, as the summaries' record views show them. */
function expectedPairs(): string[] {
  const pairs: string[] = [];
  for (let i = 0; i < SPEC.count; i++) {
    const { key, value } = genRecord(i, SPEC.keys, SPEC.valueSize, SPEC.tombstoneEvery);
    pairs.push(JSON.stringify([key?.toString() ?? null, value?.toString() ?? null]));
  }
  return pairs.sort();
}

function pairsOf(s: ConsumeSummary): string[] {
  return (s.records ?? []).map((r) => JSON.stringify([r.key, r.value])).sort();
}

async function startUpstreams(): Promise<Upstream[]> {
  const started = await Promise.allSettled([
    startKafka({ compaction: 'off' }).then((k) => ({ name: 'kafka 4.4', bootstrap: k.bootstrap, brokers: 1, javaCreatesTopics: true, stop: k.stop })),
    startKfake({ brokers: 3 }).then((k) => ({ name: 'kfake', bootstrap: k.bootstrap, brokers: 3, javaCreatesTopics: false, stop: k.stop })),
  ]);
  const ok = started.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  const failed = started.flatMap((s) => (s.status === 'rejected' ? [s.reason as Error] : []));
  if (failed.length) {
    await Promise.all(ok.map((u) => u.stop()));
    throw failed[0];
  }
  return ok;
}

async function clientsAgree(t: TestContext, up: Upstream): Promise<void> {
  const b = up.bootstrap;
  await t.test('franz-go, librdkafka and kafkajs produce identical partitions and offsets', async () => {
    const franz = await franzProduce(b, { ...SPEC, topic: 'by-franz', compression: 'zstd' });
    const ck = await ckProduce(b, { ...SPEC, topic: 'by-ck', compression: 'lz4' });
    const kjs = await kafkajsProduce(b, { ...SPEC, topic: 'by-kafkajs', compression: 'snappy' });
    assert.equal(franz.count, SPEC.count);
    assert.equal(Object.keys(franz.partitions).length, SPEC.createPartitions);
    assert.deepEqual(ck.partitions, franz.partitions);
    assert.deepEqual(kjs.partitions, franz.partitions);
  });

  await t.test('every reader sees the same records, offsets and digests', async () => {
    const reference = await franzConsume(b, { topic: 'by-franz', count: SPEC.count, group: 'franz-readers', records: true });
    assert.equal(reference.client.crcValidation, true, 'franz-go must validate CRCs');
    assert.deepEqual(pairsOf(reference), expectedPairs());
    const reads: [string, () => Promise<ConsumeSummary>][] = [
      ['franz-go reads by-ck', () => franzConsume(b, { topic: 'by-ck', count: SPEC.count, records: true })],
      ['franz-go reads by-kafkajs', () => franzConsume(b, { topic: 'by-kafkajs', count: SPEC.count, records: true })],
      ['librdkafka reads by-franz', () => ckConsume(b, { topic: 'by-franz', count: SPEC.count, group: 'ck-readers', records: true })],
      ['kafkajs reads by-franz', () => kafkajsConsume(b, { topic: 'by-franz', count: SPEC.count, records: true })],
    ];
    for (const [what, read] of reads) {
      const got = await read();
      assert.deepEqual(comparable(got), comparable(reference), what);
    }
  });

  await t.test('kcat lists the cluster and reads the same records', { skip: !kcatAvailable() && 'kcat is not installed' }, async () => {
    const meta = await kcatMetadata(b);
    assert.equal(meta.brokers.length, up.brokers);
    const topic = meta.topics.find((x) => x.topic === 'by-franz');
    assert.equal(topic?.partitions.length, SPEC.createPartitions);
    const reference = await franzConsume(b, { topic: 'by-franz', count: SPEC.count });
    assert.deepEqual(comparable(await kcatConsume(b, { topic: 'by-franz', count: SPEC.count })), comparable(reference));
  });

  await t.test('librdkafka transactions: read_committed sees only committed records', async () => {
    const txn = await ckTxn(b, { topic: 'txn', transactions: 4, perTxn: 10, createPartitions: 2, records: true });
    assert.deepEqual(txn.transactions, { committed: 20, aborted: 20 });
    assert.equal(txn.count, 20);
    assert.ok(txn.records!.every((r) => !r.value!.startsWith('aborted-')));
    const franzCommitted = await franzConsume(b, { topic: 'txn', count: 20, isolation: 'read_committed', records: true });
    assert.deepEqual(comparable(franzCommitted), comparable(txn));
    // The aborted records are really in the log: read_uncommitted sees them.
    const all = await franzConsume(b, { topic: 'txn', count: 40, records: true });
    assert.equal(all.records!.filter((r) => r.value!.startsWith('aborted-')).length, 20);
  });

  await t.test('Java tools: kafka-topics, console producer and consumer', async () => {
    if (up.javaCreatesTopics) {
      await javaToolOk('topics', ['--bootstrap-server', b, '--create', '--topic', 'by-java', '--partitions', '2', '--replication-factor', '1']);
    } else {
      await franzProduce(b, { topic: 'by-java', count: 0, createPartitions: 2 });
    }
    const described = await javaToolOk('topics', ['--bootstrap-server', b, '--describe', '--topic', 'by-java']);
    assert.match(described.stdout, /PartitionCount:\s*2/);
    const lines = Array.from({ length: 50 }, (_, i) => `key-${i % 7}:value-${i}`);
    await javaToolOk('console-producer', ['--bootstrap-server', b, '--topic', 'by-java', '--reader-property', 'parse.key=true', '--reader-property', 'key.separator=:'], {
      input: lines.join('\n') + '\n',
    });
    const consumed = await javaToolOk('console-consumer', [
      '--bootstrap-server', b, '--topic', 'by-java', '--from-beginning', '--max-messages', String(lines.length),
      '--timeout-ms', '20000', '--formatter-property', 'print.key=true', '--formatter-property', 'key.separator=:',
    ]);
    assert.deepEqual(consumed.stdout.trimEnd().split('\n').sort(), [...lines].sort());
    const franz = await franzConsume(b, { topic: 'by-java', count: lines.length });
    assert.equal(Object.keys(franz.partitions).length, 2);
  });
}

test('test bed: each client works directly against Kafka 4.4 and kfake', { timeout: 300_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const upstreams = await startUpstreams();
  try {
    for (const up of upstreams) await t.test(up.name, (tt) => clientsAgree(tt, up));
  } finally {
    await Promise.all(upstreams.map((u) => u.stop()));
  }
});

test("Kafka 4.4 'reference' mode compacts once the dirty segment rolls", { timeout: 120_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const kafka = await startKafka({ compaction: 'reference' });
  try {
    const b = kafka.bootstrap;
    const topicConfigs = { 'cleanup.policy': 'compact', 'segment.ms': '300', 'min.cleanable.dirty.ratio': '0.01' };
    await franzProduce(b, { topic: 'table', count: 300, keys: 40, createPartitions: 1, topicConfigs });
    // The active segment is never cleaned and rolls only on an append past segment.ms.
    await new Promise((r) => setTimeout(r, 400));
    await franzProduce(b, { topic: 'table', count: 1, start: 300, keys: 40 });
    // Until the cleaner has run, the consume sees more than 41 records and throws.
    const compacted = await pollUntil('compaction', 60_000, () => franzConsume(b, { topic: 'table', count: 41, timeoutMs: 5_000 }));
    // The latest offset of each of the 40 keys in the rolled segment, then the active segment's record.
    assert.deepEqual(compacted.partitions['0']!.offsets, Array.from({ length: 41 }, (_, i) => 260 + i));
  } finally {
    await kafka.stop();
  }
});
