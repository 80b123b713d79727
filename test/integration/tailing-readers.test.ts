/**
 * The tail readers of issue 33's soak test (test/support/tailing-readers.ts) against Apache Kafka
 * 4.4 directly, no kcompact: every client in every mode and isolation level it has reads a
 * one-partition topic of 50 records from its start, catches up with the high watermark it asked
 * for at start, waits at the end, and reads the next record written, with no error and no
 * fetch-size growth. All readers run side by side: their start-up (JVMs, Python) is most of the
 * time.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import kafkajs from 'kafkajs';
import { requirePeers, startKafka } from '../support/index.js';
import { TAIL_DRIVERS, groupCoordinatorReady, isEvent, startTail, tailCombinations, type TailReader } from '../support/tailing-readers.js';

const TOPIC = 'tailed';
const RECORDS = 50;
const UNTIL_KEY = 'next';
/** Every reader's own deadline: far beyond a slow start, short enough to fail within the test's bound. */
const READER_TIMEOUT_MS = 80_000;

async function produce(bootstrap: string, messages: { key: string; value: string }[], create = false): Promise<number> {
  const kafka = new kafkajs.Kafka({ clientId: 'tailing-readers', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafka.admin();
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  try {
    if (create) {
      await admin.connect();
      await admin.createTopics({ waitForLeaders: true, topics: [{ topic: TOPIC, numPartitions: 1 }] });
    }
    await producer.connect();
    const [sent] = await producer.send({ topic: TOPIC, acks: -1, messages });
    return Number(sent!.baseOffset);
  } finally {
    await Promise.allSettled([admin.disconnect(), producer.disconnect()]);
  }
}

/** What is wrong with a reader that printed done: each a line naming the reader. */
function problems(r: TailReader, nextOffset: number): string[] {
  const out: string[] = [];
  const say = (what: string) => out.push(`${r.label}: ${what}`);
  const start = r.events.find(isEvent('start'));
  if (start?.highWatermark !== RECORDS) say(`start reported high watermark ${start?.highWatermark}, not ${RECORDS}`);
  if (r.options.mode !== 'share') {
    const caughtUp = r.events.find(isEvent('caughtUp'));
    if (caughtUp?.offset !== RECORDS - 1 || caughtUp.records !== RECORDS)
      say(`caught up at ${JSON.stringify(caughtUp)}, not offset ${RECORDS - 1} after ${RECORDS} records`);
  }
  const done = r.events.find(isEvent('done'));
  if (done?.offset !== nextOffset) say(`done at ${done?.offset}, not ${nextOffset}`);
  // Every record once, in offset order, up to the next one (a reader stops at done).
  const offsets = r.records().map((e) => e.offset);
  const expected = Array.from({ length: nextOffset + 1 }, (_, i) => i);
  if (JSON.stringify(offsets) !== JSON.stringify(expected)) say(`read offsets ${offsets.join(',')}`);
  for (const e of r.errors()) say(`error: ${e.message}`);
  for (const e of r.fetchGrew()) say(`fetch grew: ${e.message}`);
  if (r.events.some((e) => e.event === 'timeout')) say('timed out');
  return out;
}

test('tail readers: every client catches up, waits at the end and reads the next record, on Kafka 4.4', { timeout: 180_000 }, async (t) => {
  if (!requirePeers(t)) return;
  // Without kcat its reader is left out, and the others run (under CI this throws instead).
  const noKcat = requirePeers(['kcat']);
  const drivers = noKcat ? TAIL_DRIVERS.filter((d) => d.id !== 'kcat') : TAIL_DRIVERS;
  if (noKcat) t.diagnostic(`${noKcat}: its reader is left out`);
  const kafka = await startKafka({ compaction: 'off' });
  t.after(() => kafka.stop());
  const records = Array.from({ length: RECORDS }, (_, i) => ({ key: `key-${i % 10}`, value: `value-${i}` }));
  await produce(kafka.bootstrap, records, true);
  // A fresh broker's group coordinator is still loading: kafkajs would crash (and restart) on it.
  await groupCoordinatorReady(kafka.bootstrap);

  const readers = tailCombinations(drivers).map(({ driver, mode, isolation }) =>
    startTail(driver, { bootstrap: kafka.bootstrap, topic: TOPIC, mode, isolation, untilKey: UNTIL_KEY, timeoutMs: READER_TIMEOUT_MS }),
  );
  t.after(() => Promise.all(readers.map((r) => r.stop())));
  t.diagnostic(`${readers.length} readers: ${readers.map((r) => r.label).join('; ')}`);

  // A share group's reader has no position to catch up with: it only has to have started (it
  // reads from the group's earliest offset, so the next record reaches it whenever it joins).
  const started = Date.now();
  await Promise.all(readers.map((r) => r.waitFor(isEvent(r.options.mode === 'share' ? 'start' : 'caughtUp'), READER_TIMEOUT_MS)));
  t.diagnostic(`all caught up ${Date.now() - started} ms after starting`);

  const nextOffset = await produce(kafka.bootstrap, [{ key: UNTIL_KEY, value: 'the next record' }]);
  assert.equal(nextOffset, RECORDS);
  const outcomes = await Promise.allSettled(readers.map((r) => r.waitFor(isEvent('done'), READER_TIMEOUT_MS)));
  const failures = outcomes.flatMap((o) => (o.status === 'rejected' ? [(o.reason as Error).message] : []));
  assert.deepEqual(failures, [], failures.join('\n\n'));
  await Promise.all(readers.map((r) => r.stop()));
  assert.deepEqual(
    readers.flatMap((r) => problems(r, nextOffset)),
    [],
  );
});
