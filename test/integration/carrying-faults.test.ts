/**
 * SIGKILL during carry passes (docs/carrying.md): a carrying `kcompact proxy` process in
 * front of Kafka 4.4 (cleaner off) is asked to clean and carry a partition of many keys, and is
 * killed again and again, with updates written between the kills: in turn the moment its first
 * records reach the store, at a seeded random moment while the pass writes its copies or reads
 * them back (after the first pass, copies of the last pass's copies: a re-carry), and the moment
 * the store has let the carried range go (DeleteRecords done). After every restart on the same data directory, Java's consumer reading from offset
 * 0 through it sees, whatever the pass had done: the latest record of every key at the offset it
 * was written at; every offset once; only records that were written (no carried copy or marker at
 * its own offset). At the end a pass runs whole, the store lets the old range go, and a replica
 * starting on an empty data directory serves the same.
 *
 * KCOMPACT_FAULT_SEED sets the seed (printed, so a failure replays).
 */
import assert from 'node:assert/strict';
import path from 'node:path';
import { test } from 'node:test';
import kafkajs from 'kafkajs';
import { seededRng } from '../unit/protocol/sample-body.js';
import { freePort, makeTempDir, pollUntil, requirePeers, startKafka } from '../support/index.js';
import { freePortRun } from '../support/kcompact.js';
import { carrierArgs, startCliProxy, waitCarrying, type CliProxy } from '../support/kcompact-cli.js';
import { readToEnd, type TopicRecord } from '../support/read-to-end.js';

const TOPIC = 'carried-faults';
const KEYS = 20_000;
const KILLS = 6;
const STATIC_TOPICS = JSON.stringify([{ topic: TOPIC, configs: { 'cleanup.policy': 'compact', 'segment.ms': '100', 'min.cleanable.dirty.ratio': '0.01' } }]);
const seed = Number(process.env.KCOMPACT_FAULT_SEED ?? Date.now() % 1_000_000);

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Writes one update of every key straight to the store; returns the records as written. */
async function writeRound(producer: kafkajs.Producer, round: number): Promise<TopicRecord[]> {
  const written: TopicRecord[] = [];
  for (let from = 0; from < KEYS; from += 500) {
    const messages = Array.from({ length: Math.min(500, KEYS - from) }, (_, i) => ({
      key: `key-${from + i}`,
      value: `value-${from + i}-round-${round}`.padEnd(100, '.'),
    }));
    const [meta] = await producer.send({ topic: TOPIC, acks: -1, messages });
    messages.forEach((m, i) => written.push({ offset: Number(meta!.baseOffset) + i, timestamp: 0, key: m.key, value: m.value }));
  }
  // One more record after segment.ms, so that the virtual segment holding the round rolls.
  await pause(200);
  const [meta] = await producer.send({ topic: TOPIC, acks: -1, messages: [{ key: 'roll', value: `roll-${round}` }] });
  written.push({ offset: Number(meta!.baseOffset), timestamp: 0, key: 'roll', value: `roll-${round}` });
  return written;
}

/** What a reader from offset 0 must see of what was written, whatever was cleaned and carried. */
async function assertView(proxy: CliProxy, written: readonly TopicRecord[], when: string): Promise<TopicRecord[]> {
  const seen = ((await readToEnd(proxy.bootstrap, TOPIC, { timeoutMs: 60_000 })).partitions['0']?.records ?? []).map((r) => ({ ...r, timestamp: 0 }));
  const byOffset = new Map(written.map((r) => [r.offset, r]));
  let previous = -1;
  for (const r of seen) {
    assert.ok(r.offset > previous, `${when}: offset ${r.offset} after ${previous}: every offset once, in order`);
    previous = r.offset;
    assert.deepEqual(r, byOffset.get(r.offset), `${when}: offset ${r.offset} holds a record that was written there (no copy or marker shows)`);
  }
  const latest = new Map<string, TopicRecord>();
  for (const r of written) latest.set(r.key!, r);
  const visible = new Set(seen.map((r) => r.offset));
  const missing = [...latest.values()].filter((r) => !visible.has(r.offset));
  assert.deepEqual(missing.slice(0, 5), [], `${when}: the latest record of every key is there (${missing.length} missing)`);
  return seen;
}

