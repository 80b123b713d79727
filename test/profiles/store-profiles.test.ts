/**
 * The store profile sweep (issue 33, `make profiles`): kcompact, carrying, in front of real
 * brokers set up to have exactly what a named Kafka-protocol store has and to refuse what it
 * lacks (test/support/store-profiles.ts). For each profile:
 *
 * 1. the store itself refuses what the named store lacks (asked around kcompact);
 * 2. a compacted topic written with many updates per key is cleaned and carried: every key's
 *    latest value is read from offset 0 through the carrier and through a replica rebuilt from
 *    an empty data directory, and the store lets the old range go where it can;
 * 3. the client matrix's core cells (produce, compacted read) with Java, librdkafka, franz-go,
 *    kafkajs and kafka-python, through the same carrying kcompact (a client idempotent by default
 *    that the store refuses produces again with idempotence off);
 * 4. Kafka Connect and Kafka Streams where the store allows them;
 * 5. what the store cannot do gives the client a clear error and loses no key.
 *
 * The carry figures (passes, copies, bytes written and read, the store's bytes, time) are printed
 * as diagnostics. KCOMPACT_PROFILES=name,... runs some profiles only. Not part of `make test`:
 * each profile starts its own store, clients, Connect and Streams.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import kafkajs from 'kafkajs';
import type { CarryOutcome, CleanReport } from '../../src/engine/api/engine-reports.js';
import { ErrorCode, errorName } from '../../src/protocol/errors.js';
import { ApiKey } from '../../src/protocol/messages.js';
import { encodeBatch } from '../../src/protocol/records/batch.js';
import { Compression as Codec } from '../../src/protocol/records/compression.js';
import { confluentKafka, franzGo, kafkaPython } from '../support/client-matrix/drivers/bed-clients.js';
import { javaClients } from '../support/client-matrix/drivers/java.js';
import { describeError, kafkaJs } from '../support/client-matrix/drivers/kafkajs.js';
import { Harness } from '../support/client-matrix/harness.js';
import { compactedRead } from '../support/client-matrix/operations/compacted-read.js';
import type { OperationCheck } from '../support/client-matrix/operations/operation.js';
import { produce, produceWith } from '../support/client-matrix/operations/produce.js';
import { transactions } from '../support/client-matrix/operations/transactions.js';
import type { ClientDriver } from '../support/client-matrix/types.js';
import { compactedView, readToEnd, type TopicRecord } from '../support/read-to-end.js';
import { startCompactingProxy, type RunningCompactingProxy } from '../support/kcompact.js';
import { franzProduce, pollUntil, requirePeers, type Compression } from '../support/index.js';
import { askOnce } from '../support/raw-client.js';
import { STORE_PROFILES, startStoreProfile, type RunningStoreProfile, type StoreProfileName } from '../support/store-profiles.js';
import { connectRound, streamsRefused, streamsRound } from './ecosystem.js';

/** What each profile lets through, and so what the sweep expects of it. */
interface Expected {
  /** Whether the store lets a pass's range go (DeleteRecords). */
  releases: boolean;
  /** The codec the carried topic is written with (the store's own choice where it has one). */
  codec: 'none' | 'gzip';
  /** Whether transactional and idempotent producers work. */
  transactions: boolean;
  /** Whether the remote tier should hold the carried topic's rolled segments before the pass. */
  tiered?: boolean;
  /** Codecs a client's batch is refused with. */
  refusedCodecs?: Compression[];
  /** Whether the store serves each record as a batch of its own (Event Hubs), not batches as written. */
  rebatches?: boolean;
  /**
   * Whether producers that are idempotent by default (Java's, kafka-python's, the bed's
   * librdkafka) are refused; their users turn idempotence off, as the store's documentation says.
   */
  idempotenceRefused?: boolean;
  /** Streams configs the store's users need for at_least_once. */
  streamsConfigs?: Record<string, string>;
  /** Keys of the carried topic, and rounds of updates before the first pass (KEYS, ROUNDS unless set). */
  keys?: number;
  rounds?: number;
  /** Rounds of updates before the second pass (2 unless set). */
  secondRounds?: number;
  /** Whether a client produces beside the pass, and its latencies are printed (a store whose produce budget the pass shares). */
  probeLatency?: boolean;
}

