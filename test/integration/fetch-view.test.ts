/**
 * The compacted Fetch view with real clients: a topic written to Kafka 4.4 with its cleaner off
 * (every codec, many superseded records), a declared survivor set with a removed tail, and
 * kcompact in front. A consumer of each family reads from offset 0 and must see exactly the
 * survivors with their original offsets, reach the high watermark past the removed tail (kafkajs
 * cannot, but must not spin), and cost a number of upstream fetches bounded by the survivors
 * rather than by the superseded records. A second topic is indexed and cleaned by the real
 * compaction engine, and read through the view of its index.
 */
import { TopicIds } from '../../src/proxy/topic-ids.js';
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, test, type TestContext } from 'node:test';
import kafkajs from 'kafkajs';
import { ApiKey } from '../../src/protocol/messages.js';
import type { Filter } from '../../src/proxy/filter/filter.js';
import { createFetchView, type FetchView } from '../../src/compaction/fetch-view/fetch-view.js';
import type { CompactionEngine } from '../../src/engine/api/engine-handle.js';
import { startCompactionEngine } from '../../src/compaction/engine-client/compaction-engine.js';
import { engineOptions } from '../../src/engine/api/engine-options.js';
import { UpstreamPartitionReads } from '../../src/compaction/fetch-view/upstream-partition-reads.js';
import { UpstreamClusterClient } from '../../src/upstream/upstream-cluster-client.js';
import type { TopicConfigView, TopicPolicy } from '../../src/engine/api/topic-policy.js';
import { createLogger, isLogLevel, setLogLevel } from '../../src/common/log.js';
import { parseHostPortList } from '../../src/common/host-port.js';
import { startProxy, type RunningProxy } from '../support/kcompact.js';
import { askOnce, RawConnection } from '../support/raw-client.js';
import { encodeBatch } from '../../src/protocol/records/batch.js';
import { binDir, pythonScriptsDir, venvPython } from '../support/paths.js';
import {
  franzProduce,
  genRecord,
  javaToolOk,
  makeTempDir,
  pollUntil,
  requirePeers,
  runProcess,
  startKafka,
  type RunningKafka,
  type TempDir,
} from '../support/index.js';
import { FakeIndex } from '../unit/compaction/fetch-view/fake-log.js';

const TOPIC = 'view-compacted';
const KEYS = 500;
const VALUE_SIZE = 100;
/** Small batches, each codec in turn: reading the raw log takes many fetches. */
const BATCHES = 1000;
const PER_BATCH = 20;
const TOTAL = BATCHES * PER_BATCH;
/**
 * Everything from here to the store's high watermark is removed: the log ends here for clients
 * (docs/carrying.md, "The end of the log"; a batch boundary), and they must reach it.
 */
const TAIL_START = 17_000;
const SURVIVORS = [...new Set([0, ...range(0, TAIL_START).filter((i) => i % 1999 === 7), ...range(9000, 9012), TAIL_START - 1])].sort((a, b) => a - b);
/** Java's partition fetch size in its test: the raw log would take (log bytes / this) fetches. */
const JAVA_FETCH_BYTES = 16_384;

/** Cleaned by the compaction engine: keys updated over and over, some deleted. */
const ENGINE_TOPIC = 'view-engine';
const ENGINE_KEYS = 100;
const ENGINE_RECORDS = 3000;
const ENGINE_TOMBSTONE_EVERY = 9;
const ENGINE_POLICY: TopicPolicy = {
  compact: true,
  delete: false,
  deleteRetentionMs: 100,
  minCompactionLagMs: 0,
  maxCompactionLagMs: Number.MAX_SAFE_INTEGER,
  minCleanableDirtyRatio: 0.01,
  segmentMs: 300,
  segmentBytes: 1 << 30,
  retentionMs: -1,
  retentionBytes: -1,
  storeRetentionMs: -1,
  carryAfterMs: -1,
};

