/**
 * kafkajs (the client with the fewest protocol versions and no CRC check) driven like the other
 * clients of the bed: same generated records, same summaries, every compression codec.
 */
import { randomBytes } from 'node:crypto';
// kafkajs is CommonJS: Node's ESM loader sees only its default export as a value.
import kafkajs, { type CompressionTypes, type Kafka, type Message } from 'kafkajs';
import { registerKafkajsCodecs } from './kafkajs-codecs.js';
import { genRecord, summarize, type ConsumeSpec, type ConsumeSummary, type ConsumedRecord, type ProduceSpec, type ProduceSummary } from './summary.js';

registerKafkajsCodecs();

const CLIENT = { name: 'kafkajs' };
const COMPRESSION: Record<NonNullable<ProduceSpec['compression']>, CompressionTypes> = {
  none: kafkajs.CompressionTypes.None,
  gzip: kafkajs.CompressionTypes.GZIP,
  snappy: kafkajs.CompressionTypes.Snappy,
  lz4: kafkajs.CompressionTypes.LZ4,
  zstd: kafkajs.CompressionTypes.ZSTD,
};
const SEND_BATCH = 500;

function kafka(bootstrap: string): Kafka {
  return new kafkajs.Kafka({ clientId: 'kcompact-test', brokers: [bootstrap], logLevel: kafkajs.logLevel.NOTHING, retry: { retries: 5 } });
}

/**
 * Produces spec.count generated records. The topic is created first (a broker-default partition
 * count unless createPartitions says otherwise), and records are partitioned here with kafkajs's
 * Java-compatible partitioner so each send's offsets are known per partition.
 */
export async function kafkajsProduce(bootstrap: string, spec: ProduceSpec): Promise<ProduceSummary> {
  const client = kafka(bootstrap);
  const admin = client.admin();
  const producer = client.producer({ createPartitioner: kafkajs.Partitioners.DefaultPartitioner, allowAutoTopicCreation: false });
  const compression = COMPRESSION[spec.compression ?? 'none'];
  const partitions: ProduceSummary['partitions'] = {};
  const errors: string[] = [];
  try {
    await admin.connect();
    await admin.createTopics({
      waitForLeaders: true,
      topics: [
        {
          topic: spec.topic,
          numPartitions: spec.createPartitions ?? -1,
          configEntries: Object.entries(spec.topicConfigs ?? {}).map(([name, value]) => ({ name, value })),
        },
      ],
    });
    const { topics } = await admin.fetchTopicMetadata({ topics: [spec.topic] });
    const partitionMetadata = topics[0]!.partitions;
    const partitioner = kafkajs.Partitioners.DefaultPartitioner();
    await producer.connect();
    const start = spec.start ?? 0;
    const end = start + (spec.count ?? 100);
    for (let from = start; from < end; from += SEND_BATCH) {
      const messages: Message[] = [];
      for (let i = from; i < Math.min(end, from + SEND_BATCH); i++) {
        const { key, value } = genRecord(i, spec.keys ?? 10, spec.valueSize ?? 32, spec.tombstoneEvery ?? 0);
        const message: Message = { key, value };
        message.partition = partitioner({ topic: spec.topic, partitionMetadata, message });
        messages.push(message);
      }
      const sent = await producer.send({ topic: spec.topic, messages, acks: -1, compression });
      for (const meta of sent) {
        if (meta.errorCode !== 0) errors.push(`partition ${meta.partition}: error code ${meta.errorCode}`);
        const n = messages.filter((m) => m.partition === meta.partition).length;
        const first = Number(meta.baseOffset);
        const p = (partitions[String(meta.partition)] ??= { count: 0, firstOffset: first, lastOffset: first });
        p.count += n;
        p.firstOffset = Math.min(p.firstOffset, first);
        p.lastOffset = Math.max(p.lastOffset, first + n - 1);
      }
    }
  } finally {
    await producer.disconnect();
    await admin.disconnect();
  }
  const count = Object.values(partitions).reduce((n, p) => n + p.count, 0);
  if (errors.length) throw new Error(`kafkajs produce: ${errors.join('; ')}`);
  return { count, partitions, errors, client: { ...CLIENT, compression: spec.compression ?? 'none' } };
}

/** Reads the topic from the beginning in a consumer group until spec.count records or the deadline. */
export async function kafkajsConsume(bootstrap: string, spec: ConsumeSpec): Promise<ConsumeSummary> {
  const consumer = kafka(bootstrap).consumer({
    groupId: spec.group ?? `kafkajs-${randomBytes(6).toString('hex')}`,
    readUncommitted: spec.isolation !== 'read_committed',
    maxWaitTimeInMs: 500,
  });
  const recs: ConsumedRecord[] = [];
  const errors: string[] = [];
  let timer: NodeJS.Timeout | undefined;
  try {
    await consumer.connect();
    await consumer.subscribe({ topic: spec.topic, fromBeginning: true });
    await new Promise<void>((resolve, reject) => {
      timer = setTimeout(resolve, spec.timeoutMs ?? 30_000);
      consumer.on(consumer.events.CRASH, (e) => reject(new Error(`kafkajs consumer crashed: ${e.payload.error.message}`)));
      consumer
        .run({
          eachBatch: async ({ batch }) => {
            for (const m of batch.messages) recs.push({ partition: batch.partition, offset: Number(m.offset), key: m.key, value: m.value });
            if (recs.length >= spec.count) resolve();
          },
        })
        .catch(reject);
    });
  } catch (e) {
    errors.push((e as Error).message);
  } finally {
    clearTimeout(timer);
    await consumer.disconnect();
  }
  const summary = summarize(recs, { ...CLIENT, isolation: spec.isolation ?? 'read_uncommitted' }, { expected: spec.count, records: spec.records, errors });
  if (summary.errors.length) throw new Error(`kafkajs consume: ${summary.errors.join('; ')}`);
  return summary;
}
