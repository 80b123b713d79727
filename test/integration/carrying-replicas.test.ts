/**
 * Replicas that do not carry, serving while another carries (docs/carrying.md, "Every replica
 * agrees"): one proxy carries, in front of Kafka 4.4 with its cleaner off; a second one serves
 * the same store all along, and a third joins with an empty data directory halfway through.
 * Updates are produced the whole time, cleaned and carried pass after pass. Readers from offset
 * 0 over the bare protocol, through every replica, must never get an error (no
 * OFFSET_OUT_OF_RANGE while DeleteRecords lets a range go), a record twice, a record that was not
 * produced at its offset (a copy at its physical offset), or miss the latest record of any key;
 * ListOffsets EARLIEST is the topic's own start (or OFFSET_NOT_AVAILABLE, retried by clients,
 * while a new replica's index reads the store). Once the updates stop and every replica has
 * cleaned, the three serve the same records.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import kafkajs from 'kafkajs';
import type { CleanReport } from '../../src/engine/api/engine-reports.js';
import { startCompactingProxy, type RunningCompactingProxy } from '../support/kcompact.js';
import { epochEndRaw, listOffsetRaw, readPartitionRaw, type RawRead, type RawRecord } from '../support/raw-reader.js';
import { pollUntil, requirePeers, startKafka } from '../support/index.js';
import { createCompactedTopic } from '../support/topics.js';

const TOPIC = 'replicated';
const KEYS = 150;
const PER_SEND = 30;
const SEGMENT_MS = 200;
/** Passes the carrier makes before the updates stop. */
const PASSES = 6;
const OFFSET_NOT_AVAILABLE = 78;

interface Produced {
  key: string;
  value: string;
  timestamp: number;
  seq: string;
}

/** One producer for every record, so that what was acknowledged is known up to an offset. */
class Writer {
  readonly produced = new Map<number, Produced>();
  /** Every record below it that is not a carry record was produced (and is in `produced`). */
  ackedEnd = 0;
  private seq = 0;

  constructor(private readonly producer: kafkajs.Producer) {}

  async send(keys: readonly string[]): Promise<void> {
    const now = Date.now();
    const messages = keys.map((key) => ({ key, value: `${key}=${this.seq}`, timestamp: String(now), headers: { seq: String(this.seq++) } }));
    const [meta] = await this.producer.send({ topic: TOPIC, acks: -1, messages });
    const base = Number(meta!.baseOffset);
    messages.forEach((m, i) => this.produced.set(base + i, { key: m.key, value: m.value, timestamp: now, seq: m.headers.seq }));
    this.ackedEnd = base + messages.length;
  }

  /** The offset of every key's latest record below `end`. */
  latestBelow(end: number): Map<string, number> {
    const latest = new Map<string, number>();
    for (const [offset, p] of this.produced) if (offset < end && (latest.get(p.key) ?? -1) < offset) latest.set(p.key, offset);
    return latest;
  }
}

interface Seen {
  replica: string;
  read: RawRead;
  /** The writer's acknowledged end when the read began. */
  ackedAtStart: number;
}

/** What every read must show, judged once every record is known. */
function judge(writer: Writer, seen: Seen): void {
  const { replica, read, ackedAtStart } = seen;
  let previous = -1;
  for (const r of read.records) {
    assert.ok(r.offset > previous, `${replica}: offset ${r.offset} after ${previous} (a record twice, or out of order)`);
    previous = r.offset;
    const p = writer.produced.get(r.offset);
    assert.ok(p, `${replica}: a record at ${r.offset} that was not produced there (${JSON.stringify(r)})`);
    assert.deepEqual(
      { key: r.key, value: r.value, timestamp: r.timestamp, headers: r.headers },
      { key: p.key, value: p.value, timestamp: p.timestamp, headers: [['seq', p.seq]] },
      `${replica}: the record at ${r.offset} as produced`,
    );
  }
  // The latest record of a key at the read's start is served, or a later one that replaced it.
  const lastSeen = new Map<string, number>();
  for (const r of read.records) lastSeen.set(r.key!, r.offset);
  for (const [key, offset] of writer.latestBelow(ackedAtStart)) {
    assert.ok((lastSeen.get(key) ?? -1) >= offset, `${replica}: key ${key} lost its latest record at ${offset} (last seen at ${lastSeen.get(key)})`);
  }
}

const comparable = (records: readonly RawRecord[]) => records.map((r) => JSON.stringify([r.offset, r.key, r.value, r.timestamp, r.headers, r.leaderEpoch]));