const EXPECTED: Record<StoreProfileName, Expected> = {
  'no-delete-records': { releases: false, codec: 'none', transactions: true },
  'delete-records-denied': { releases: false, codec: 'none', transactions: true },
  // Enough survivors that the pass itself needs seconds of the quota.
  'shared-produce-quota': { releases: true, codec: 'none', transactions: true, keys: 8000, rounds: 1, secondRounds: 1, probeLatency: true },
  'no-idempotence': {
    releases: true,
    codec: 'none',
    transactions: false,
    idempotenceRefused: true,
    streamsConfigs: { 'producer.enable.idempotence': 'false' },
  },
  'tiered-storage': { releases: true, codec: 'none', transactions: true, tiered: true },
  'gzip-only': { releases: true, codec: 'gzip', transactions: true, refusedCodecs: ['snappy', 'lz4', 'zstd'], rebatches: true },
};

const DEFAULT_PROFILES: StoreProfileName[] = ['no-delete-records', 'shared-produce-quota', 'no-idempotence', 'tiered-storage', 'gzip-only'];

function profilesToRun(): StoreProfileName[] {
  const listed = process.env.KCOMPACT_PROFILES?.split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (!listed?.length) return DEFAULT_PROFILES;
  for (const name of listed)
    if (!(name in STORE_PROFILES)) throw new Error(`KCOMPACT_PROFILES: no profile ${name} (${Object.keys(STORE_PROFILES).join(', ')})`);
  return listed as StoreProfileName[];
}

/** The matrix's core clients (kcat is left out: it reads as librdkafka does). */
const CLIENTS: readonly ClientDriver[] = [javaClients, confluentKafka, franzGo, kafkaJs, kafkaPython];

const TOPIC = 'profile-carried';
const KEYS = 200;
const ROUNDS = 8;
const VALUE_BYTES = 400;
const SEGMENT_MS = 200;

function client(bootstrap: string): kafkajs.Kafka {
  return new kafkajs.Kafka({ clientId: 'store-profiles', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING, retry: { retries: 10 } });
}

const valueOf = (k: number, round: number) => `value-${k}-round-${round}-`.padEnd(VALUE_BYTES, String.fromCharCode(97 + ((k + round) % 26)));

/** Rounds of updates of every key, through kcompact; what was written, by offset. */
async function writeRounds(producer: kafkajs.Producer, codec: Expected['codec'], keys: number, from: number, rounds: number): Promise<TopicRecord[]> {
  const written: TopicRecord[] = [];
  const compression = codec === 'gzip' ? kafkajs.CompressionTypes.GZIP : kafkajs.CompressionTypes.None;
  for (let round = from; round < from + rounds; round++) {
    for (let i = 0; i < keys; i += 50) {
      const messages = Array.from({ length: Math.min(50, keys - i) }, (_, j) => ({ key: `key-${i + j}`, value: valueOf(i + j, round) }));
      const [meta] = await producer.send({ topic: TOPIC, acks: -1, compression, messages });
      messages.forEach((m, j) => written.push({ offset: Number(meta!.baseOffset) + j, timestamp: 0, key: m.key, value: m.value }));
    }
  }
  return written;
}

/** One clean after a rolling record written past segment.ms, as in Kafka. */
async function rollAndClean(proxy: RunningCompactingProxy, producer: kafkajs.Producer, codec: Expected['codec']): Promise<CleanReport> {
  const compression = codec === 'gzip' ? kafkajs.CompressionTypes.GZIP : kafkajs.CompressionTypes.None;
  await new Promise((resolve) => setTimeout(resolve, SEGMENT_MS * 2));
  await producer.send({ topic: TOPIC, acks: -1, compression, messages: [{ key: 'roll', value: 'roll' }] });
  const report = await proxy.compaction.engine.compactNow(TOPIC);
  assert.deepEqual(report.failed, [], 'the clean');
  return report;
}

/** Cleans until the carrier reports a pass. */
async function cleanAndCarry(proxy: RunningCompactingProxy, producer: kafkajs.Producer, codec: Expected['codec']): Promise<CleanReport> {
  return pollUntil('a carry pass', 120_000, async () => {
    const report = await rollAndClean(proxy, producer, codec);
    return report.carried.length > 0 ? report : undefined;
  });
}

