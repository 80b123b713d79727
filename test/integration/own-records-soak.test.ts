/**
 * kcompact's own records never cost a client anything (docs/carrying.md, "The end of the log").
 * On a store that caps retention an idle carried partition gets a pass every carry age, each
 * pass appending kcompact's own records (pass markers, copies, a release record) at the end of
 * the log. Here the store says it keeps the topic's records for 2 s, so kcompact carries them
 * every second, and a tail reader of every client of the bed, in every mode and isolation level
 * it has, waits at the end through the passes: none may report an error, and no librdkafka
 * reader may grow its fetch size (it fails once that reaches its limit); each must first have
 * finished the bootstrap read "until the record at the latest offset minus one has come", and
 * then read the next record written, and only it. A reader started after the passes finishes
 * the same bootstrap read. Share groups must also have every offset of the passes' records
 * settled between passes, as on Kafka, whose broker never acquires what its cleaner removed.
 *
 * Readers in a share group read through Kafka 4.4, the store the bed's share consumers are
 * tried against (tailing-readers.test.ts); the others through kfake, an independent Kafka.
 *
 * KCOMPACT_SOAK_PASSES sets how many passes the readers wait through (40 by default, which keeps `make test`
 * within its budget; `make soak` runs 1,000).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import kafkajs from 'kafkajs';
import { ApiKey } from '../../src/protocol/messages.js';
import { startCompactingProxy, type RunningCompactingProxy } from '../support/kcompact.js';
import { pollUntil, requirePeers, startKafka, type RunningKafka } from '../support/index.js';
import { startKfake, type RunningKfake } from '../support/kfake.js';
import { askOnce } from '../support/raw-client.js';
import { isEvent, startTail, tailCombinations, tailDriver, type TailMode, type TailReader } from '../support/tailing-readers.js';

const TOPIC = 'own-records-soak';
/** What the store says it keeps the topic's records for: kcompact carries at half of it. */
const STORE_RETENTION_MS = 2_000;
const PASSES = Number(process.env.KCOMPACT_SOAK_PASSES ?? 40);
const KEYS = 20;

let kfake: RunningKfake | undefined;
let kafka: RunningKafka | undefined;
/** The proxy in front of kfake, and the one in front of Kafka 4.4, for share groups. */
let proxy: RunningCompactingProxy | undefined;
let shareProxy: RunningCompactingProxy | undefined;

const client = (bootstrap: string) => new kafkajs.Kafka({ clientId: 'own-records-soak', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING });

async function passes(p: RunningCompactingProxy): Promise<number> {
  return (await p.compaction.engine.status()).cleaner.carry?.passesTotal ?? 0;
}

async function produce(p: RunningCompactingProxy, records: { key: string; value: string }[]): Promise<number> {
  const producer = client(p.bootstrap).producer();
  await producer.connect();
  try {
    const [meta] = await producer.send({ topic: TOPIC, messages: records.map((r) => ({ ...r, partition: 0 })) });
    return Number(meta!.baseOffset) + records.length - 1;
  } finally {
    await producer.disconnect();
  }
}

/**
 * A proxy carrying the topic, made on the store itself with a short retention, as a store that
 * caps retention makes it; kcompact compacts it by its own configuration (a store without admin
 * APIs, or one that refuses the topic's configs).
 */
async function carrying(store: string): Promise<RunningCompactingProxy> {
  const a = client(store).admin();
  await a.connect();
  await a.createTopics({ topics: [{ topic: TOPIC, numPartitions: 1, configEntries: [{ name: 'retention.ms', value: String(STORE_RETENTION_MS) }] }] });
  await a.disconnect();
  return startCompactingProxy(store, {
    carry: true,
    cleanerBackoffMs: 200,
    staticTopics: [{ topic: TOPIC, configs: { 'cleanup.policy': 'compact', 'delete.retention.ms': '100', 'segment.ms': '500' } }],
  });
}

/** Each share group's lag on the store (DescribeShareGroupOffsets v1): the offsets past its start offset it has not settled. */
async function shareLags(store: string, groups: readonly string[]): Promise<Map<string, number>> {
  const res = await askOnce(store, ApiKey.DescribeShareGroupOffsets, 1, {
    groups: groups.map((groupId) => ({ groupId, topics: [{ topicName: TOPIC, partitions: [0] }] })),
  });
  const lags = new Map<string, number>();
  for (const g of res.groups as { groupId: string; topics: { partitions: { lag: bigint }[] }[] }[])
    lags.set(g.groupId, Number(g.topics[0]?.partitions[0]?.lag ?? -1n));
  return lags;
}

