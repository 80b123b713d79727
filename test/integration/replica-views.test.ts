/**
 * Every client family through each of three replicas (docs/carrying.md, "Who carries"): three
 * `kcompact proxy` processes share one carrier group and index on demand, as deployed, in front
 * of Kafka 4.4 (cleaner off) and kfake. A compacted topic written straight to the store is
 * cleaned and carried by the replica the group elected, and the store lets the history go.
 * Then Java kafka-clients, librdkafka (confluent-kafka and kcat), kafkajs, franz-go and
 * kafka-python each read it from offset 0 through every replica, and the bare protocol (CRCs
 * checked) does too. The two replicas that do not carry have no index of the topic until a
 * client asks, so their first read is served as the store holds it; a different client family
 * makes that first read on each. Every read shows the same records: below the cleaned end the
 * latest record of each key, tombstones too, at its original offset; then the record after them.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { test, type TestContext } from 'node:test';
import kafkajs from 'kafkajs';
import type { CleanReport } from '../../src/engine/api/engine-reports.js';
import type { StatusReport } from '../../src/ops/admin-reports.js';
import { CLIENTS } from '../support/client-matrix/drivers/index.js';
import { comparableRecords } from '../support/client-matrix/records.js';
import { carrierArgs, startCliProxy, type CliProxy } from '../support/kcompact-cli.js';
import { pollUntil, requirePeers, startKafka, startKfake, TEST_BED } from '../support/index.js';
import { readPartitionRaw } from '../support/raw-reader.js';
import type { RecordView } from '../support/summary.js';
import { createCompactedTopic } from '../support/topics.js';

const TOPIC = 'replica-views';
const KEYS = 40;
const ROUNDS = 4;
const SEGMENT_MS = 200;
const IDLE_MS = 1_000;

interface Replica {
  name: string;
  cli: CliProxy;
}

async function statusOf(r: Replica): Promise<StatusReport | undefined> {
  const res = await r.cli.http('/status').catch(() => undefined);
  return res?.status === 200 ? (JSON.parse(res.body) as StatusReport) : undefined;
}

/** Keyed updates straight to the store, the last round deleting every seventh key; what was written, by offset. */
async function writeUpdates(producer: kafkajs.Producer): Promise<RecordView[]> {
  const written: RecordView[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const messages = Array.from({ length: KEYS }, (_, k) => ({
      key: `key-${k}`,
      value: round === ROUNDS - 1 && k % 7 === 3 ? null : `value-${k}-round-${round}`,
    }));
    const [meta] = await producer.send({ topic: TOPIC, acks: -1, messages });
    const base = Number(meta!.baseOffset);
    messages.forEach((m, i) => written.push({ partition: 0, offset: base + i, key: m.key, value: m.value }));
  }
  return written;
}

/** Kafka's survivors of a clean up to `cleanedEnd`: below it the latest record of each key, tombstones included; then all. */
function survivors(log: readonly RecordView[], cleanedEnd: number): RecordView[] {
  const latest = new Map<string | null, number>();
  for (const r of log) if (r.offset < cleanedEnd) latest.set(r.key, r.offset);
  return log.filter((r) => r.offset >= cleanedEnd || latest.get(r.key) === r.offset);
}

