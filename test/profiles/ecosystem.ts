/**
 * Kafka Connect and Kafka Streams through a carrying kcompact in front of a store profile: the
 * shortest runs that need compaction and carrying to be right. test/integration/connect.test.ts
 * and streams.test.ts check the same and more, in front of stores that lack only compaction.
 *
 * - Connect: a distributed worker creates its internal topics through kcompact, a FileStream
 *   source connector's config is replaced twice (its source offsets and statuses updated all
 *   along), kcompact cleans and carries the internal topics, and a restarted worker comes back
 *   with the connector at its latest config and copies only the lines added while it was down.
 * - Streams: a count-by-key app writes its changelog through kcompact, kcompact cleans and
 *   carries it, and the app, restarted with its local state wiped, restores only the survivors
 *   and counts on.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import type { CarryOutcome } from '../../src/engine/api/engine-reports.js';
import type { RunningCompactingProxy } from '../support/kcompact.js';
import {
  allRecords,
  franzProduce,
  makeTempDir,
  pollUntil,
  readToEnd,
  startConnectWorker,
  startStreamsApp,
  type RunningConnectWorker,
  type RunningStreamsApp,
  type StreamsEvent,
} from '../support/index.js';

/** segment.ms of the topics Connect and Streams create: earlier updates become cleanable within a second. */
const SEGMENT_MS = 1000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface EcosystemRun {
  /** The passes of the cleans the run asked for. */
  passes: CarryOutcome[];
  /** The topics that hold what the run wrote through kcompact, for the store's bytes. */
  topics: string[];
  /** One line for the test's output. */
  summary: string;
}

/** Cleans each topic on demand until the index has caught up; the passes that followed. */
async function cleanAll(proxy: RunningCompactingProxy, topics: readonly string[]): Promise<CarryOutcome[]> {
  await pollUntil('the index caught up with the topics', 60_000, async () => {
    const status = (await proxy.compaction.engine.status()).partitions.filter((p) => topics.includes(p.topic));
    return status.length > 0 && status.every((p) => p.nextOffset === p.highWatermark) ? true : undefined;
  });
  const passes: CarryOutcome[] = [];
  for (const topic of topics) {
    const report = await proxy.compaction.engine.compactNow(topic);
    assert.deepEqual(report.failed, [], topic);
    passes.push(...report.carried);
  }
  return passes;
}

const CONNECTOR = 'file-source';
const CONNECTOR_CLASS = 'FileStreamSourceShim';