test('replicas agree while one carries, and a new one joins with an empty data directory', { timeout: 300_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const kafka = await startKafka({ compaction: 'off' });
  const carrier = await startCompactingProxy(kafka.bootstrap, { carry: true });
  const other = await startCompactingProxy(kafka.bootstrap);
  let joined: RunningCompactingProxy | undefined;
  const kafkaClient = new kafkajs.Kafka({ clientId: 'replicas-test', brokers: [other.bootstrap], logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafkaClient.admin();
  const producer = kafkaClient.producer({ allowAutoTopicCreation: false });
  let stop = false;
  const errors: unknown[] = [];
  const background = (what: string, run: () => Promise<void>) =>
    run().catch((err: unknown) => {
      errors.push(err);
      stop = true;
      t.diagnostic(`${what} failed: ${String(err)}`);
    });
  try {
    await Promise.all([admin.connect(), producer.connect()]);
    await createCompactedTopic(admin, TOPIC, { 'segment.ms': String(SEGMENT_MS), 'min.cleanable.dirty.ratio': '0.01' });
    const writer = new Writer(producer);
    let sends = 0;
    const writing = background('writing', async () => {
      while (!stop) {
        await writer.send(Array.from({ length: PER_SEND }, (_, i) => `key-${(sends * 7 + i * 13) % KEYS}`));
        sends++;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    });

    // The carrier cleans and carries over and over; the other replica cleans on its own too.
    let passes = 0;
    let released = 0;
    const carrying = background('carrying', async () => {
      while (!stop && passes < PASSES) {
        await new Promise((resolve) => setTimeout(resolve, SEGMENT_MS * 2));
        const report = (await carrier.compactNow(TOPIC)) as CleanReport;
        passes += report.carried.length;
        released += report.carried.filter((c) => c.released).length;
        await other.compactNow(TOPIC);
        if (passes >= 2 && !joined) joined = await startCompactingProxy(kafka.bootstrap);
      }
    });

    const seen: Seen[] = [];
    let earliestNotAvailable = 0;
    const reading = background('reading', async () => {
      while (!stop && passes < PASSES) {
        for (const [replica, proxy] of [
          ['other', other],
          ['carrier', carrier],
          ['joined', joined],
        ] as const) {
          if (!proxy) continue;
          const ackedAtStart = writer.ackedEnd;
          // Both isolation levels, in turn (no transactions here: the same records).
          const isolationLevel = seen.length % 2;
          seen.push({ replica, ackedAtStart, read: await readPartitionRaw(proxy.bootstrap, TOPIC, 0, { timeoutMs: 60_000, isolationLevel }) });
          const earliest = await listOffsetRaw(proxy.bootstrap, TOPIC, 0, -2n);
          if (earliest.errorCode === OFFSET_NOT_AVAILABLE) earliestNotAvailable++;
          else assert.deepEqual(earliest, { errorCode: 0, offset: 0 }, `${replica}: EARLIEST is the topic's own log start`);
        }
      }
    });
    await Promise.all([carrying, reading]);
    stop = true;
    await writing;
    if (errors.length > 0) throw errors[0];
    assert.ok(joined, 'a third replica joined');

    for (const s of seen) judge(writer, s);
    const byReplica = (name: string) => seen.filter((s) => s.replica === name).length;
    t.diagnostic(
      `${passes} passes (${released} released), ${writer.produced.size} records produced; reads judged: other ${byReplica('other')}, carrier ${byReplica('carrier')}, joined ${byReplica('joined')}; ` +
        `empty answers while an index caught up: ${seen.reduce((n, s) => n + s.read.emptyAnswers, 0)}; EARLIEST not available ${earliestNotAvailable} times`,
    );
    assert.ok(released >= 2, 'the store let carried ranges go while replicas served');

    // Once the updates stop and every replica has cleaned everything, the three serve the same records.
    await new Promise((resolve) => setTimeout(resolve, SEGMENT_MS * 2));
    await writer.send(['roll']);
    const replicas = [carrier, other, joined];
    for (const proxy of replicas) await proxy.compactNow(TOPIC);
    const final = await pollUntil('the replicas serve the same records', 60_000, async () => {
      const reads = await Promise.all(replicas.map((p) => readPartitionRaw(p.bootstrap, TOPIC, 0, { timeoutMs: 60_000 })));
      const [first, ...rest] = reads.map((r) => comparable(r.records));
      return rest.every((r) => JSON.stringify(r) === JSON.stringify(first)) ? reads : undefined;
    });
    for (const [i, read] of final.entries()) judge(writer, { replica: `final ${i}`, read, ackedAtStart: writer.ackedEnd });
    // OffsetForLeaderEpoch agrees with what was served: a client validating its position after a
    // record of epoch e is told that epoch ends at or after it, never before (no truncation seen).
    for (const proxy of replicas) {
      const lastOfEpoch = new Map<number, number>();
      for (const r of final[0]!.records) lastOfEpoch.set(r.leaderEpoch, r.offset);
      for (const [epoch, last] of lastOfEpoch) {
        const end = await epochEndRaw(proxy.bootstrap, TOPIC, 0, epoch);
        assert.equal(end.errorCode, 0);
        assert.ok(end.endOffset > last, `epoch ${epoch} ends at ${end.endOffset}, after the record served at ${last}`);
      }
    }
    assert.equal(new Set(final[0]!.records.map((r) => r.key)).size, KEYS + 1, 'every key once, at its latest record');
  } finally {
    stop = true;
    await Promise.allSettled([producer.disconnect(), admin.disconnect()]);
    await joined?.stop();
    await other.stop();
    await carrier.stop();
    await kafka.stop();
  }
});