async function scenario(t: TestContext, store: string, firstReaders: readonly number[]): Promise<void> {
  const group = `kcompact-views-${randomUUID()}`;
  // Only a clean asked for cleans (and carries): what each reader must see is then known.
  const args = [...carrierArgs(group), '--index-on-demand', 'true', '--cleaner-backoff-ms', '3600000'];
  const replicas: Replica[] = await Promise.all(['a', 'b', 'c'].map(async (name) => ({ name, cli: await startCliProxy({ upstream: store, args }) })));
  const kafka = new kafkajs.Kafka({ clientId: 'replica-views', brokers: [store], logLevel: kafkajs.logLevel.NOTHING });
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  const storeAdmin = kafka.admin();
  const admin = new kafkajs.Kafka({ clientId: 'replica-views', brokers: [replicas[0]!.cli.bootstrap], logLevel: kafkajs.logLevel.NOTHING }).admin();
  try {
    await Promise.all([producer.connect(), storeAdmin.connect(), admin.connect()]);
    // All three in one stable generation before the topic exists: a replica that carried it while
    // the others still joined would keep its index of it after losing it to one of them.
    await pollUntil('the three replicas in one generation', 60_000, async () => {
      const groups = (await Promise.all(replicas.map(statusOf))).map((s) => s?.carrierGroup);
      return groups.every((g) => g?.state === 'stable') && new Set(groups.map((g) => g?.generation)).size === 1 ? true : undefined;
    });
    await createCompactedTopic(admin, TOPIC, { 'segment.ms': String(SEGMENT_MS), 'min.cleanable.dirty.ratio': '0.01' });
    // The topic's first assignment is a generation of all three.
    const carrier = await pollUntil('the three replicas in one generation, one of them carrying the topic', 60_000, async () => {
      const groups = (await Promise.all(replicas.map(statusOf))).map((s) => s?.carrierGroup);
      if (groups.some((g) => g?.state !== 'stable') || new Set(groups.map((g) => g?.generation)).size !== 1) return undefined;
      const carrying = replicas.filter((_, i) => groups[i]!.carried.some((p) => p.topic === TOPIC));
      return carrying.length === 1 ? carrying[0] : undefined;
    });
    const others = replicas.filter((r) => r !== carrier);

    const log = await writeUpdates(producer);
    // Rolls written past segment.ms until a clean of the carrier carries and lets the history go.
    let report: CleanReport | undefined;
    await pollUntil('a pass that let the history go', 60_000, async () => {
      await new Promise((resolve) => setTimeout(resolve, SEGMENT_MS * 2));
      const value = `roll-${log.length}`;
      const [meta] = await producer.send({ topic: TOPIC, acks: -1, messages: [{ key: 'roll', value }] });
      log.push({ partition: 0, offset: Number(meta!.baseOffset), key: 'roll', value });
      const res = await carrier.cli.http(`/compact?topic=${TOPIC}`, 'POST');
      assert.equal(res.status, 200, res.body);
      report = JSON.parse(res.body) as CleanReport;
      return report.carried.some((c) => c.topic === TOPIC && c.released) ? true : undefined;
    });
    const cleanedEnd = report!.cleaned.filter((c) => c.topic === TOPIC).at(-1)!.endOffset;
    const [storeStart] = await storeAdmin.fetchTopicOffsetsByTimestamp(TOPIC, -2);
    assert.ok(Number(storeStart!.offset) > log.at(-2)!.offset, `the store let the history go (it starts at ${storeStart!.offset})`);
    const expected = survivors(log, cleanedEnd);
    assert.ok(
      expected.some((r) => r.value === null),
      'tombstones among the survivors',
    );
    const [ends] = await storeAdmin.fetchTopicOffsets(TOPIC);
    const highWatermark = Number(ends!.high);
    t.diagnostic(
      `carrier ${carrier.name}; ${log.length} records written, cleaned to ${cleanedEnd}, the store starts at ${storeStart!.offset} and ends at ${highWatermark}; ${expected.length} survivors`,
    );

    for (const r of others) {
      const indexed = (await statusOf(r))!.partitions.filter((p) => p.topic === TOPIC);
      assert.deepEqual(indexed, [], `${r.name} indexes nothing of ${TOPIC} before a client asks`);
    }
    // Each replica's readers in turn, the replicas side by side; a non-carrier's first reader meets no index.
    await Promise.all(
      [...others, carrier].map(async (r, i) => {
        const first = firstReaders[i % firstReaders.length]!;
        const order = CLIENTS.map((_, j) => CLIENTS[(first + j) % CLIENTS.length]!);
        for (const client of order) {
          const run = await client.compactedRead!(r.cli.bootstrap, { topic: TOPIC, expected, highWatermark, idleMs: IDLE_MS }).catch((err: unknown) => {
            throw new Error(`${client.name} from offset 0 through ${r.name}${r === carrier ? ' (the carrier)' : ''}: ${String(err)}`, { cause: err });
          });
          assert.deepEqual(comparableRecords(run.records), expected, `${client.name} from offset 0 through ${r.name}`);
          t.diagnostic(`${client.name} through ${r.name}${r === carrier ? ' (the carrier)' : ''}: ${run.records.length} records as expected`);
        }
        const raw = await readPartitionRaw(r.cli.bootstrap, TOPIC, 0, { timeoutMs: 30_000 });
        assert.deepEqual(
          raw.records.map(({ offset, key, value }) => ({ partition: 0, offset, key, value })),
          expected,
          `the bare protocol through ${r.name}`,
        );
        assert.equal(raw.logStart, 0, `the topic's own log start through ${r.name}`);
      }),
    );
  } finally {
    await Promise.allSettled([producer.disconnect(), storeAdmin.disconnect(), admin.disconnect()]);
    await Promise.all(replicas.map((r) => r.cli.stop().catch(() => undefined)));
  }
}

test.after(() => Promise.all(CLIENTS.map((c) => c.close?.())));

test('every client family reads the same carried topic through each of three replicas, on Kafka 4.4', { timeout: 300_000 }, async (t) => {
  if (!requirePeers(t, [...TEST_BED, 'kcat'])) return;
  const kafka = await startKafka({ compaction: 'off' });
  try {
    // Java's consumer and librdkafka make the first reads of the two replicas that do not carry.
    await scenario(t, kafka.bootstrap, [0, 1]);
  } finally {
    await kafka.stop();
  }
});

test('every client family reads the same carried topic through each of three replicas, on kfake', { timeout: 300_000 }, async (t) => {
  if (!requirePeers(t, [...TEST_BED, 'kcat'])) return;
  // One broker: the bare-protocol reader asks the bootstrap broker, which must lead the partition.
  const kfake = await startKfake({ brokers: 1 });
  try {
    // kcat and kafkajs make them here.
    await scenario(t, kfake.bootstrap, [2, 3]);
  } finally {
    await kfake.stop();
  }
});
