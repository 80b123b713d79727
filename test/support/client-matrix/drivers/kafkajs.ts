/** kafkajs, in the test process: producer, consumer groups, transactions and admin. */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import { setTimeout as sleep } from 'node:timers/promises';
// kafkajs is CommonJS: Node's ESM loader sees only its default export as a value.
import kafkajs, { type Consumer, type Kafka } from 'kafkajs';
import type { RecordView } from '../../summary.js';
import type { ClientDriver, ProduceRun } from '../types.js';

const DEADLINE_MS = 30_000;

function kafka(bootstrap: string): Kafka {
  return new kafkajs.Kafka({ clientId: 'kcompact-matrix-kafkajs', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING, retry: { retries: 5 } });
}

/** kafkajs wraps a broker's error (KafkaJSProtocolError, with its type) in its own; say all of them. */
export function describeError(e: unknown): string {
  const parts: string[] = [];
  for (let cur = e as { name?: string; type?: string; message?: string; originalError?: unknown; cause?: unknown } | undefined; cur;) {
    parts.push(`${cur.name ?? 'Error'}${cur.type ? ` ${cur.type}` : ''}: ${cur.message ?? ''}`);
    cur = (cur.originalError ?? cur.cause) as typeof cur;
  }
  return parts.join(' <- ');
}

interface Read {
  readUncommitted: boolean;
  /** The group; a fresh one when absent. */
  group?: string;
  expected: number;
  idleMs: number;
}

/**
 * Subscribes from the beginning and reads until `expected` records, then idleMs more; returns
 * the consumer still running (to commit with) and what it read.
 */
async function read(b: string, topic: string, r: Read): Promise<{ records: RecordView[]; consumer: Consumer }> {
  const consumer = kafka(b).consumer({
    groupId: r.group ?? `kafkajs-matrix-${randomBytes(6).toString('hex')}`,
    readUncommitted: r.readUncommitted,
    maxWaitTimeInMs: 500,
  });
  const records: RecordView[] = [];
  let crash: Error | undefined;
  consumer.on(consumer.events.CRASH, (e) => {
    crash = e.payload.error;
  });
  try {
    await consumer.connect();
    await consumer.subscribe({ topic, fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatch: async ({ batch }) => {
        for (const m of batch.messages) {
          records.push({
            partition: batch.partition,
            offset: Number(m.offset),
            key: m.key?.toString('utf8') ?? null,
            value: m.value?.toString('utf8') ?? null,
          });
        }
      },
    });
    const deadline = Date.now() + DEADLINE_MS;
    while (records.length < r.expected && Date.now() < deadline && !crash) await sleep(50);
    if (crash) throw new Error(`kafkajs consumer crashed: ${describeError(crash)}`);
    if (records.length < r.expected) throw new Error(`kafkajs read ${records.length} of ${r.expected} records in ${DEADLINE_MS} ms`);
    await sleep(r.idleMs);
    return { records, consumer };
  } catch (e) {
    await consumer.disconnect();
    throw e;
  }
}

const version = (createRequire(import.meta.url)('kafkajs/package.json') as { version: string }).version;

export const kafkaJs: ClientDriver = {
  id: 'kafkajs',
  name: 'kafkajs',
  unsupported: { shareRead: 'kafkajs has no share consumer (KIP-932).' },
  notes: {
    configs:
      'kafkajs has no IncrementalAlterConfigs: it alters with AlterConfigs, which replaces the whole set, so cleanup.policy=compact is sent again with the new value.',
  },
  version: async () => version,

  async produce(b, f) {
    const producer = kafka(b).producer({ allowAutoTopicCreation: false });
    await producer.connect();
    try {
      const sent = await producer.send({ topic: f.topic, acks: -1, messages: f.records.map((r) => ({ key: r.key, value: r.value })) });
      const partitions: NonNullable<ProduceRun['partitions']> = {};
      for (const m of sent) {
        const first = Number(m.baseOffset);
        partitions[String(m.partition)] = { count: f.records.length, firstOffset: first, lastOffset: first + f.records.length - 1 };
      }
      let keyless: string | null = null;
      await producer.send({ topic: f.topic, acks: -1, messages: [{ key: null, value: 'keyless' }] }).catch((e: unknown) => {
        keyless = describeError(e);
      });
      return { partitions, keyless };
    } finally {
      await producer.disconnect();
    }
  },

  async group(b, f) {
    const { records, consumer } = await read(b, f.topic, { readUncommitted: true, group: f.group, expected: f.count, idleMs: 0 });
    try {
      const next = new Map<number, number>();
      for (const r of records) next.set(r.partition, Math.max(next.get(r.partition) ?? 0, r.offset + 1));
      await consumer.commitOffsets([...next].map(([partition, offset]) => ({ topic: f.topic, partition, offset: String(offset) })));
      return { records };
    } finally {
      await consumer.disconnect();
    }
  },

  async transactions(b, f) {
    const producer = kafka(b).producer({ transactionalId: f.transactionalId, idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false });
    await producer.connect();
    try {
      for (const t of f.transactions) {
        const tx = await producer.transaction();
        try {
          // send resolves once the records are written: an aborted transaction's are in the log.
          await tx.send({ topic: f.topic, acks: -1, messages: t.records.map((r) => ({ key: r.key, value: r.value })) });
        } catch (e) {
          await tx.abort();
          throw e;
        }
        await (t.commit ? tx.commit() : tx.abort());
      }
    } finally {
      await producer.disconnect();
    }
    const expected = f.transactions.filter((t) => t.commit).reduce((n, t) => n + t.records.length, 0);
    const { records, consumer } = await read(b, f.topic, { readUncommitted: false, expected, idleMs: 0 });
    await consumer.disconnect();
    return { records };
  },

  async configs(b, f) {
    const admin = kafka(b).admin();
    await admin.connect();
    try {
      const entries = (c: Record<string, string>) => Object.entries(c).map(([name, value]) => ({ name, value }));
      const names = [...new Set([...Object.keys(f.create), ...Object.keys(f.alter)])].sort();
      const describe = async () => {
        const res = await admin.describeConfigs({
          includeSynonyms: false,
          resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: f.topic, configNames: names }],
        });
        const got = new Map(res.resources[0]!.configEntries.map((e) => [e.configName, e.configValue]));
        return Object.fromEntries(names.map((n) => [n, got.get(n) ?? null]));
      };
      if (!(await admin.createTopics({ waitForLeaders: true, topics: [{ topic: f.topic, numPartitions: f.partitions, configEntries: entries(f.create) }] }))) {
        throw new Error(`topic ${f.topic} already existed`);
      }
      const created = await describe();
      await admin.alterConfigs({
        validateOnly: false,
        resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: f.topic, configEntries: entries({ ...f.create, ...f.alter }) }],
      });
      return { api: 'AlterConfigs', created, altered: await describe() };
    } finally {
      await admin.disconnect();
    }
  },

  async compactedRead(b, f) {
    const { records, consumer } = await read(b, f.topic, { readUncommitted: true, expected: f.expected.length, idleMs: f.idleMs });
    await consumer.disconnect();
    return { records };
  },
};