/**
 * A clean up to `after`, on a store that cannot let a range go: it cleans, and no pass runs, as one
 * would only add copies (docs/semantics.md, "No DeleteRecords").
 */
async function cleanWithoutPass(proxy: RunningCompactingProxy, producer: kafkajs.Producer, codec: Expected['codec'], after: number): Promise<CleanReport> {
  return pollUntil(`a clean up to offset ${after}`, 120_000, async () => {
    const report = await rollAndClean(proxy, producer, codec);
    assert.deepEqual(
      report.carried.filter((c) => c.topic === TOPIC),
      [],
      'no second pass on a store that cannot let a range go',
    );
    return (report.cleaned.filter((c) => c.topic === TOPIC).at(-1)?.endOffset ?? 0) >= after ? report : undefined;
  });
}

/** The latest record of every key, below `end`, as a reader from offset 0 must see them. */
function latestOf(records: readonly TopicRecord[], end: number): Map<string, string | null> {
  const latest = new Map<string, string | null>();
  for (const r of records) if (r.offset < end && r.key !== 'roll') latest.set(r.key!, r.value);
  return latest;
}

async function readLatest(bootstrap: string, end: number): Promise<{ latest: Map<string, string | null>; records: TopicRecord[] }> {
  const contents = await readToEnd(bootstrap, TOPIC, { timeoutMs: 60_000 });
  const records = (contents.partitions['0']?.records ?? []).filter((r) => r.offset < end);
  for (let i = 1; i < records.length; i++) assert.ok(records[i]!.offset > records[i - 1]!.offset, 'offsets rise');
  return { latest: latestOf(records, end), records };
}

/** The store's log start where it keeps segments locally (ListOffsets EARLIEST_LOCAL, KIP-405). */
async function localStart(bootstrap: string, topic: string): Promise<number> {
  const answer = await askOnce(bootstrap, ApiKey.ListOffsets, 8, {
    replicaId: -1,
    isolationLevel: 0,
    topics: [{ name: topic, partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp: -4n }] }],
  });
  return Number(answer.topics[0].partitions[0].offset);
}