const skip = requirePeers();
const log = createLogger({ component: 'fetch-view-test' });

let kafka: RunningKafka;
let proxy: RunningProxy;
let upstream: UpstreamClusterClient;
let pool: UpstreamPartitionReads;
let engine: CompactionEngine;
let engineDir: TempDir;
let view: FetchView;
let bootstrap: string;
/** The log's size in bytes, as produced. */
let logBytes = 0;

interface ClientFetch {
  topic: string;
  clientId: string | null;
  offset: number;
  at: number;
}

/** Every client fetch of a compacted partition, with the offset the client asked for. */
let fetches: ClientFetch[] = [];

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from }, (_, i) => from + i);
}

const config: TopicConfigView = {
  compacted: (t) => (t === TOPIC || t === ENGINE_TOPIC ? ENGINE_POLICY : undefined),
  compactedTopics: () => [TOPIC, ENGINE_TOPIC],
  onChange: () => () => undefined,
};

before(async () => {
  if (skip) return;
  const level = process.env.KCOMPACT_TEST_LOG_LEVEL ?? 'warn';
  setLogLevel(isLogLevel(level) ? level : 'warn');
  kafka = await startKafka({ compaction: 'off' });
  const created = await askOnce(kafka.bootstrap, ApiKey.CreateTopics, 7, {
    topics: [TOPIC, ENGINE_TOPIC].map((name) => ({ name, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] })),
    timeoutMs: 10_000,
  });
  assert.deepEqual(
    created.topics.map((t: { errorCode: number }) => t.errorCode),
    [0, 0],
  );
  await pollUntil('the topics to take writes', 30_000, async () => {
    const offsets = await askOnce(kafka.bootstrap, ApiKey.ListOffsets, 7, {
      replicaId: -1,
      isolationLevel: 0,
      topics: [TOPIC, ENGINE_TOPIC].map((name) => ({ name, partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp: -1n }] })),
    });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    return offsets.topics.every((t: any) => t.partitions[0].errorCode === 0) || undefined;
  });
  await produceLog(kafka.bootstrap);
  engineDir = makeTempDir('kcompact-view-engine-');
  engine = await startCompactionEngine(
    engineOptions({
      connection: { upstream: parseHostPortList(kafka.bootstrap), requestTimeoutMs: 10_000 },
      dataDir: engineDir.path,
      // Every compacted partition, not only those a client uses: the records are written around the engine.
      indexing: { onDemand: false },
      cleaner: { backoffMs: 200 },
      indexer: { maxWaitMs: 100 },
    }),
    log,
  );
  engine.setPolicies(new Map([[ENGINE_TOPIC, ENGINE_POLICY]]));
  await produceAndClean();

  const topics = new TopicIds();
  topics.learn(TOPIC, created.topics[0].topicId);
  upstream = new UpstreamClusterClient({
    bootstrap: parseHostPortList(kafka.bootstrap),
    clientId: 'kcompact-reader',
    log,
    maxFrameBytes: 100 << 20,
    requestTimeoutMs: 10_000,
  });
  pool = new UpstreamPartitionReads({ upstream, topicIds: topics });
  const index = new FakeIndex(SURVIVORS, TOTAL);
  const indexes = {
    partition: (t: string, p: number) => (t === TOPIC ? (p === 0 ? index : undefined) : engine.index.partition(t, p)),
    caughtUp: (t: string, p: number, timeoutMs: number) => (t === TOPIC ? Promise.resolve(true) : engine.index.caughtUp(t, p, timeoutMs)),
    used: (t: string, p: number) => engine.index.used(t, p),
  };
  view = createFetchView({ config, index: indexes, topicIds: topics, upstream: pool, log });
  proxy = await startProxy(kafka.bootstrap, { topics, filters: [fetchRecorder, view] });
  bootstrap = proxy.bootstrap;
});

