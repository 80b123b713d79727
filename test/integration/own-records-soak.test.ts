/**
 * kcompact's own records never cost a client anything (docs/carrying.md, "The end of the log").
 * On a store that caps retention an idle carried partition gets a pass every carry age, each
 * pass appending kcompact's own records (pass markers, copies, a release record) at the end of
 * the log. Here the store (kfake) says it keeps the topic's records for 2 s, so kcompact carries
 * them every second, and a tail reader of every client of the bed, in every mode and isolation
 * level it has (share groups aside, for now), waits at the end through the passes: none may report an error, and no
 * librdkafka reader may grow its fetch size (it fails once that reaches its limit); each must
 * first have finished the bootstrap read "until the record at the latest offset minus one has
 * come", and then read the next record written, and only it. A reader started after the passes
 * finishes the same bootstrap read.
 *
 * KCOMPACT_SOAK_PASSES sets how many passes the readers wait through (100 by default).
 */
import assert from 'node:assert/strict';
import { after, before, test, type TestContext } from 'node:test';
import kafkajs from 'kafkajs';
import { startCompactingProxy, type RunningCompactingProxy } from '../support/kcompact.js';
import { pollUntil, requirePeers } from '../support/index.js';
import { startKfake, type RunningKfake } from '../support/kfake.js';
import { isEvent, startTail, tailCombinations, tailDriver, type TailReader } from '../support/tailing-readers.js';

const TOPIC = 'own-records-soak';
/** What the store says it keeps the topic's records for: kcompact carries at half of it. */
const STORE_RETENTION_MS = 2_000;
const PASSES = Number(process.env.KCOMPACT_SOAK_PASSES ?? 100);
const KEYS = 20;

let kfake: RunningKfake | undefined;
let proxy: RunningCompactingProxy | undefined;

const admin = (bootstrap: string) => new kafkajs.Kafka({ clientId: 'own-records-soak', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING });

async function passes(): Promise<number> {
  return (await proxy!.compaction.engine.status()).cleaner.carry?.passesTotal ?? 0;
}

async function produce(records: { key: string; value: string }[]): Promise<number> {
  const producer = admin(proxy!.bootstrap).producer();
  await producer.connect();
  try {
    const [meta] = await producer.send({ topic: TOPIC, messages: records.map((r) => ({ ...r, partition: 0 })) });
    return Number(meta!.baseOffset) + records.length - 1;
  } finally {
    await producer.disconnect();
  }
}

before(async (t) => {
  if (!requirePeers(t as unknown as TestContext)) return;
  kfake = await startKfake({ brokers: 1 });
  // Made on the store itself with a short retention, as a store that caps retention makes it;
  // kcompact compacts it by its own configuration (a store without admin APIs, or one that refuses the topic's configs).
  const a = admin(kfake.bootstrap).admin();
  await a.connect();
  await a.createTopics({ topics: [{ topic: TOPIC, numPartitions: 1, configEntries: [{ name: 'retention.ms', value: String(STORE_RETENTION_MS) }] }] });
  await a.disconnect();
  proxy = await startCompactingProxy(kfake.bootstrap, {
    carry: true,
    cleanerBackoffMs: 200,
    staticTopics: [{ topic: TOPIC, configs: { 'cleanup.policy': 'compact', 'delete.retention.ms': '100', 'segment.ms': '500' } }],
  });
});

after(async () => {
  await proxy?.stop();
  await kfake?.stop();
});

test('tail readers of every client wait through passes at the end without an error, then read the next record', { timeout: 900_000 }, async (t) => {
  if (!proxy) return t.skip('test peers not installed');
  const written: { key: string; value: string }[] = [];
  for (let round = 0; round < 3; round++) for (let k = 0; k < KEYS; k++) written.push({ key: `k${k}`, value: `v${round}-${k}` });
  written.push({ key: 'k0', value: null as unknown as string });
  await produce(written);
  await pollUntil('a first pass', 60_000, async () => ((await passes()) >= 2 ? true : undefined));

  // Share groups are not here yet: the share view still answers kcompact's records with empty
  // batches, on which librdkafka's share consumer grows its fetch size (docs/carrying.md, "Not yet").
  const readers: TailReader[] = tailCombinations()
    .filter(({ mode }) => mode !== 'share')
    .map(({ driver, mode, isolation }) =>
      startTail(driver, { bootstrap: proxy!.bootstrap, topic: TOPIC, mode, isolation, untilKey: 'next', timeoutMs: 600_000 }),
    );
  try {
    // The bootstrap read: every reader reaches the record before the latest offset it was told.
    await Promise.all(readers.map((r) => r.waitFor(isEvent('caughtUp'), 180_000)));
    const from = await passes();
    await pollUntil(`${PASSES} passes while the readers wait`, PASSES * 5_000 + 60_000, async () => ((await passes()) >= from + PASSES ? true : undefined));
    t.diagnostic(`${(await passes()) - from} passes with ${readers.length} readers waiting at the end`);

    // A reader started now finishes its bootstrap read too, whatever kcompact wrote last.
    const late = startTail(tailDriver('librdkafka'), { bootstrap: proxy!.bootstrap, topic: TOPIC, mode: 'assign', untilKey: 'next', timeoutMs: 120_000 });
    readers.push(late);
    const lateCaughtUp = await late.waitFor(isEvent('caughtUp'), 60_000);
    t.diagnostic(`a reader started after the passes caught up in ${lateCaughtUp.ms} ms`);

    const next = await produce([{ key: 'next', value: 'after the passes' }]);
    const done = await Promise.all(readers.map((r) => r.waitFor(isEvent('done'), 120_000)));
    for (const [i, r] of readers.entries()) {
      assert.equal(done[i]!.offset, next, `${r.label}: the record written after the passes`);
      assert.deepEqual(r.errors(), [], `${r.label}: no error`);
      assert.deepEqual(r.fetchGrew(), [], `${r.label}: no answer without a whole message`);
      const seen = r.records();
      const afterStart = seen.filter((e) => e.key === 'next');
      assert.equal(afterStart.length, 1, `${r.label}: the next record once`);
    }
  } finally {
    await Promise.all(readers.map((r) => r.stop()));
  }
});