const skip = requirePeers();

before(async () => {
  if (skip) return;
  [kfake, kafka] = await Promise.all([startKfake({ brokers: 1 }), startKafka({ compaction: 'off' })]);
  [proxy, shareProxy] = await Promise.all([carrying(kfake.bootstrap), carrying(kafka.bootstrap)]);
});

after(async () => {
  await Promise.all([proxy?.stop(), shareProxy?.stop()]);
  await Promise.all([kfake?.stop(), kafka?.stop()]);
});

test(
  'tail readers of every client wait through passes at the end without an error, then read the next record',
  { skip, timeout: PASSES * 5_000 + 400_000 },
  async (t) => {
    assert.ok(proxy && shareProxy, 'the proxies the before hook started');
    const proxies = [proxy, shareProxy];
    const proxyFor = (mode: TailMode) => (mode === 'share' ? shareProxy! : proxy!);
    const written: { key: string; value: string }[] = [];
    for (let round = 0; round < 3; round++) for (let k = 0; k < KEYS; k++) written.push({ key: `k${k}`, value: `v${round}-${k}` });
    written.push({ key: 'k0', value: null as unknown as string });
    await Promise.all(proxies.map((p) => produce(p, written)));
    await Promise.all(proxies.map((p) => pollUntil('a first pass', 60_000, async () => ((await passes(p)) >= 2 ? true : undefined))));

    const readers: TailReader[] = tailCombinations().map(({ driver, mode, isolation }) =>
      startTail(driver, { bootstrap: proxyFor(mode).bootstrap, topic: TOPIC, mode, isolation, untilKey: 'next', timeoutMs: PASSES * 5_000 + 300_000 }),
    );
    const shareGroups = readers.flatMap((r) => (r.options.mode === 'share' && r.options.group ? [r.options.group] : []));
    try {
      // The bootstrap read: every reader reaches the record before the latest offset it was told.
      await Promise.all(readers.map((r) => r.waitFor(isEvent('caughtUp'), 180_000)));
      const from = await Promise.all(proxies.map(passes));
      await Promise.all(
        proxies.map((p, i) =>
          pollUntil(`${PASSES} passes while the readers wait`, PASSES * 5_000 + 60_000, async () =>
            (await passes(p)) >= from[i]! + PASSES ? true : undefined,
          ),
        ),
      );
      const done = await Promise.all(proxies.map(passes));
      t.diagnostic(`${done[0]! - from[0]!} passes (kfake) and ${done[1]! - from[1]!} (Kafka 4.4) with ${readers.length} readers waiting at the end`);

      // What the passes wrote is settled for every share group: nothing of it is left acquired or
      // to be delivered again (between passes, as one may be under way).
      const settled = await pollUntil('every share group settled between passes', 30_000, async () => {
        const lags = await shareLags(kafka!.bootstrap, shareGroups);
        return shareGroups.every((g) => lags.get(g) === 0) ? lags : undefined;
      }).catch(async (err: unknown) => {
        throw new Error(`${(err as Error).message}: lags ${JSON.stringify([...(await shareLags(kafka!.bootstrap, shareGroups))])}`);
      });
      t.diagnostic(`share groups' lags: ${[...settled.values()].join(', ')}`);

      // A reader started now finishes its bootstrap read too, whatever kcompact wrote last.
      const late = startTail(tailDriver('librdkafka'), { bootstrap: proxy.bootstrap, topic: TOPIC, mode: 'assign', untilKey: 'next', timeoutMs: 120_000 });
      readers.push(late);
      const lateCaughtUp = await late.waitFor(isEvent('caughtUp'), 60_000);
      t.diagnostic(`a reader started after the passes caught up in ${lateCaughtUp.ms} ms`);

      const next = new Map(await Promise.all(proxies.map(async (p) => [p, await produce(p, [{ key: 'next', value: 'after the passes' }])] as const)));
      const ended = await Promise.all(readers.map((r) => r.waitFor(isEvent('done'), 120_000)));
      for (const [i, r] of readers.entries()) {
        assert.equal(ended[i]!.offset, next.get(proxyFor(r.options.mode)), `${r.label}: the record written after the passes`);
        assert.deepEqual(r.errors(), [], `${r.label}: no error`);
        assert.deepEqual(r.fetchGrew(), [], `${r.label}: no answer without a whole message`);
        const seen = r.records();
        const afterStart = seen.filter((e) => e.key === 'next');
        assert.equal(afterStart.length, 1, `${r.label}: the next record once`);
      }
    } finally {
      await Promise.all(readers.map((r) => r.stop()));
    }
  },
);