after(async () => {
  upstream?.close();
  await proxy?.stop();
  await engine?.close();
  engineDir?.remove();
  await kafka?.stop();
});

/**
 * Two rounds of updates in two codecs, then, past segment.ms, one more record so the first
 * rounds leave the (virtual) active segment, as Kafka's cleaner needs; then a clean.
 */
async function produceAndClean(): Promise<void> {
  const half = ENGINE_RECORDS / 2;
  for (const [start, compression] of [
    [0, 'zstd'],
    [half, 'gzip'],
  ] as const) {
    const spec = {
      topic: ENGINE_TOPIC,
      start,
      count: half,
      keys: ENGINE_KEYS,
      valueSize: 64,
      tombstoneEvery: ENGINE_TOMBSTONE_EVERY,
      compression,
      timeoutMs: 60_000,
    };
    await franzProduce(kafka.bootstrap, spec);
  }
  await new Promise((r) => setTimeout(r, ENGINE_POLICY.segmentMs * 3));
  await franzProduce(kafka.bootstrap, { topic: ENGINE_TOPIC, start: ENGINE_RECORDS, count: 1, keys: ENGINE_KEYS, valueSize: 64 });
  await pollUntil('the engine to clean the topic', 60_000, async () => {
    await engine.compactNow(ENGINE_TOPIC);
    return (engine.index.partition(ENGINE_TOPIC, 0)?.cleanedUpTo() ?? 0) >= ENGINE_RECORDS || undefined;
  });
}

/** Record i (the bed's generated record) at offset i, in batches of every codec, pipelined. */
async function produceLog(address: string): Promise<void> {
  const conn = await RawConnection.open(address);
  try {
    for (let b = 0; b < BATCHES; b++) {
      const records = range(b * PER_BATCH, (b + 1) * PER_BATCH).map((i, delta) => ({
        timestampDelta: delta,
        offsetDelta: delta,
        ...genRecord(i, KEYS, VALUE_SIZE, 0),
      }));
      const fields = {
        baseOffset: 0n,
        partitionLeaderEpoch: -1,
        attributes: 0,
        lastOffsetDelta: PER_BATCH - 1,
        baseTimestamp: BigInt(Date.now()),
        maxTimestamp: BigInt(Date.now()),
        producerId: -1n,
        producerEpoch: -1,
        baseSequence: -1,
      };
      const batch = await encodeBatch(fields, records, b % 5);
      logBytes += batch.length;
      conn.request(
        ApiKey.Produce,
        9,
        { transactionalId: null, acks: -1, timeoutMs: 10_000, topicData: [{ name: TOPIC, partitionData: [{ index: 0, records: batch }] }] },
        b,
      );
    }
    for (let b = 0; b < BATCHES; b++) {
      const { body } = await conn.response(ApiKey.Produce, 9);
      const p = body.responses[0].partitionResponses[0];
      assert.deepEqual([p.errorCode, p.baseOffset], [0, BigInt(b * PER_BATCH)], 'record i lands at offset i');
    }
  } finally {
    conn.close();
  }
}

/** Records the client's fetches as they came, before the view moves their offsets. */
const fetchRecorder: Filter = {
  name: 'fetch-recorder',
  apis: {
    [ApiKey.Fetch]: {
      onRequest: (req, ctx) => {
        for (const t of req.body.topics) {
          const topic = t.topic ?? proxy.server.topics.name(t.topicId ?? '');
          if (topic !== TOPIC && topic !== ENGINE_TOPIC) continue;
          for (const p of t.partitions) fetches.push({ topic, clientId: req.header.clientId, offset: Number(p.fetchOffset), at: Date.now() });
        }
        return ctx.forward();
      },
    },
  },
};

interface Seen {
  offset: number;
  key: string | null;
  value: string | null;
}

