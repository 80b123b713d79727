/**
 * Kafka Streams 4.4 through kcompact in front of a store without compaction (Kafka 4.4 with its
 * cleaner off; KCOMPACT_ECOSYSTEM_UPSTREAMS=kafka,kfake adds kfake). A count-by-key app
 * (test/peers/java/src/StreamsKeyCount.java), at least once and exactly once, creates its store's
 * changelog through the proxy, compacted; many updates over few keys go through it, kcompact
 * cleans, and the app, restarted with its local state wiped, restores its store from the
 * compacted changelog: it replays only the survivors, not the history, and counts on correctly.
 *
 * With carrying on (docs/carrying.md), the clean is followed by a pass per partition that copies
 * the survivors forward and has the store let the old range go: the store's own log start moves
 * past the history, and the restore from offset 0 through the proxy is served from the copies.
 * On kfake the app's idempotent producers get random 63-bit producer ids, which the copies keep
 * exactly.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, test, type TestContext } from 'node:test';
import kafkajs from 'kafkajs';
import { startCompactingProxy, type RunningCompactingProxy } from '../support/kcompact.js';
import type { CarryOutcome } from '../../src/engine/api/engine-reports.js';
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
  type UpstreamKind,
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

function keyName(i: number): string {
  return `key-${String(i).padStart(6, '0')}`;
}

/** franzclient's generated records `start` to `start + count - 1`: record i has the key of i % KEYS. */
async function produceRound(bootstrap: string, topic: string, start: number, count: number): Promise<void> {
  const summary = await franzProduce(bootstrap, { topic, start, count, keys: KEYS, valueSize: 16 });
  assert.deepEqual(summary.errors, []);
}

/**
 * One record of every key but the one numbered `skipped`, from record `start` on (a multiple of
 * KEYS, so that record start + i has key i).
 */
async function produceRoundWithout(bootstrap: string, topic: string, start: number, skipped: number): Promise<void> {
  if (skipped > 0) await produceRound(bootstrap, topic, start, skipped);
  if (skipped < KEYS - 1) await produceRound(bootstrap, topic, start + skipped + 1, KEYS - skipped - 1);
}

/** Every key counted `count` times, but `behind` (when given) once less. */
function countsOf(count: number, behind?: string): Record<string, number> {
  return Object.fromEntries(Array.from({ length: KEYS }, (_, i) => [keyName(i), keyName(i) === behind ? count - 1 : count]));
}

/** Waits until the output topic's latest count of every key is the one `counts` gives. */
async function outputCounts(bootstrap: string, topic: string, counts: Record<string, number>): Promise<void> {
  await pollUntil(`every key counted in ${topic} as in ${JSON.stringify(counts)}`, 60_000, async () => {
    const latest = new Map<string, string | null>();
    for (const r of allRecords(await readToEnd(bootstrap, topic))) latest.set(r.key ?? '', r.value);
    return latest.size === KEYS && [...latest].every(([k, v]) => v === String(counts[k])) ? true : undefined;
  });
}

const isStore = (e: StreamsEvent): e is Extract<StreamsEvent, { event: 'store' }> => e.event === 'store';
const isRestored = (e: StreamsEvent): e is Extract<StreamsEvent, { event: 'restored' }> => e.event === 'restored';
const isRestoreStart = (e: StreamsEvent): e is Extract<StreamsEvent, { event: 'restore-start' }> => e.event === 'restore-start';

/**
 * Both guarantees: exactly_once_v2 writes the changelog in transactions (markers between the
 * records) and restores it with read_committed.
 */
const GUARANTEES = ['at_least_once', 'exactly_once_v2'] as const;
type Guarantee = (typeof GUARANTEES)[number];