/** `topicConfigs`: store configs the profile's topics are created with (Connect's per-topic prefixes carry them). */
export async function connectRound(proxy: RunningCompactingProxy, name: string, topicConfigs: Readonly<Record<string, string>>): Promise<EcosystemRun> {
  const dir = makeTempDir('kcompact-profile-connect-');
  const file = path.join(dir.path, 'source.txt');
  const linesTopic = `${name}-lines`;
  const perTopic = (prefix: string) => Object.fromEntries(Object.entries(topicConfigs).map(([k, v]) => [`${prefix}.${k}`, v]));
  const options = {
    bootstrap: proxy.bootstrap,
    dir: dir.path,
    groupId: `${name}-connect`,
    properties: {
      'offset.storage.partitions': 1,
      'status.storage.partitions': 1,
      'offset.flush.interval.ms': 500,
      'config.storage.segment.ms': SEGMENT_MS,
      'offset.storage.segment.ms': SEGMENT_MS,
      'status.storage.segment.ms': SEGMENT_MS,
      // Only the run's own clean: a carrier round of the proxy's would let go of what is read next.
      'config.storage.min.cleanable.dirty.ratio': 1,
      'offset.storage.min.cleanable.dirty.ratio': 1,
      'status.storage.min.cleanable.dirty.ratio': 1,
      ...perTopic('config.storage'),
      ...perTopic('offset.storage'),
      ...perTopic('status.storage'),
      // The connector's own topic, created by the worker (topic.creation.enable is Connect's default).
      'topic.creation.default.replication.factor': 1,
      'topic.creation.default.partitions': 1,
      ...Object.fromEntries(Object.entries(topicConfigs).map(([k, v]) => [`topic.creation.default.${k}`, v])),
    },
  };
  const lines: string[] = [];
  const append = (from: number, to: number) => {
    for (let i = from; i <= to; i++) lines.push(`line ${i}`);
    fs.appendFileSync(file, Array.from({ length: to - from + 1 }, (_, i) => `line ${from + i}\n`).join(''));
  };
  const linesRead = async () =>
    pollUntil(`${lines.length} lines in ${linesTopic}`, 60_000, async () => {
      const values = allRecords(await readToEnd(proxy.bootstrap, linesTopic)).map((r) => r.value ?? '');
      return values.length >= lines.length ? values : undefined;
    });
  let worker: RunningConnectWorker | undefined;
  const ok = async <T>(method: string, urlPath: string, body?: unknown): Promise<T> => {
    const res = await worker!.request<T>(method, urlPath, body);
    assert.ok(res.status >= 200 && res.status < 300, `${method} ${urlPath}: HTTP ${res.status} ${JSON.stringify(res.body)}`);
    return res.body;
  };
  const running = () =>
    pollUntil(`connector ${CONNECTOR} and its task RUNNING`, 60_000, async () => {
      const res = await worker!.request<{ connector: { state: string }; tasks: { state: string; trace?: string }[] }>('GET', `/connectors/${CONNECTOR}/status`);
      if (res.status !== 200) return undefined;
      const failed = res.body.tasks.find((t) => t.state === 'FAILED');
      if (failed) throw new Error(`the task failed: ${failed.trace?.split('\n').slice(0, 3).join(' ')}`);
      return res.body.connector.state === 'RUNNING' && res.body.tasks[0]?.state === 'RUNNING' ? true : undefined;
    });
  const config = (batchSize: number) => ({ 'connector.class': CONNECTOR_CLASS, 'tasks.max': '1', file, topic: linesTopic, 'batch.size': String(batchSize) });
  try {
    append(1, 10);
    worker = await startConnectWorker(options);
    const internal = [worker.topics.configs, worker.topics.offsets, worker.topics.status];
    await ok('POST', '/connectors', { name: CONNECTOR, config: config(100) });
    await running();
    assert.deepEqual(await linesRead(), lines);
    for (const batchSize of [150, 200]) {
      await sleep(SEGMENT_MS + 200);
      await ok('PUT', `/connectors/${CONNECTOR}/config`, config(batchSize));
      await running();
      append(lines.length + 1, lines.length + 10);
      assert.deepEqual(await linesRead(), lines);
    }
    await pollUntil('the last source offset stored', 30_000, async () => {
      const offsets = allRecords(await readToEnd(proxy.bootstrap, worker!.topics.offsets));
      return offsets.some((r) => r.value === `{"position":${fs.statSync(file).size}}`) ? true : undefined;
    });
    // Past segment.ms once more, so that the latest connector config is cleanable (and so carried).
    await sleep(SEGMENT_MS + 200);
    await ok('PUT', `/connectors/${CONNECTOR}/pause`);
    await ok('PUT', `/connectors/${CONNECTOR}/resume`);
    await running();
    const passes = await cleanAll(proxy, internal);
    await worker.stop();
    worker = undefined;
    append(lines.length + 1, lines.length + 5);
    worker = await startConnectWorker(options);
    assert.deepEqual(await ok<string[]>('GET', '/connectors'), [CONNECTOR], 'the connector is back without being posted again');
    assert.equal((await ok<Record<string, string>>('GET', `/connectors/${CONNECTOR}/config`))['batch.size'], '200', 'with its latest config');
    await running();
    // Exactly once each, in order: the restarted task started at the stored position.
    assert.deepEqual(await linesRead(), lines);
    return {
      passes,
      topics: [...internal, linesTopic],
      summary: `${passes.length} passes over ${internal.length} internal topics; the restarted worker resumed at line ${lines.length - 4}`,
    };
  } catch (e) {
    const log =
      worker?.log() ?? (fs.existsSync(path.join(dir.path, 'worker.stderr.log')) ? fs.readFileSync(path.join(dir.path, 'worker.stderr.log'), 'utf8') : '');
    throw new Error(`${(e as Error).message}\nworker log tail:\n${log.split('\n').slice(-30).join('\n')}`, { cause: e });
  } finally {
    await worker?.stop();
    dir.remove();
  }
}

const KEYS = 6;
const UPDATES_PER_KEY = 50;
const PARTITIONS = 2;

function keyName(i: number): string {
  return `key-${String(i).padStart(6, '0')}`;
}

const isStore = (e: StreamsEvent): e is Extract<StreamsEvent, { event: 'store' }> => e.event === 'store';
const isRestored = (e: StreamsEvent): e is Extract<StreamsEvent, { event: 'restored' }> => e.event === 'restored';

type Guarantee = 'at_least_once' | 'exactly_once_v2';

