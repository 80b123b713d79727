/**
 * Kafka Connect 4.4 in distributed mode through kcompact in front of a store without compaction
 * (Kafka 4.4 with its cleaner off; KCOMPACT_ECOSYSTEM_UPSTREAMS=kafka,kfake adds kfake). Connect
 * creates its config, offset and status topics through the proxy as compacted, and on a restart
 * checks them with DescribeConfigs (it refuses to start on anything but cleanup.policy=compact);
 * the upstream topics keep everything forever and are never compacted. A FileStream source
 * connector copies a file into a topic; the connector's config, its state and its source offsets
 * are updated several times, kcompact cleans, and a restarted worker resumes from the compacted
 * topics: the connector is back without being posted again, with its latest config, and it
 * copies only the lines added while it was down.
 *
 * With carrying on (docs/carrying.md), the clean is followed by a pass that copies the survivors
 * forward and has the store let the old range go: the store's own log start moves past history,
 * and the restarted worker, reading its topics from offset 0 through the proxy, is served from
 * the copies. Each upstream runs both, without carrying and with it.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import kafkajs from 'kafkajs';
import {
  allRecords,
  compactedView,
  ecosystemUpstreams,
  makeTempDir,
  pollUntil,
  readToEnd,
  readTopics,
  requirePeers,
  startConnectWorker,
  startUncompactedUpstream,
  type RunningConnectWorker,
  type TopicContents,
  type UpstreamKind,
} from '../support/index.js';
import type { CarryOutcome } from '../../src/engine/api/engine-reports.js';
import { startCompactingProxy } from '../support/kcompact.js';

/**
 * segment.ms of the internal topics, set through the worker (config.storage.segment.ms, ...):
 * virtual segments roll after a second, so earlier updates become cleanable.
 */
const SEGMENT_MS = 1000;
const CONNECTOR = 'file-source';
/** Kafka's FileStreamSourceConnector with a version() that runs on 4.4 (test/peers/java/src/FileStreamSourceShim.java). */
const CONNECTOR_CLASS = 'FileStreamSourceShim';
const LINES_TOPIC = 'file-lines';
/** What Connect logs when it cannot trust an internal topic to be compacted. */
const NOT_COMPACTED = /is required to have 'cleanup\.policy=compact'|Unable to use admin client to verify the cleanup policy/;

function adminOf(bootstrap: string) {
  return new kafkajs.Kafka({ clientId: 'connect-test', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING }).admin();
}

/** ListOffsets EARLIEST of every partition of `topic`, as `bootstrap` answers it. */
async function earliestOffsets(bootstrap: string, topic: string): Promise<Map<number, number>> {
  const admin = adminOf(bootstrap);
  await admin.connect();
  try {
    return new Map((await admin.fetchTopicOffsets(topic)).map((p) => [p.partition, Number(p.low)]));
  } finally {
    await admin.disconnect();
  }
}

async function topicConfigs(bootstrap: string, topics: string[]): Promise<Map<string, Record<string, string>>> {
  const admin = adminOf(bootstrap);
  await admin.connect();
  try {
    const answer = await admin.describeConfigs({
      includeSynonyms: false,
      resources: topics.map((name) => ({ type: kafkajs.ConfigResourceTypes.TOPIC, name })),
    });
    return new Map(answer.resources.map((r) => [r.resourceName, Object.fromEntries(r.configEntries.map((e) => [e.configName, e.configValue]))]));
  } finally {
    await admin.disconnect();
  }
}

function appendLines(file: string, from: number, to: number): string[] {
  const lines = Array.from({ length: to - from + 1 }, (_, i) => `line ${from + i}`);
  fs.appendFileSync(file, lines.map((l) => `${l}\n`).join(''));
  return lines;
}

async function linesThroughProxy(bootstrap: string, count: number): Promise<string[]> {
  return pollUntil(`${count} lines in ${LINES_TOPIC}`, 60_000, async () => {
    const values = allRecords(await readToEnd(bootstrap, LINES_TOPIC)).map((r) => r.value ?? '');
    return values.length >= count ? values : undefined;
  });
}

async function connectorState(worker: RunningConnectWorker, state: 'RUNNING' | 'PAUSED'): Promise<void> {
  await pollUntil(`connector ${CONNECTOR} and its task ${state}`, 60_000, async () => {
    const res = await worker.request<{ connector: { state: string }; tasks: { state: string }[] }>('GET', `/connectors/${CONNECTOR}/status`);
    if (res.status !== 200) return undefined;
    return res.body.connector.state === state && res.body.tasks.length === 1 && res.body.tasks[0]!.state === state ? true : undefined;
  });
}

