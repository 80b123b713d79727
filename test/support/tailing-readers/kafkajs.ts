/**
 * kafkajs as a tail reader, in the test process. kafkajs has no assign(): the 'assign' mode is a
 * consumer group of its own with a fresh id, reading from the beginning and committing nothing
 * (to the partition it is the same reader; only the group traffic differs). 'group' commits
 * after each batch it handled. Errors are the consumer's crash and request-timeout events and
 * whatever kafkajs logs at ERROR level.
 */
import kafkajs, { type Consumer, type Kafka, type LogEntry } from 'kafkajs';
import { endOffset } from './end-offset.js';
import type { TailLog } from './log.js';
import { Progress } from './progress.js';
import { describeError } from '../client-matrix/drivers/kafkajs.js';
import type { TailOptions } from './types.js';

function client(bootstrap: string, log: TailLog): Kafka {
  return new kafkajs.Kafka({
    clientId: 'kcompact-tail-kafkajs',
    brokers: [bootstrap],
    logLevel: kafkajs.logLevel.ERROR,
    logCreator:
      () =>
      ({ namespace, log: entry }: LogEntry) => {
        const cause = (entry as { error?: string }).error;
        log.push({ event: 'error', message: `${namespace}: ${entry.message}${cause ? ` (${cause})` : ''}` });
      },
  });
}

/**
 * The end offset as kafkajs asks it: its admin's fetchTopicOffsets sends ListOffsets at
 * READ_COMMITTED (the last stable offset) whatever the consumer reads at; for read_uncommitted
 * the high watermark comes from a raw ListOffsets.
 */
async function startOffset(kafka: Kafka, o: Required<TailOptions>): Promise<number> {
  if (o.isolation === 'read_uncommitted') return endOffset(o.bootstrap, o.topic, o.partition, o.isolation);
  const admin = kafka.admin();
  await admin.connect();
  try {
    const p = (await admin.fetchTopicOffsets(o.topic)).find((x) => x.partition === o.partition);
    if (!p) throw new Error(`no partition ${o.partition} in ${o.topic}`);
    return Number(p.high);
  } finally {
    await admin.disconnect();
  }
}

export interface InProcessReader {
  stop(): Promise<void>;
}

export function startKafkajsTail(o: Required<TailOptions>, log: TailLog): InProcessReader {
  const progress = new Progress(log, o.untilKey);
  const kafka = client(o.bootstrap, log);
  const consumer: Consumer = kafka.consumer({ groupId: o.group, readUncommitted: o.isolation === 'read_uncommitted', maxWaitTimeInMs: 500 });
  consumer.on(consumer.events.CRASH, (e) => log.push({ event: 'error', message: `crash: ${describeError(e.payload.error)}` }));
  consumer.on(consumer.events.REQUEST_TIMEOUT, (e) => log.push({ event: 'error', message: `request timeout: ${JSON.stringify(e.payload)}` }));
  let ended: Promise<void> | undefined;
  // Not awaited where it is called from eachBatch: disconnect waits for the running batch.
  const finish = (code: number): Promise<void> =>
    (ended ??= (async () => {
      clearTimeout(timer);
      await consumer.disconnect().catch((e: unknown) => log.push({ event: 'error', message: `disconnect: ${describeError(e)}` }));
      log.push({ event: 'exit', code, signal: null });
    })());
  const timer = setTimeout(() => {
    if (progress.timeout()) void finish(1);
  }, o.timeoutMs);
  timer.unref();

  void (async () => {
    try {
      progress.begin(await startOffset(kafka, o));
      await consumer.connect();
      await consumer.subscribe({ topic: o.topic, fromBeginning: true });
      await consumer.run({
        autoCommit: false,
        eachBatch: async ({ batch }) => {
          if (batch.topic !== o.topic || batch.partition !== o.partition) return;
          let last: number | undefined;
          let done = false;
          for (const m of batch.messages) {
            last = Number(m.offset);
            if (progress.record(last, m.key?.toString('utf8') ?? null, m.value?.toString('utf8') ?? null)) {
              done = true;
              break;
            }
          }
          if (o.mode === 'group' && last !== undefined) {
            await consumer
              .commitOffsets([{ topic: o.topic, partition: o.partition, offset: String(last + 1) }])
              .catch((e: unknown) => log.push({ event: 'error', message: `commit: ${describeError(e)}` }));
          }
          if (done) void finish(0);
        },
      });
    } catch (e) {
      log.push({ event: 'error', message: describeError(e) });
      void finish(1);
    }
  })();
  return { stop: () => finish(progress.finished && log.of('done').length > 0 ? 0 : 1) };
}