test('SIGKILL during carry passes: every key keeps its latest record at its offset, nothing twice, no copy shows', { timeout: 600_000 }, async (t) => {
  if (!requirePeers(t)) return;
  t.diagnostic(`seed ${seed} (KCOMPACT_FAULT_SEED=${seed} replays this run)`);
  const random = seededRng(seed);
  const kafka = await startKafka({ compaction: 'off' });
  const data = makeTempDir('kcompact-carrying-faults-');
  const port = await freePortRun(5);
  const managementPort = await freePort();
  const args = ['--topics', STATIC_TOPICS, '--cleaner-backoff-ms', '3600000'];
  // Each start of the carrier is a group of its own: it carries at once, not after the killed one's session times out.
  const startProxy = async (dir: string, carry: boolean, fixed: boolean) => {
    const started = await startCliProxy({
      upstream: kafka.bootstrap,
      dataDir: path.join(data.path, dir),
      args: [...args, ...(carry ? carrierArgs() : [])],
      ...(fixed ? { port, managementPort } : {}),
    });
    if (carry) await waitCarrying(started, 1);
    return started;
  };
  const store = new kafkajs.Kafka({ clientId: 'carrying-faults', brokers: [kafka.bootstrap], logLevel: kafkajs.logLevel.NOTHING });
  const admin = store.admin();
  const producer = store.producer();
  let proxy: CliProxy | undefined;
  let fresh: CliProxy | undefined;
  try {
    await Promise.all([admin.connect(), producer.connect()]);
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic: TOPIC, numPartitions: 1 }] });
    const written: TopicRecord[] = [];
    for (let round = 0; round < 3; round++) written.push(...(await writeRound(producer, round)));
    proxy = await startProxy('carrier', true, true);

    for (let kill = 1; kill <= KILLS; kill++) {
      const phase = (['begun', 'copying', 'released'] as const)[(kill - 1) % 3]!;
      const [before] = await admin.fetchTopicOffsets(TOPIC);
      void proxy.http(`/compact?topic=${TOPIC}`, 'POST').catch(() => undefined);
      const lastWritten = written.at(-1)!.offset;
      await pollUntil('the pass to begin', 60_000, async () => {
        const [at] = await admin.fetchTopicOffsets(TOPIC);
        return Number(at!.high) > lastWritten + 1 ? true : undefined;
      });
      if (phase === 'copying') {
        // Within the time the copies of a pass this size take to write and read back.
        await pause(Math.floor(random() * 250));
      } else if (phase === 'released') {
        await pollUntil('the store to let the carried range go', 60_000, async () => {
          const [at] = await admin.fetchTopicOffsets(TOPIC);
          return at!.low !== before!.low ? true : undefined;
        });
      }
      process.kill(-proxy.pid, 'SIGKILL');
      assert.equal((await proxy.waitExit(10_000)).signal, 'SIGKILL');
      await proxy.stop();
      // Offsets past the last record written are carry records: copies of a pass begun, whole or not.
      const [at] = await admin.fetchTopicOffsets(TOPIC);
      t.diagnostic(
        `kill ${kill} (${phase}): store ${at!.low}..${at!.high}, ${Number(at!.high) - written.at(-1)!.offset - 1} carry records since the last write`,
      );
      proxy = await startProxy('carrier', true, true);
      await assertView(proxy, written, `after kill ${kill}`);
      written.push(...(await writeRound(producer, 3 + kill)));
    }

    const done = await proxy.http(`/compact?topic=${TOPIC}`, 'POST');
    assert.equal(done.status, 200, done.body);
    const [offsets] = await admin.fetchTopicOffsets(TOPIC);
    assert.ok(Number(offsets!.low) > 0, `a whole pass let the store's history go (log start ${offsets!.low})`);
    const seen = await assertView(proxy, written, 'after a whole pass');
    fresh = await startProxy('fresh', false, false);
    assert.deepEqual(await assertView(fresh, written, 'through a replica on an empty data directory'), seen);
    const errors = [proxy, fresh].flatMap((p) => p.logs().filter((l) => l.level === 'error'));
    assert.deepEqual(errors, [], 'no error logged');
    t.diagnostic(`${written.length} records written; the store starts at ${offsets!.low} of ${offsets!.high}; ${seen.length} records seen`);
  } finally {
    await Promise.allSettled([producer.disconnect(), admin.disconnect()]);
    await fresh?.stop();
    await proxy?.stop();
    await kafka.stop();
    data.remove();
  }
});