/**
 * Every pass let the store drop its range: the store's own log start (asked of the store) is the
 * pass's release end, while through the proxy the topic still starts at 0. Every partition the
 * clean reached into (`cleaned`) is carried, so the restarted worker's connector config, source
 * offsets and statuses all come from copies.
 */
async function assertHistoryLetGo(store: string, proxy: string, passes: readonly CarryOutcome[], cleaned: readonly string[], t: TestContext): Promise<void> {
  assert.ok(passes.length > 0, 'the clean was followed by passes');
  for (const pass of passes) {
    const where = `${pass.topic}-${pass.partition}`;
    assert.ok(pass.released, `${where}: the store let the carried range go`);
    assert.ok(pass.releaseEnd > 0 && pass.copies > 0, `${where}: released to ${pass.releaseEnd}, ${pass.copies} copies`);
    const storeStart = (await earliestOffsets(store, pass.topic)).get(pass.partition);
    const topicStart = (await earliestOffsets(proxy, pass.topic)).get(pass.partition);
    t.diagnostic(`${where}: pass ${pass.pass} carried ${pass.copies} copies; the store starts at ${storeStart}, the topic through kcompact at ${topicStart}`);
    assert.equal(storeStart, pass.releaseEnd, `${where}: the store's log start`);
    assert.equal(topicStart, 0, `${where}: EARLIEST through kcompact`);
  }
  assert.deepEqual(passes.map((p) => `${p.topic}-${p.partition}`).sort(), [...cleaned].sort(), 'every cleaned partition was carried');
}