async function restoreScenario(
  t: TestContext,
  upstream: UncompactedUpstream,
  proxy: RunningCompactingProxy,
  guarantee: Guarantee,
  carry: boolean,
): Promise<void> {
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
    // The second round leaves out one key that shares its partition, so that its latest count
    // stays in the cleaned part (carried, only a copy holds it), while the other keys' records
    // still roll every partition's virtual segment.
    const keysByPartition = Object.values((await readToEnd(proxy.bootstrap, input)).partitions).map(({ records }) =>
      [...new Set(records.map((r) => r.key ?? ''))].sort(),
    );
    const crowded = keysByPartition.reduce((a, b) => (b.length > a.length ? b : a));
    assert.ok(crowded.length > 1, `keys by partition: ${JSON.stringify(keysByPartition)}`);
    const behind = crowded[0]!;
    app = startStreamsApp(appOptions);
    const changelog = app.changelog;

    await t.test('the app counts, and its changelog is created compacted through the proxy', async () => {
      await outputCounts(proxy.bootstrap, output, countsOf(UPDATES_PER_KEY));
      const described = await topicConfig(proxy.bootstrap, changelog);
      assert.deepEqual([described['cleanup.policy'], described['segment.ms']], ['compact', String(SEGMENT_MS)]);
      const stored = await topicConfig(upstream.bootstrap, changelog);
      assert.deepEqual([stored['cleanup.policy'], stored['retention.ms'], stored['retention.bytes']], ['delete', '-1', '-1'], 'the store compacts nothing');
    });

    let survivors = 0;
    const changelogRecords = KEYS * (UPDATES_PER_KEY + 1) - 1;
    const passes: CarryOutcome[] = [];
    const cleanTitle = carry
      ? 'a clean leaves the latest count of each key in the changelog, and a pass lets the store drop the history'
      : 'a clean leaves the latest count of each key in the changelog';
    await t.test(cleanTitle, async () => {
      // Past segment.ms, the next round's changelog records start a new virtual segment in
      // every partition: the first round's become cleanable.
      await new Promise((r) => setTimeout(r, SEGMENT_MS + 200));
      await produceRoundWithout(proxy.bootstrap, input, KEYS * UPDATES_PER_KEY, Object.keys(countsOf(0)).indexOf(behind));
      await outputCounts(proxy.bootstrap, output, countsOf(UPDATES_PER_KEY + 1, behind));
      await pollUntil('the index caught up with the changelog', 30_000, async () => {
        const status = (await proxy.compaction.engine.status()).partitions.filter((p) => p.topic === changelog);
        // Offsets, not records: transaction markers take offsets too.
        const offsets = status.reduce((n, p) => n + p.highWatermark, 0);
        return status.length === PARTITIONS && offsets >= changelogRecords && status.every((p) => p.nextOffset === p.highWatermark) ? true : undefined;
      });
      // A pass lets the history go from the store: what it held must be read before.
      const before = carry ? (await readTopics(upstream.bootstrap, [changelog])).get(changelog)! : undefined;
      const report = await proxy.compaction.engine.compactNow(changelog);
      assert.deepEqual(report.failed, []);
      passes.push(...report.carried);
      const view = (await readTopics(proxy.bootstrap, [changelog])).get(changelog)!;
      const raw = before ?? (await readTopics(upstream.bootstrap, [changelog])).get(changelog)!;
      assert.equal(allRecords(raw).length, changelogRecords, 'the store holds every update');
      for (const [p, { records, endOffset }] of Object.entries(raw.partitions)) {
        const cleanedUpTo = proxy.compaction.engine.index.partition(changelog, Number(p))?.cleanedUpTo() ?? 0;
        // A pass's own records take offsets past the store's earlier end, hidden from the view.
        const seen = view.partitions[p]!.records.filter((r) => r.offset < endOffset);
        assert.ok(cleanedUpTo <= endOffset, `${changelog}-${p} cleaned up to ${cleanedUpTo}, past the store's end ${endOffset}`);
        t.diagnostic(`${changelog}-${p}: ${records.length} records upstream, ${seen.length} through kcompact, cleaned up to ${cleanedUpTo}`);
        assert.deepEqual(seen, compactedView(records, cleanedUpTo), `${changelog}-${p}`);
        survivors += seen.length;
      }
      // Each key's last count of the first round, and its count from the second round (the active segment).
      assert.equal(survivors, 2 * KEYS - 1);
      const behindLatest = allRecords(raw)
        .filter((r) => r.key === behind)
        .at(-1)!;
      const behindCleaned = proxy.compaction.engine.index.partition(changelog, behindLatest.partition)?.cleanedUpTo() ?? 0;
      assert.ok(behindLatest.offset < behindCleaned, `${behind}'s latest count, at ${behindLatest.offset}, is below the cleaned end ${behindCleaned}`);
      if (!carry) {
        assert.deepEqual(passes, [], 'nothing carried');
        return;
      }
      assert.deepEqual(
        passes.map((pass) => pass.partition).sort(),
        Array.from({ length: PARTITIONS }, (_, p) => p),
        'a pass per partition',
      );
      const storeStarts = await earliestOffsets(upstream.bootstrap, changelog);
      const topicStarts = await earliestOffsets(proxy.bootstrap, changelog);
      for (const pass of passes) {
        const where = `${changelog}-${pass.partition}`;
        t.diagnostic(`${where}: pass ${pass.pass} carried ${pass.copies} copies; the store starts at ${storeStarts.get(pass.partition)}`);
        assert.ok(pass.released, `${where}: the store let the carried range go`);
        assert.ok(pass.releaseEnd > 0, `${where}: released to ${pass.releaseEnd}`);
        assert.equal(storeStarts.get(pass.partition), pass.releaseEnd, `${where}: the store's log start`);
        assert.equal(topicStarts.get(pass.partition), 0, `${where}: EARLIEST through kcompact`);
      }
      const behindStoreStart = storeStarts.get(behindLatest.partition)!;
      assert.ok(
        behindLatest.offset < behindStoreStart,
        `${behind}'s latest count, at ${behindLatest.offset}, is below the store's log start ${behindStoreStart}`,
      );
    });

    await t.test('restarted without its local state, the app restores only the survivors, and counts on', async () => {
      await app!.stop();
      app = undefined;
      fs.rmSync(stateDir, { recursive: true, force: true });
      if (carry) {
        // Below the store's log start, only the copies hold the survivors the restore needs.
        const storeStarts = await earliestOffsets(upstream.bootstrap, changelog);
        for (const pass of passes)
          assert.ok(
            storeStarts.get(pass.partition)! >= pass.releaseEnd,
            `${changelog}-${pass.partition}: the store starts at ${storeStarts.get(pass.partition)}`,
          );
      }
      app = startStreamsApp(appOptions);
      const store = await app.waitFor('its store queried after the restore', isStore, 90_000);
      assert.deepEqual(store.counts, countsOf(UPDATES_PER_KEY + 1, behind));
      const restored = app
        .events()
        .filter(isRestored)
        .filter((e) => e.topic === changelog);
      const replayed = restored.reduce((n, e) => n + e.records, 0);
      const starts = app
        .events()
        .filter(isRestoreStart)
        .filter((e) => e.topic === changelog);
      t.diagnostic(`restored ${replayed} of ${changelogRecords} changelog records: ${JSON.stringify(starts)} ${JSON.stringify(restored)}`);
      // The wiped store restores every partition from the topic's start, which kcompact answers.
      assert.deepEqual(
        starts.map((e) => [e.partition, e.startOffset]).sort(),
        Array.from({ length: PARTITIONS }, (_, p) => [p, 0]),
        'every partition restored from offset 0',
      );
      assert.equal(replayed, survivors, 'the restore replayed the survivors only');
      await produceRound(proxy.bootstrap, input, KEYS * (UPDATES_PER_KEY + 1), KEYS);
      await outputCounts(proxy.bootstrap, output, countsOf(UPDATES_PER_KEY + 2, behind));
    });
  } finally {
    await app?.stop();
    dir.remove();
  }
}

interface Variant {
  kind: UpstreamKind;
  carry: boolean;
}
const variants = ecosystemUpstreams().flatMap((kind): Variant[] => [false, true].map((carry) => ({ kind, carry })));

// Each variant has an upstream and a proxy of its own, and most of a run waits on the app and
// the cleans, so the variants run side by side.
describe('Kafka Streams through kcompact', { concurrency: true }, () => {
  for (const { kind, carry } of variants) {
    const by = carry ? 'compacted and carried' : 'compacted';
    test(`Kafka Streams restores stores from changelogs ${by} by kcompact in front of ${kind}`, { timeout: 180_000 }, async (t: TestContext) => {
      if (!requirePeers(t)) return;
      const upstream = await startUncompactedUpstream(kind);
      const proxy = await startCompactingProxy(upstream.bootstrap, { carry });
      try {
        for (const guarantee of GUARANTEES) {
          await t.test(`processing.guarantee=${guarantee}`, (tg) => restoreScenario(tg, upstream, proxy, guarantee, carry));
        }
      } finally {
        await proxy.stop();
        await upstream.stop();
      }
    });
  }
});