function streamsSetup(
  proxy: RunningCompactingProxy,
  name: string,
  guarantee: Guarantee,
  topicConfigs: Readonly<Record<string, string>>,
  configs: Readonly<Record<string, string>>,
) {
  const input = `${name}-input`;
  const output = `${name}-counts`;
  const dir = makeTempDir('kcompact-profile-streams-');
  const stateDir = path.join(dir.path, 'state');
  const options = {
    bootstrap: proxy.bootstrap,
    applicationId: `${name}-key-count`,
    input,
    output,
    stateDir,
    logDir: dir.path,
    configs: {
      'topic.segment.ms': String(SEGMENT_MS),
      'processing.guarantee': guarantee,
      ...Object.fromEntries(Object.entries(topicConfigs).map(([k, v]) => [`topic.${k}`, v])),
      ...configs,
    },
  };
  const produce = async (start: number, count: number) => {
    const summary = await franzProduce(proxy.bootstrap, {
      topic: input,
      start,
      count,
      keys: KEYS,
      valueSize: 16,
      createPartitions: PARTITIONS,
      topicConfigs: { ...topicConfigs },
    });
    assert.deepEqual(summary.errors, [], 'the input is written');
  };
  return { input, output, dir, stateDir, options, produce };
}

/**
 * A Streams app on a store that refuses what its guarantee needs (exactly_once_v2 without
 * transactions): it must stop with the store's refusal in its log, and the input it was given
 * stays whole through kcompact.
 */
export async function streamsRefused(
  proxy: RunningCompactingProxy,
  name: string,
  guarantee: Guarantee,
  topicConfigs: Readonly<Record<string, string>>,
  refusal: RegExp,
): Promise<string> {
  const { input, dir, options, produce } = streamsSetup(proxy, name, guarantee, topicConfigs, {});
  let app: RunningStreamsApp | undefined;
  try {
    await produce(0, KEYS * 10);
    app = startStreamsApp(options);
    const isError = (e: StreamsEvent): e is Extract<StreamsEvent, { event: 'state' }> => e.event === 'state' && e.state === 'ERROR';
    await app.waitFor('the app stops in ERROR', isError, 90_000);
    const log = app.stderrTail(400);
    const line = log.split('\n').find((l) => refusal.test(l));
    assert.ok(line, `the app's log names the refusal (${refusal})`);
    const records = allRecords(await readToEnd(proxy.bootstrap, input));
    assert.equal(records.length, KEYS * 10, 'the input stays whole');
    return line.trim();
  } finally {
    await app?.stop();
    dir.remove();
  }
}

/** `configs`: Streams configs the store's users need (e.g. producer.enable.idempotence=false without InitProducerId). */
export async function streamsRound(
  proxy: RunningCompactingProxy,
  name: string,
  guarantee: Guarantee,
  topicConfigs: Readonly<Record<string, string>>,
  configs: Readonly<Record<string, string>> = {},
): Promise<EcosystemRun> {
  const { input, output, dir, stateDir, options, produce } = streamsSetup(proxy, name, guarantee, topicConfigs, configs);
  const counts = (n: number) => Object.fromEntries(Array.from({ length: KEYS }, (_, i) => [keyName(i), n]));
  const countedTo = (n: number) =>
    pollUntil(`every key counted ${n} times in ${output}`, 90_000, async () => {
      const latest = new Map<string, string | null>();
      for (const r of allRecords(await readToEnd(proxy.bootstrap, output))) latest.set(r.key ?? '', r.value);
      return latest.size === KEYS && [...latest.values()].every((v) => v === String(n)) ? true : undefined;
    });
  let app: RunningStreamsApp | undefined;
  try {
    await produce(0, KEYS * UPDATES_PER_KEY);
    app = startStreamsApp(options);
    const changelog = app.changelog;
    await countedTo(UPDATES_PER_KEY);
    // Past segment.ms, one more update of every key makes the first round's changelog records cleanable.
    await sleep(SEGMENT_MS + 200);
    await produce(KEYS * UPDATES_PER_KEY, KEYS);
    await countedTo(UPDATES_PER_KEY + 1);
    const passes = await cleanAll(proxy, [changelog]);
    await app.stop();
    app = undefined;
    fs.rmSync(stateDir, { recursive: true, force: true });
    app = startStreamsApp(options);
    const store = await app.waitFor('its store queried after the restore', isStore, 120_000);
    assert.deepEqual(store.counts, counts(UPDATES_PER_KEY + 1), 'the restored store');
    const replayed = app
      .events()
      .filter(isRestored)
      .filter((e) => e.topic === changelog)
      .reduce((n, e) => n + e.records, 0);
    // The survivors: each key's last count of the first round and its count of the second.
    assert.ok(replayed <= 2 * KEYS, `the restore replayed ${replayed} records, not the ${KEYS * (UPDATES_PER_KEY + 1)} of the history`);
    await produce(KEYS * (UPDATES_PER_KEY + 1), KEYS);
    await countedTo(UPDATES_PER_KEY + 2);
    return { passes, topics: [changelog, input, output], summary: `${passes.length} passes over the changelog; the restore replayed ${replayed} records` };
  } catch (e) {
    throw new Error(`${(e as Error).message}\nstreams stderr tail:\n${app?.stderrTail(30) ?? ''}`, { cause: e });
  } finally {
    await app?.stop();
    dir.remove();
  }
}