async function ok<T>(worker: RunningConnectWorker, method: string, urlPath: string, body?: unknown): Promise<T> {
  const res = await worker.request<T>(method, urlPath, body);
  assert.ok(res.status >= 200 && res.status < 300, `${method} ${urlPath}: HTTP ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

interface Variant {
  kind: UpstreamKind;
  carry: boolean;
}
const variants = ecosystemUpstreams().flatMap((kind): Variant[] => [false, true].map((carry) => ({ kind, carry })));

// Each variant has an upstream and a proxy of its own, and most of a run waits on the app and
// the cleans, so the variants run side by side.
describe('Kafka Connect through kcompact', { concurrency: true }, () => {
  for (const { kind, carry } of variants) {
    const carrying = carry ? ', carrying,' : '';
    test(`Kafka Connect (distributed) through kcompact${carrying} in front of ${kind} without compaction`, { timeout: 180_000 }, async (t: TestContext) => {
      if (!requirePeers(t)) return;
      const upstream = await startUncompactedUpstream(kind);
      const proxy = await startCompactingProxy(upstream.bootstrap, { carry });
      const dir = makeTempDir('kcompact-connect-');
      const file = path.join(dir.path, 'source.txt');
      const workerOptions = {
        bootstrap: proxy.bootstrap,
        dir: dir.path,
        groupId: 'kcompact-connect',
        properties: {
          'offset.storage.partitions': 3,
          'status.storage.partitions': 2,
          // Source offsets are committed often, so the offsets topic gets several updates per key.
          'offset.flush.interval.ms': 500,
          'config.storage.segment.ms': SEGMENT_MS,
          'offset.storage.segment.ms': SEGMENT_MS,
          'status.storage.segment.ms': SEGMENT_MS,
          // Only the test's own clean cleans: a round of the proxy's (a carrier's first one starts
          // as soon as the group assigns it the new topics) would carry and let go of what the
          // test reads from the store before its clean. No dirty ratio is above 1.
          'config.storage.min.cleanable.dirty.ratio': 1,
          'offset.storage.min.cleanable.dirty.ratio': 1,
          'status.storage.min.cleanable.dirty.ratio': 1,
        },
      };
      let worker: RunningConnectWorker | undefined;
      /** The passes of the clean, and where each let the store's log start move to. */
      const passes: CarryOutcome[] = [];
      try {
        const admin = adminOf(proxy.bootstrap);
        await admin.connect();
        await admin.createTopics({ waitForLeaders: true, topics: [{ topic: LINES_TOPIC, numPartitions: 1 }] });
        await admin.disconnect();
        const copied = appendLines(file, 1, 20);
        worker = await startConnectWorker(workerOptions);
        const internal = worker.topics;
        const internalTopics = [internal.configs, internal.offsets, internal.status];

        await t.test('the worker creates its internal topics compacted through the proxy, and its own check passes', async () => {
          const viaProxy = await topicConfigs(proxy.bootstrap, internalTopics);
          const stored = await topicConfigs(upstream.bootstrap, internalTopics);
          for (const topic of internalTopics) {
            assert.deepEqual(
              [viaProxy.get(topic)?.['cleanup.policy'], viaProxy.get(topic)?.['segment.ms']],
              ['compact', String(SEGMENT_MS)],
              `${topic} through the proxy`,
            );
            // The store keeps every record forever and compacts nothing: the proxy does.
            assert.deepEqual(
              [stored.get(topic)?.['cleanup.policy'], stored.get(topic)?.['retention.ms'], stored.get(topic)?.['retention.bytes']],
              ['delete', '-1', '-1'],
              `${topic} upstream`,
            );
          }
          const log = worker!.log();
          for (const topic of internalTopics) assert.match(log, new RegExp(`Created topic \\(name=${topic},.*configs=\\{[^}]*cleanup\\.policy=compact`), topic);
          assert.doesNotMatch(log, NOT_COMPACTED);
          const root = await ok<{ version: string }>(worker!, 'GET', '/');
          assert.equal(root.version, '4.4.0');
        });

        await t.test('a FileStream source connector copies the file into a topic', async () => {
          await ok(worker!, 'POST', '/connectors', {
            name: CONNECTOR,
            config: { 'connector.class': CONNECTOR_CLASS, 'tasks.max': '1', file, topic: LINES_TOPIC },
          });
          await connectorState(worker!, 'RUNNING');
          assert.deepEqual(await linesThroughProxy(proxy.bootstrap, copied.length), copied);
        });

        /** Config, target state, statuses and source offsets all get new values for the same keys. */
        const updateRound = async (batchSize: number, from: number, to: number) => {
          await ok(worker!, 'PUT', `/connectors/${CONNECTOR}/config`, {
            'connector.class': CONNECTOR_CLASS,
            'tasks.max': '1',
            file,
            topic: LINES_TOPIC,
            'batch.size': String(batchSize),
          });
          await connectorState(worker!, 'RUNNING');
          copied.push(...appendLines(file, from, to));
          assert.deepEqual(await linesThroughProxy(proxy.bootstrap, copied.length), copied);
          await ok(worker!, 'PUT', `/connectors/${CONNECTOR}/pause`);
          await connectorState(worker!, 'PAUSED');
          await ok(worker!, 'PUT', `/connectors/${CONNECTOR}/resume`);
          await connectorState(worker!, 'RUNNING');
        };

        const cleanTitle = carry
          ? 'after updates of every key a clean leaves the latest record of each, and a pass lets the store drop the history'
          : 'after updates of every key a clean leaves the latest record of each, and the store keeps them all';
        await t.test(cleanTitle, async () => {
          await updateRound(100, 21, 30);
          // Past segment.ms, the next round's records start a new virtual segment: this round's become cleanable.
          await new Promise((r) => setTimeout(r, SEGMENT_MS + 200));
          await updateRound(200, 31, 40);
          // Offsets are flushed on a timer: wait for the last lines' position to be stored.
          await pollUntil('the source offset of line 40 stored', 30_000, async () => {
            const offsets = allRecords(await readToEnd(upstream.bootstrap, internal.offsets));
            const position = fs.statSync(file).size;
            return offsets.some((r) => r.value === `{"position":${position}}`) ? true : undefined;
          });
          // One more pause and resume past segment.ms opens a new virtual segment of the configs
          // and status topics, so that the latest connector config is cleanable: carried, it is
          // then only in a copy, however quickly the round went.
          await new Promise((r) => setTimeout(r, SEGMENT_MS + 200));
          await ok(worker!, 'PUT', `/connectors/${CONNECTOR}/pause`);
          await connectorState(worker!, 'PAUSED');
          await ok(worker!, 'PUT', `/connectors/${CONNECTOR}/resume`);
          await connectorState(worker!, 'RUNNING');
          await pollUntil('the index caught up with the internal topics', 30_000, async () => {
            const status = (await proxy.compaction.engine.status()).partitions.filter((p) => internalTopics.includes(p.topic));
            const partitions = 1 + 3 + 2;
            return status.length === partitions && status.every((p) => p.nextOffset === p.highWatermark) ? true : undefined;
          });
          // A pass lets the history go from the store: what it held must be read before.
          const before = carry ? await readTopics(upstream.bootstrap, internalTopics) : undefined;
          for (const topic of internalTopics) {
            const report = await proxy.compaction.engine.compactNow(topic);
            assert.deepEqual(report.failed, [], topic);
            passes.push(...report.carried);
          }
          const view = await readTopics(proxy.bootstrap, internalTopics);
          const raw = before ?? (await readTopics(upstream.bootstrap, internalTopics));
          let removed = 0;
          const cleaned: string[] = [];
          for (const topic of internalTopics) {
            for (const [p, { records: viewed, endOffset }] of Object.entries(view.get(topic)!.partitions)) {
              // The worker may have written more between the two reads; a pass's own records take
              // offsets past the store's earlier end.
              const end = Math.min(endOffset, raw.get(topic)!.partitions[p]!.endOffset);
              const records = raw.get(topic)!.partitions[p]!.records.filter((r) => r.offset < end);
              const seen = viewed.filter((r) => r.offset < end);
              const cleanedUpTo = proxy.compaction.engine.index.partition(topic, Number(p))?.cleanedUpTo() ?? 0;
              t.diagnostic(`${topic}-${p}: ${records.length} records upstream, ${seen.length} through kcompact, cleaned up to ${cleanedUpTo}`);
              // Past the store's earlier end the expected view would not know the later records.
              if (carry) assert.ok(cleanedUpTo <= end, `${topic}-${p} cleaned up to ${cleanedUpTo}, past the ${end} records read before`);
              assert.deepEqual(seen, compactedView(records, cleanedUpTo), `${topic}-${p}`);
              removed += records.length - seen.length;
              if (cleanedUpTo > 0) cleaned.push(`${topic}-${p}`);
            }
          }
          assert.ok(removed > 10, `${removed} superseded records hidden`);
          const connectorConfigs = (of: Map<string, TopicContents>) => allRecords(of.get(internal.configs)!).filter((r) => r.key === `connector-${CONNECTOR}`);
          assert.equal(connectorConfigs(raw).length, 3, 'the store holds every connector config written');
          if (carry) await assertHistoryLetGo(upstream.bootstrap, proxy.bootstrap, passes, cleaned, t);
          else assert.deepEqual(passes, [], 'nothing carried');
          const left = connectorConfigs(view);
          assert.ok(left.length < 3, `${left.length} connector configs left in the view`);
          assert.match(left.at(-1)!.value!, /"batch.size":"200"/, 'the latest one among them');
          if (carry) {
            const storeStart = passes.find((p) => p.topic === internal.configs)!.releaseEnd;
            assert.ok(left.at(-1)!.offset < storeStart, `the latest connector config, at ${left.at(-1)!.offset}, is below the store's log start ${storeStart}`);
          }
        });

        await t.test('a restarted worker checks its topics, and resumes from the compacted configs and offsets', async () => {
          const earlierLog = worker!.log().length;
          await worker!.stop();
          worker = undefined;
          if (carry) {
            // The restarted worker reads from offset 0: below the store's log start, only the copies hold the survivors.
            for (const pass of passes) {
              const storeStart = (await earliestOffsets(upstream.bootstrap, pass.topic)).get(pass.partition)!;
              assert.ok(storeStart >= pass.releaseEnd, `${pass.topic}-${pass.partition}: the store starts at ${storeStart}`);
            }
          }
          copied.push(...appendLines(file, 41, 50));
          worker = await startConnectWorker(workerOptions);
          // Connect checks the cleanup.policy of internal topics that already exist, and stops if it is not exactly compact.
          const log = worker.log().slice(earlierLog);
          for (const topic of internalTopics) assert.ok(log.includes(`Found cleanup.policy=compact for topic '${topic}'`), `Connect checked ${topic}:\n${log}`);
          assert.doesNotMatch(log, NOT_COMPACTED);
          assert.deepEqual(await ok<string[]>(worker, 'GET', '/connectors'), [CONNECTOR], 'the connector is back without being posted again');
          const config = await ok<Record<string, string>>(worker, 'GET', `/connectors/${CONNECTOR}/config`);
          assert.equal(config['batch.size'], '200', 'with its latest config');
          await connectorState(worker, 'RUNNING');
          // Exactly once each, in order: the restarted task started at the stored position.
          assert.deepEqual(await linesThroughProxy(proxy.bootstrap, copied.length), copied);
        });
      } finally {
        await worker?.stop();
        await proxy.stop();
        await upstream.stop();
        dir.remove();
      }
    });
  }
});