/** A client writing 1 KiB every 200 ms to a topic of its own, until stopped: its produce latencies. */
function latencyProbe(bootstrap: string): { stop(): Promise<string> } {
  const producer = client(bootstrap).producer();
  const latencies: number[] = [];
  let running = true;
  const loop = (async () => {
    await producer.connect();
    while (running) {
      const started = Date.now();
      await producer.send({ topic: 'profile-latency-probe', acks: -1, messages: [{ key: 'probe', value: 'x'.repeat(1024) }] });
      latencies.push(Date.now() - started);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop.finally(() => producer.disconnect());
      const sorted = [...latencies].sort((a, b) => a - b);
      const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
      return `${sorted.length} sends, latency median ${at(0.5)} ms, p90 ${at(0.9)} ms, max ${sorted.at(-1)} ms`;
    },
  };
}

/** The store's own segment configs of the carried topic: what decides when a let-go range is freed. */
async function storeSegmentConfigs(bootstrap: string): Promise<string> {
  const names = ['segment.ms', 'segment.bytes', 'retention.ms', 'local.retention.ms', 'remote.storage.enable'];
  const answer = await askOnce(bootstrap, ApiKey.DescribeConfigs, 4, {
    resources: [{ resourceType: 2, resourceName: TOPIC, configurationKeys: names }],
    includeSynonyms: false,
    includeDocumentation: false,
  });
  const result = answer.results[0] as { errorCode: number; configs: { name: string; value: string | null }[] };
  if (result.errorCode !== 0) return `DescribeConfigs answered error ${result.errorCode}`;
  return result.configs.map((c) => `${c.name}=${c.value}`).join(' ');
}

interface Figures {
  passes: CarryOutcome[];
  lines: string[];
}

const fmt = (o: CarryOutcome) =>
  `${o.topic}-${o.partition} pass ${o.pass}: ${o.copies} copies, ${o.bytesWritten} B written, ${o.bytesRead} B read, ` +
  `${Math.round(o.durationMs)} ms (copy ${Math.round(o.copyMs)}, read back ${Math.round(o.readBackMs)}), released to ${o.releaseEnd}: ${o.released}`;

async function carryScenario(store: RunningStoreProfile, proxy: RunningCompactingProxy, expected: Expected, figures: Figures): Promise<void> {
  const admin = client(proxy.bootstrap).admin();
  const producer = client(proxy.bootstrap).producer({ allowAutoTopicCreation: false });
  let rebuilt: RunningCompactingProxy | undefined;
  await Promise.all([admin.connect(), producer.connect()]);
  try {
    const configs = { 'cleanup.policy': 'compact', 'segment.ms': String(SEGMENT_MS), 'min.cleanable.dirty.ratio': '0.01', ...store.topicConfigs };
    assert.ok(
      await admin.createTopics({
        waitForLeaders: true,
        topics: [{ topic: TOPIC, numPartitions: 1, configEntries: Object.entries(configs).map(([name, value]) => ({ name, value })) }],
      }),
      'the topic is created through kcompact',
    );
    const started = Date.now();
    const keys = expected.keys ?? KEYS;
    const rounds = expected.rounds ?? ROUNDS;
    const written = await writeRounds(producer, expected.codec, keys, 0, rounds);
    const writeMs = Date.now() - started;
    const end = written.at(-1)!.offset + 1;
    const want = latestOf(written, end);
    if (expected.tiered) {
      // Rolled segments reach the remote tier and leave the broker's disk before the pass, so the
      // pass and the index read them back from the remote tier.
      const moved = await pollUntil('segments moved to the remote tier', 60_000, async () => {
        await producer.send({ topic: TOPIC, acks: -1, messages: [{ key: 'roll', value: 'roll' }] });
        const local = await localStart(store.bootstrap, TOPIC);
        const remote = await store.remoteBytes!(TOPIC);
        return local > 0 && remote > 0 ? { local, remote } : undefined;
      });
      figures.lines.push(`before the pass the remote tier holds ${moved.remote} B of ${TOPIC}; the broker's disk starts at offset ${moved.local}`);
    }
    const bytesBefore = await store.storeBytes(TOPIC);
    const probe = expected.probeLatency ? latencyProbe(proxy.bootstrap) : undefined;
    const first = await cleanAndCarry(proxy, producer, expected.codec);
    if (probe) figures.lines.push(`a client producing 1 KiB every 200 ms while the first pass ran: ${await probe.stop()}`);
    const [pass] = first.carried;
    figures.passes.push(...first.carried);
    assert.ok(pass!.copies >= keys, `the pass copied every key's latest record (${pass!.copies})`);
    assert.equal(pass!.released, expected.releases, `the store ${expected.releases ? 'lets' : 'cannot let'} the carried range go`);
    const storeStart = await store.storeStart(TOPIC);
    if (expected.releases) assert.ok(storeStart >= end, `the store starts at ${storeStart}, past the ${end} offsets written`);
    else assert.equal(storeStart, 0, 'the store keeps its whole log');

    const seen = await readLatest(proxy.bootstrap, end);
    assert.deepEqual(seen.latest, want, 'Java from offset 0 through the carrier: the latest value of every key');
    const cleanedUpTo = first.cleaned.at(-1)!.endOffset;
    assert.deepEqual(
      seen.records.filter((r) => r.offset < cleanedUpTo).map((r) => r.offset),
      compactedView(written, cleanedUpTo)
        .filter((r) => r.offset < cleanedUpTo)
        .map((r) => r.offset),
      'exactly the survivors below the cleaned end, at their original offsets',
    );

    // A second pass over new updates: on a store that lets ranges go, it lets the first pass's
    // copies go too; on one that cannot, new updates are cleaned and no pass runs.
    const second = await writeRounds(producer, expected.codec, keys, rounds, expected.secondRounds ?? 2);
    const end2 = second.at(-1)!.offset + 1;
    const want2 = latestOf([...written, ...second], end2);
    const again = expected.releases ? await cleanAndCarry(proxy, producer, expected.codec) : await cleanWithoutPass(proxy, producer, expected.codec, end2);
    figures.passes.push(...again.carried);
    // Stores free what a range let go on their own schedule (whole segments, a retention check, the remote tier's expiry).
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const bytesAfter = await store.storeBytes(TOPIC);
    const storeStart2 = await store.storeStart(TOPIC);
    figures.lines.push(`${TOPIC} on the store: ${await storeSegmentConfigs(store.bootstrap)}`);
    const rawBytes = written.length * VALUE_BYTES + second.length * VALUE_BYTES;
    figures.lines.push(
      `${TOPIC}: ${written.length + second.length} records (${rawBytes} B of values) written in ${writeMs} ms for the first ${written.length}; ` +
        `store ${bytesBefore} B before the first pass, ${bytesAfter} B 5 s after the ${expected.releases ? 'second pass' : 'second clean'}; store log start ${storeStart} then ${storeStart2}`,
    );
    assert.deepEqual((await readLatest(proxy.bootstrap, end2)).latest, want2, 'after the second pass, through the carrier');

    // A replica with an empty data directory builds its index from what the store holds.
    rebuilt = await startCompactingProxy(store.bootstrap);
    const fresh = await pollUntil('the rebuilt replica serves every key', 90_000, async () => {
      const r = await readLatest(rebuilt!.bootstrap, end2);
      return r.latest.size === want2.size ? r.latest : undefined;
    });
    assert.deepEqual(fresh, want2, 'through a replica rebuilt from an empty data directory');
  } finally {
    await Promise.allSettled([producer.disconnect(), admin.disconnect()]);
    await rebuilt?.stop();
  }
}

/** How clients say that the store has no InitProducerId (each in its own words). */
const NO_PRODUCER_IDS = /transaction|idempoten|InitProducerId|INIT_PRODUCER_ID|not support|UNSUPPORTED|INVALID_PRODUCER_ID_MAPPING/i;

/** The matrix's clients that are idempotent by default, as the bed runs them. */
const IDEMPOTENT_BY_DEFAULT = new Set(['java', 'librdkafka', 'kafka-python']);

/** A client's refusal, as it reports it, must name what the store lacks. */
function assertClear(error: string, what: RegExp, who: string): void {
  assert.match(error, what, `${who}: the error says why (${error})`);
}

async function refusedCodecs(t: TestContext, h: Harness, expected: Expected): Promise<void> {
  for (const compression of expected.refusedCodecs ?? []) {
    const topic = `profile-codec-${compression}`;
    await h.createTopic(topic, 1, { 'cleanup.policy': 'compact' });
    const run = await franzProduce(h.bootstrap, { topic, count: 5, keys: 5, compression, timeoutMs: 15_000 }).catch((e: Error) => ({ errors: [e.message] }));
    assert.ok(run.errors.length > 0, `a ${compression} batch is refused`);
    assertClear(run.errors.join('; '), /UNSUPPORTED_COMPRESSION_TYPE|compression/i, `franz-go ${compression}`);
    assert.deepEqual(await h.endOffsets(topic), [0], `nothing of the ${compression} batch is written`);
    t.diagnostic(`franz-go producing ${compression} through kcompact: ${run.errors[0]!.split(';')[0]!.replace(/^.*errors: /, '')}`);
  }
}

/** What a default-idempotent client's users do on a store without producer ids (docs/semantics.md). */
const PRODUCE_IDEMPOTENCE_OFF = produceWith({ idempotence: false });

/**
 * On a store that serves each record as a batch of its own, any record of a client's batch
 * without a producer comes back first in a batch without a producer, which is how kcompact knows
 * its own carry records: one that starts with the header kcompact.carry, wherever it sits in the
 * batch, is refused through kcompact, and nothing of the batch is written.
 */
async function posingRecords(t: TestContext, h: Harness): Promise<void> {
  const topic = 'profile-posing';
  await h.createTopic(topic, 1, { 'cleanup.policy': 'compact' });
  const now = BigInt(Date.now());
  const batch = await encodeBatch(
    {
      baseOffset: 0n,
      partitionLeaderEpoch: -1,
      attributes: 0,
      lastOffsetDelta: 1,
      baseTimestamp: now,
      maxTimestamp: now,
      producerId: -1n,
      producerEpoch: -1,
      baseSequence: -1,
    },
    [
      { timestampDelta: 0, offsetDelta: 0, key: Buffer.from('a'), value: Buffer.from('a client record') },
      {
        timestampDelta: 0,
        offsetDelta: 1,
        key: Buffer.from('b'),
        value: Buffer.from('v'),
        headers: [{ key: Buffer.from('kcompact.carry'), value: Buffer.from([1, 2, 0, 0]) }],
      },
    ],
    Codec.Gzip,
  );
  const answer = await askOnce(h.bootstrap, ApiKey.Produce, 9, {
    transactionalId: null,
    acks: -1,
    timeoutMs: 15_000,
    topicData: [{ name: topic, partitionData: [{ index: 0, records: batch }] }],
  });
  const p = answer.responses[0].partitionResponses[0];
  assert.equal(p.errorCode, ErrorCode.INVALID_RECORD, 'a batch whose second record starts with kcompact.carry is refused');
  assert.deepEqual(
    (p.recordErrors as { batchIndex: number }[]).map((e) => e.batchIndex),
    [1],
    'the record error names the second record',
  );
  assert.deepEqual(await h.endOffsets(topic), [0], 'nothing of the batch is written');
  t.diagnostic(
    `a gzip batch without a producer whose second record starts with kcompact.carry: ${errorName(p.errorCode)}, ${p.recordErrors[0].batchIndexErrorMessage}`,
  );
}

async function cells(t: TestContext, h: Harness, expected: Expected): Promise<void> {
  const failures: string[] = [];
  /** Runs a cell that must pass; a failure goes to failures, with where the client's fetches went. */
  const passes = async (driver: ClientDriver, check: OperationCheck, name: string): Promise<void> => {
    const started = Date.now();
    try {
      await check.run(h, driver, name);
      t.diagnostic(`${driver.name} ${check.title}: pass (${Date.now() - started} ms)`);
    } catch (e) {
      failures.push(`${driver.name} ${check.title}: ${(e as Error).message}`);
      // Where the client's fetches went: the offsets asked, each with how many times in a row.
      const asked: string[] = [];
      for (const f of h.fetches(name)) {
        const last = asked.at(-1)?.split('x');
        if (last && Number(last[0]) === f.offset) asked[asked.length - 1] = `${f.offset}x${Number(last[1]) + 1}`;
        else asked.push(`${f.offset}x1`);
      }
      t.diagnostic(`${driver.name} ${check.title}: FAIL (${Date.now() - started} ms): ${(e as Error).message}; fetches at ${asked.join(' ')}`);
    }
  };
  for (const driver of CLIENTS) {
    for (const check of [produce, compactedRead]) {
      const name = `pf-${h.kind}-${driver.id}-${check.op}`.toLowerCase();
      const refused = check === produce && expected.idempotenceRefused && IDEMPOTENT_BY_DEFAULT.has(driver.id);
      if (!refused) {
        await passes(driver, check, name);
        continue;
      }
      const started = Date.now();
      try {
        await check.run(h, driver, name);
        failures.push(`${driver.name} ${check.title}: an idempotent producer wrote to a store without producer ids`);
        t.diagnostic(`${driver.name} ${check.title}: pass (${Date.now() - started} ms)`);
      } catch (e) {
        // Clients print the reason where they print it: kafka-python in its message, librdkafka on stderr.
        const lines = describeError(e).split('\n');
        const error = lines.find((l) => NO_PRODUCER_IDS.test(l));
        t.diagnostic(`${driver.name} ${check.title} (idempotent by default): refused (${Date.now() - started} ms): ${(error ?? lines[0]!).slice(0, 300)}`);
        if (!error) failures.push(`${driver.name} ${check.title}: unclear error ${lines.join(' ')}`);
        const written = await h.endOffsets(name);
        if (written.some((n) => n !== 0)) failures.push(`${driver.name} ${check.title}: the refused producer still wrote ${written.join(',')} records`);
      }
      // With idempotence off, as the store's documentation says, the client produces; the compacted read follows.
      await passes(driver, PRODUCE_IDEMPOTENCE_OFF, `${name}-no-idempotence`);
    }
    if (!expected.transactions) {
      const name = `pf-${h.kind}-${driver.id}-transactions`.toLowerCase();
      const refusal = await transactions.run(h, driver, name).then(
        () => undefined,
        (e: Error) => describeError(e),
      );
      if (refusal === undefined) failures.push(`${driver.name} transactions: committed on a store without transactions`);
      else {
        const written = await h.endOffsets(name);
        t.diagnostic(`${driver.name} transactions: refused, ${written.join(',')} records in the store: ${refusal.split('\n')[0]}`);
        if (!NO_PRODUCER_IDS.test(refusal)) failures.push(`${driver.name} transactions: unclear error ${refusal}`);
        // Nothing of a refused transaction may reach the log, where a reader would take it for committed.
        if (written.some((n) => n !== 0)) failures.push(`${driver.name} transactions: the refused transactions wrote ${written.join(',')} records`);
      }
    }
  }
  assert.deepEqual(failures, [], 'core cells');
}

for (const name of profilesToRun()) {
  const expected = EXPECTED[name];
  const spec = STORE_PROFILES[name];
  test(`store profile ${name} (${spec.stores}: no ${spec.lacks})`, { timeout: 1_500_000 }, async (t) => {
    if (!requirePeers(t)) return;
    const store = await startStoreProfile(name);
    const h = await Harness.over({ kind: name, bootstrap: store.bootstrap, stop: () => store.stop() }, { carry: true, topicConfigs: store.topicConfigs });
    const proxy = h.compacting;
    const figures: Figures = { passes: [], lines: [] };
    const started = Date.now();
    let passed = false;
    try {
      t.diagnostic(`built as: ${spec.built}`);
      await t.test(`the store refuses what ${spec.stores} lack${spec.stores.includes(',') ? '' : 's'}`, async (tt) => {
        tt.diagnostic(await store.proveRefusal());
      });
      await t.test('carrying keeps the latest value of every key, through the carrier and a rebuilt replica', () =>
        carryScenario(store, proxy, expected, figures),
      );
      await t.test("the client matrix's core cells through the carrying kcompact", (tt) => cells(tt, h, expected));
      if (expected.refusedCodecs) await t.test('a batch with a codec the store refuses gets its error', (tt) => refusedCodecs(tt, h, expected));
      if (expected.rebatches) await t.test("a client's record the store serves alone cannot pose as kcompact's own", (tt) => posingRecords(tt, h));
      await t.test('Kafka Connect (distributed) through the carrying kcompact', async (tt) => {
        const run = await connectRound(proxy, `pf-${name}`, store.topicConfigs);
        figures.passes.push(...run.passes);
        tt.diagnostic(run.summary);
      });
      for (const guarantee of ['at_least_once', 'exactly_once_v2'] as const) {
        const app = `pf-${name}-${guarantee.replace(/_/g, '-')}`;
        if (guarantee === 'exactly_once_v2' && !expected.transactions) {
          await t.test(`Kafka Streams (${guarantee}) stops with the store's refusal, its input whole`, async (tt) => {
            tt.diagnostic(await streamsRefused(proxy, app, guarantee, store.topicConfigs, /INIT_PRODUCER_ID|InitProducerId|transactions/));
          });
          continue;
        }
        await t.test(`Kafka Streams (${guarantee}) through the carrying kcompact`, async (tt) => {
          const run = await streamsRound(proxy, app, guarantee, store.topicConfigs, expected.streamsConfigs);
          figures.passes.push(...run.passes);
          tt.diagnostic(run.summary);
        });
      }
      passed = true;
    } finally {
      try {
        const { cleaner } = await proxy.compaction.engine.status();
        for (const o of figures.passes) t.diagnostic(fmt(o));
        for (const line of figures.lines) t.diagnostic(line);
        t.diagnostic(`carrier totals ${JSON.stringify(cleaner.carry)}; ${Math.round((Date.now() - started) / 1000)} s in all`);
      } catch (e) {
        t.diagnostic(`no carrier figures: ${(e as Error).message}`);
      }
      if (!passed) t.diagnostic(`store stderr tail:\n${store.stderrTail(20)}`);
      await h.stop();
    }
  });
}

test('close the Java client', async () => {
  await Promise.all(CLIENTS.map((c) => c.close?.()));
});