function assertSurvivors(seen: Seen[], who: string): void {
  assert.deepEqual(
    seen.map((r) => r.offset),
    SURVIVORS,
    `${who} sees exactly the survivors, at their offsets`,
  );
  for (const r of seen) {
    const g = genRecord(r.offset, KEYS, VALUE_SIZE, 0);
    assert.equal(r.key, g.key!.toString(), `${who}: key at ${r.offset}`);
    assert.equal(r.value, g.value!.toString(), `${who}: value at ${r.offset}`);
  }
}

/**
 * Fetches needed to read the view: client fetches before the high watermark, each one upstream
 * fetch, plus the proxy's own extra reads. Fetches at the end are the client waiting for news.
 */
function assertBoundedBySurvivors(t: TestContext, who: string, run: ClientFetch[], extraReads: number): void {
  const behind = run.filter((f) => f.offset < TAIL_START).length;
  t.diagnostic(
    `${who}: ${behind} fetches before the high watermark + ${extraReads} extra upstream reads, for ${SURVIVORS.length} survivors among ${TOTAL} records`,
  );
  assert.ok(behind + extraReads <= SURVIVORS.length + 4, `${who}: ${behind} + ${extraReads} upstream fetches for ${SURVIVORS.length} survivors`);
}

async function measured<T>(work: () => Promise<T>, topic = TOPIC): Promise<{ result: T; run: ClientFetch[]; extraReads: number }> {
  fetches = [];
  const before = view.stats.extraReads;
  const result = await work();
  return { result, run: fetches.filter((f) => f.topic === topic), extraReads: view.stats.extraReads - before };
}

/** A peer client asked for one record more than exist, so it keeps fetching until its deadline. */
async function peerConsume(command: string, args: string[]): Promise<{ records: Seen[]; errors: string[] }> {
  const r = await runProcess(command, args, { timeoutMs: 60_000 });
  const line = r.stdout.trimEnd().split('\n').pop() ?? '';
  assert.ok(line.startsWith('{'), `no summary from ${path.basename(command)}: ${r.stderr.slice(-2000)}`);
  const summary = JSON.parse(line) as { records: Seen[]; errors: string[] };
  return summary;
}

const WAIT_FLAGS = ['--brokers', '', '--topic', TOPIC, '--count', String(SURVIVORS.length + 1), '--timeout-ms', '6000', '--records'];
const waitFlags = () => WAIT_FLAGS.map((f, i) => (i === 1 ? bootstrap : f));

