/**
 * Kafka Streams 4.4 through kcompact in front of a store without compaction (Kafka 4.4 with its
 * cleaner off; KCOMPACT_ECOSYSTEM_UPSTREAMS=kafka,kfake adds kfake). A count-by-key app
 * (test/peers/java/src/StreamsKeyCount.java), at least once and exactly once, creates its store's
 * changelog through the proxy, compacted; many updates over few keys go through it, kcompact
 * cleans, and the app, restarted with its local state wiped, restores its store from the
 * compacted changelog: it replays only the survivors, not the history, and counts on correctly.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import kafkajs from 'kafkajs';
import { startCompactingProxy, type RunningCompactingProxy } from '../support/kcompact.js';
import {
  allRecords,
  compactedView,
  ecosystemUpstreams,
  franzProduce,
  makeTempDir,
  pollUntil,
  readToEnd,
  readTopics,
  requirePeers,
  startStreamsApp,
  startUncompactedUpstream,
  type RunningStreamsApp,
  type StreamsEvent,
  type UncompactedUpstream,
} from '../support/index.js';

/**
 * The changelog's segment.ms, set through Streams (topic.segment.ms): virtual segments roll after
 * a second, so earlier updates become cleanable.
 */
const SEGMENT_MS = 1000;
const PARTITIONS = 2;
const KEYS = 6;
/** Records per key in the first round: each one a changelog record (the app's store cache is off). */
const UPDATES_PER_KEY = 100;

function adminOf(bootstrap: string) {
  return new kafkajs.Kafka({ clientId: 'streams-test', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING }).admin();
}

async function topicConfig(bootstrap: string, topic: string): Promise<Record<string, string>> {
  const admin = adminOf(bootstrap);
  await admin.connect();
  try {
    const answer = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: topic }] });
    return Object.fromEntries(answer.resources[0]!.configEntries.map((e) => [e.configName, e.configValue]));
  } finally {
    await admin.disconnect();
  }
}

function keyName(i: number): string {
  return `key-${String(i).padStart(6, '0')}`;
}

/** franzclient's generated records `start` to `start + count - 1`: record i has the key of i % KEYS. */
async function produceRound(bootstrap: string, topic: string, start: number, count: number): Promise<void> {
  const summary = await franzProduce(bootstrap, { topic, start, count, keys: KEYS, valueSize: 16 });
  assert.deepEqual(summary.errors, []);
}

/** Waits until the output topic's latest count of every key is `count`. */
async function outputCounts(bootstrap: string, topic: string, count: number): Promise<void> {
  await pollUntil(`every key counted ${count} in ${topic}`, 60_000, async () => {
    const latest = new Map<string, string | null>();
    for (const r of allRecords(await readToEnd(bootstrap, topic))) latest.set(r.key ?? '', r.value);
    return latest.size === KEYS && [...latest.values()].every((v) => v === String(count)) ? true : undefined;
  });
}

const isStore = (e: StreamsEvent): e is Extract<StreamsEvent, { event: 'store' }> => e.event === 'store';
const isRestored = (e: StreamsEvent): e is Extract<StreamsEvent, { event: 'restored' }> => e.event === 'restored';

/**
 * Both guarantees: exactly_once_v2 writes the changelog in transactions (markers between the
 * records) and restores it with read_committed.
 */
const GUARANTEES = ['at_least_once', 'exactly_once_v2'] as const;
type Guarantee = (typeof GUARANTEES)[number];