test('Java consumer: exactly the survivors, its position reaches the high watermark', { skip, timeout: 120_000 }, async (t) => {
  const group = 'java-view';
  const { result, run, extraReads } = await measured(() =>
    javaToolOk(
      'console-consumer',
      [
        '--bootstrap-server',
        bootstrap,
        '--topic',
        TOPIC,
        '--group',
        group,
        '--from-beginning',
        '--timeout-ms',
        '6000',
        '--formatter-property',
        'print.offset=true',
        '--formatter-property',
        'print.key=true',
        // Small fetches: reading the raw log this way would take over a hundred of them.
        '--command-property',
        `max.partition.fetch.bytes=${JAVA_FETCH_BYTES}`,
      ],
      { timeoutMs: 90_000 },
    ),
  );
  const seen = result.stdout
    .trimEnd()
    .split('\n')
    .map((line) => {
      const m = /^Offset:(\d+)\t([^\t]*)\t(.*)$/.exec(line);
      assert.ok(m, `console consumer line: ${line}`);
      return { offset: Number(m[1]), key: m[2]!, value: m[3]! };
    });
  assertSurvivors(seen, 'Java');
  assert.equal(Math.max(...run.map((f) => f.offset)), TAIL_START, 'Java fetches from the end of the log');
  assertBoundedBySurvivors(t, 'Java', run, extraReads);
  assert.equal(view.stats.sessionsRefused, 0, 'Java took session id 0 and kept sending full requests');
  const raw = Math.ceil(logBytes / JAVA_FETCH_BYTES);
  const behind = run.filter((f) => f.offset < TAIL_START).length;
  assert.ok(behind * 3 <= raw, `${behind} fetches; the raw log (${logBytes} bytes) would take ${raw}`);
  const admin = new kafkajs.Kafka({ clientId: 'view-test', brokers: [kafka.bootstrap], logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const [committed] = await admin.fetchOffsets({ groupId: group, topics: [TOPIC] });
    assert.equal(committed!.partitions[0]!.offset, String(TAIL_START), 'the committed position is the end offset (what Connect waits for)');
  } finally {
    await admin.disconnect();
  }
});

test('franz-go (CRC and exact counts checked): exactly the survivors, its position reaches the high watermark', { skip, timeout: 120_000 }, async (t) => {
  const { result, run, extraReads } = await measured(() => peerConsume(path.join(binDir, 'franzclient'), ['consume', ...waitFlags()]));
  assert.deepEqual(result.errors, [`saw ${SURVIVORS.length} of ${SURVIVORS.length + 1} records before the deadline`]);
  assertSurvivors(result.records, 'franz-go');
  assert.equal(Math.max(...run.map((f) => f.offset)), TAIL_START, 'franz-go fetches from the end of the log');
  assertBoundedBySurvivors(t, 'franz-go', run, extraReads);
  assert.equal(view.stats.sessionsRefused, 0, 'franz-go took session id 0 and kept sending full requests');
});

test('franz-go reading twice with small fetches: the second read reads on from the view cache alone', { skip, timeout: 120_000 }, async () => {
  const small = [...waitFlags(), '--fetch-max-partition-bytes', String(JAVA_FETCH_BYTES)];
  const first = await measured(() => peerConsume(path.join(binDir, 'franzclient'), ['consume', ...small]));
  assertSurvivors(first.result.records, 'franz-go');
  const cacheReads = view.cache.reads;
  const again = await measured(() => peerConsume(path.join(binDir, 'franzclient'), ['consume', ...small]));
  assertSurvivors(again.result.records, 'franz-go, read again');
  assert.ok(view.cache.reads > cacheReads, 'reads answered from the view cache');
  assert.equal(again.extraReads, 0, 'and none from the upstream');
});

test('librdkafka (confluent-kafka, CRC checked): exactly the survivors, its position reaches the high watermark', { skip, timeout: 120_000 }, async (t) => {
  const { result, run, extraReads } = await measured(() => peerConsume(venvPython, [path.join(pythonScriptsDir, 'ck.py'), 'consume', ...waitFlags()]));
  assert.deepEqual(result.errors, [`saw ${SURVIVORS.length} of ${SURVIVORS.length + 1} records before the deadline`]);
  assertSurvivors(result.records, 'librdkafka');
  assert.equal(Math.max(...run.map((f) => f.offset)), TAIL_START, 'librdkafka fetches from the end of the log');
  assertBoundedBySurvivors(t, 'librdkafka', run, extraReads);
});

test('kcat -e (librdkafka end-of-partition): exits at the end', { skip, timeout: 60_000 }, async (t) => {
  if (!requirePeers(t, ['kcat'])) return;
  const r = await runProcess('kcat', ['-C', '-q', '-b', bootstrap, '-t', TOPIC, '-o', 'beginning', '-e', '-f', '%o\n', '-X', 'check.crcs=true'], {
    timeoutMs: 30_000,
  });
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(r.stdout.trimEnd().split('\n').map(Number), SURVIVORS);
});

test('kafkajs: exactly the survivors; at the end of the log it waits instead of spinning', { skip, timeout: 120_000 }, async (t) => {
  const idleMs = 5000;
  const { result, run, extraReads } = await measured(async () => {
    const consumer = new kafkajs.Kafka({ clientId: 'kafkajs-view', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING }).consumer({
      groupId: 'kafkajs-view',
      maxWaitTimeInMs: 500,
    });
    const seen: Seen[] = [];
    let lastAt: number;
    await consumer.connect();
    try {
      await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
      await consumer.run({
        eachMessage: async ({ message }) => {
          seen.push({ offset: Number(message.offset), key: message.key?.toString() ?? null, value: message.value?.toString() ?? null });
          lastAt = Date.now();
        },
      });
      const deadline = Date.now() + 60_000;
      while (seen.length < SURVIVORS.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
      lastAt = Date.now();
      await new Promise((r) => setTimeout(r, idleMs));
    } finally {
      await consumer.disconnect();
    }
    return { seen, idleFrom: lastAt };
  });
  assertSurvivors(result.seen, 'kafkajs');
  const idle = run.filter((f) => f.at >= result.idleFrom);
  t.diagnostic(`kafkajs: ${idle.length} fetches in ${idleMs} ms after the last survivor, at offsets ${[...new Set(idle.map((f) => f.offset))].join(',')}`);
  assert.ok(idle.length <= (idleMs / 500) * 2 + 4, `kafkajs spins: ${idle.length} fetches in ${idleMs} ms`);
  assert.ok(
    idle.every((f) => f.offset === TAIL_START),
    'kafkajs stays after the last survivor',
  );
  assertBoundedBySurvivors(
    t,
    'kafkajs',
    run.filter((f) => f.at < result.idleFrom),
    extraReads,
  );
});

/** What the engine's index shows of its topic: survivors below the horizon, everything above. */
function engineVisible(): number[] {
  const index = engine.index.partition(ENGINE_TOPIC, 0)!;
  const horizon = index.cleanedUpTo();
  return [...Array.from(index.survivors(0, horizon)), ...range(horizon, ENGINE_RECORDS + 1)];
}

test('with the real index and cleaner: Java, franz-go and librdkafka read exactly what the cleaner kept', { skip, timeout: 180_000 }, async () => {
  const visible = engineVisible();
  // Sanity check on the engine: every key's last write is the last of its offsets to stay.
  assert.ok(visible.length < ENGINE_RECORDS / 5, `${visible.length} of ${ENGINE_RECORDS + 1} records visible after cleaning`);
  const flags = ['--brokers', bootstrap, '--topic', ENGINE_TOPIC, '--count', String(visible.length + 1), '--timeout-ms', '5000', '--records'];
  const expected = visible.map((offset) => {
    const g = genRecord(offset, ENGINE_KEYS, 64, offset < ENGINE_RECORDS ? ENGINE_TOMBSTONE_EVERY : 0);
    return { offset, key: g.key!.toString(), value: g.value === null ? null : g.value.toString() };
  });
  for (const [who, command, args] of [
    ['franz-go', path.join(binDir, 'franzclient'), ['consume', ...flags]],
    ['librdkafka', venvPython, [path.join(pythonScriptsDir, 'ck.py'), 'consume', ...flags]],
  ] as const) {
    const { result, run } = await measured(() => peerConsume(command, [...args]), ENGINE_TOPIC);
    assert.deepEqual(
      result.records.map(({ offset, key, value }) => ({ offset, key, value })),
      expected,
      who,
    );
    assert.equal(Math.max(...run.map((f) => f.offset)), ENGINE_RECORDS + 1, `${who} reaches the high watermark`);
  }
  const java = await javaToolOk(
    'console-consumer',
    [
      '--bootstrap-server',
      bootstrap,
      '--topic',
      ENGINE_TOPIC,
      '--from-beginning',
      '--timeout-ms',
      '5000',
      '--formatter-property',
      'print.offset=true',
      '--formatter-property',
      'print.key=true',
    ],
    { timeoutMs: 90_000 },
  );
  assert.deepEqual(
    java.stdout
      .trimEnd()
      .split('\n')
      .map((line) => Number(/^Offset:(\d+)\t/.exec(line)?.[1])),
    visible,
    'Java',
  );
});