async function restoreScenario(t: TestContext, upstream: UncompactedUpstream, proxy: RunningCompactingProxy, guarantee: Guarantee): Promise<void> {
  const input = `${guarantee}-input`;
  const output = `${guarantee}-counts`;
  const dir = makeTempDir('kcompact-streams-');
  const stateDir = path.join(dir.path, 'state');
  const appOptions = {
    bootstrap: proxy.bootstrap,
    applicationId: `kcompact-key-count-${guarantee}`,
    input,
    output,
    stateDir,
    logDir: dir.path,
    configs: { 'topic.segment.ms': String(SEGMENT_MS), 'processing.guarantee': guarantee },
  };
  let app: RunningStreamsApp | undefined;
  try {
    const admin = adminOf(proxy.bootstrap);
    await admin.connect();
    await admin.createTopics({ waitForLeaders: true, topics: [input, output].map((topic) => ({ topic, numPartitions: PARTITIONS })) });
    await admin.disconnect();
    await produceRound(proxy.bootstrap, input, 0, KEYS * UPDATES_PER_KEY);
    app = startStreamsApp(appOptions);
    const changelog = app.changelog;

    await t.test('the app counts, and its changelog is created compacted through the proxy', async () => {
      await outputCounts(proxy.bootstrap, output, UPDATES_PER_KEY);
      const described = await topicConfig(proxy.bootstrap, changelog);
      assert.deepEqual([described['cleanup.policy'], described['segment.ms']], ['compact', String(SEGMENT_MS)]);
      const stored = await topicConfig(upstream.bootstrap, changelog);
      assert.deepEqual([stored['cleanup.policy'], stored['retention.ms'], stored['retention.bytes']], ['delete', '-1', '-1'], 'the store compacts nothing');
    });

    let survivors = 0;
    const changelogRecords = KEYS * (UPDATES_PER_KEY + 1);
    await t.test('a clean leaves the latest count of each key in the changelog', async () => {
      // Past segment.ms, the next round's changelog records start a new virtual segment in
      // every partition: the first round's become cleanable.
      await new Promise((r) => setTimeout(r, SEGMENT_MS + 200));
      await produceRound(proxy.bootstrap, input, KEYS * UPDATES_PER_KEY, KEYS);
      await outputCounts(proxy.bootstrap, output, UPDATES_PER_KEY + 1);
      await pollUntil('the index caught up with the changelog', 30_000, async () => {
        const status = (await proxy.compaction.engine.status()).partitions.filter((p) => p.topic === changelog);
        // Offsets, not records: transaction markers take offsets too.
        const offsets = status.reduce((n, p) => n + p.highWatermark, 0);
        return status.length === PARTITIONS && offsets >= changelogRecords && status.every((p) => p.nextOffset === p.highWatermark) ? true : undefined;
      });
      assert.deepEqual((await proxy.compaction.engine.compactNow(changelog)).failed, []);
      const view = (await readTopics(proxy.bootstrap, [changelog])).get(changelog)!;
      const raw = (await readTopics(upstream.bootstrap, [changelog])).get(changelog)!;
      assert.equal(allRecords(raw).length, changelogRecords, 'the store holds every update');
      for (const [p, { records }] of Object.entries(raw.partitions)) {
        const cleanedUpTo = proxy.compaction.engine.index.partition(changelog, Number(p))?.cleanedUpTo() ?? 0;
        const seen = view.partitions[p]!.records;
        t.diagnostic(`${changelog}-${p}: ${records.length} records upstream, ${seen.length} through kcompact, cleaned up to ${cleanedUpTo}`);
        assert.deepEqual(seen, compactedView(records, cleanedUpTo), `${changelog}-${p}`);
        survivors += seen.length;
      }
      // Each key's last count of the first round, and its count from the second round (the active segment).
      assert.equal(survivors, 2 * KEYS);
    });

    await t.test('restarted without its local state, the app restores only the survivors, and counts on', async () => {
      await app!.stop();
      app = undefined;
      fs.rmSync(stateDir, { recursive: true, force: true });
      app = startStreamsApp(appOptions);
      const store = await app.waitFor('its store queried after the restore', isStore, 90_000);
      assert.deepEqual(store.counts, Object.fromEntries(Array.from({ length: KEYS }, (_, i) => [keyName(i), UPDATES_PER_KEY + 1])));
      const restored = app
        .events()
        .filter(isRestored)
        .filter((e) => e.topic === changelog);
      const replayed = restored.reduce((n, e) => n + e.records, 0);
      t.diagnostic(`restored ${replayed} of ${changelogRecords} changelog records: ${JSON.stringify(restored)}`);
      assert.equal(replayed, survivors, 'the restore replayed the survivors only');
      await produceRound(proxy.bootstrap, input, KEYS * (UPDATES_PER_KEY + 1), KEYS);
      await outputCounts(proxy.bootstrap, output, UPDATES_PER_KEY + 2);
    });
  } finally {
    await app?.stop();
    dir.remove();
  }
}

for (const kind of ecosystemUpstreams()) {
  test(`Kafka Streams restores stores from changelogs compacted by kcompact in front of ${kind}`, { timeout: 180_000 }, async (t: TestContext) => {
    if (!requirePeers(t)) return;
    const upstream = await startUncompactedUpstream(kind);
    const proxy = await startCompactingProxy(upstream.bootstrap);
    try {
      for (const guarantee of GUARANTEES) {
        await t.test(`processing.guarantee=${guarantee}`, (tg) => restoreScenario(tg, upstream, proxy, guarantee));
      }
    } finally {
      await proxy.stop();
      await upstream.stop();
    }
  });
}
