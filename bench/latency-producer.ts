/**
 * An application's producer for bench/pass-latency.ts, in a process of its own so that neither
 * its timers nor its measuring share an event loop with the in-process proxy it measures.
 *
 * It writes one record per Produce (idempotent, acks=all, uncompressed, one request in flight,
 * as an application sending each record and waiting for it), on a fixed schedule, to partition 0
 * of a topic through the given bootstrap, and prints each send as a JSON line:
 *
 *   {"at": when the schedule said to send (epoch ms), "sent": when it went, "acked": when its
 *    answer came, "throttleMs": the answer's throttle_time_ms, "error": its error code}
 *
 * The parent counts a send held up by the one before it (whose answer came after `at`) from `at`:
 * an application's send() would have waited that out too (coordinated omission). Any other send
 * counts from `sent`, so that the lateness of this process's own timers is not taken for the
 * proxy's. Times are performance.timeOrigin + performance.now(), which the parent reads the same way.
 *
 *   node dist/bench/latency-producer.js --bootstrap HOST:PORT --topic T [--rate 50] [--value-size 200] [--keys 1000]
 *
 * It prints {"ready": true} once its first record is acknowledged (connections, metadata and the
 * producer id in place) and stops, after the send in flight, on SIGTERM.
 */
import { parseArgs } from 'node:util';
import { ApiKey } from '../src/protocol/messages.js';
import { encodeBatch } from '../src/protocol/records/batch.js';
import { Compression } from '../src/protocol/records/compression.js';
import { RawConnection } from '../test/support/raw-client.js';
import { numberFlags } from './number-flag.js';
import { keyName } from './rewrite-producer.js';

const PRODUCE_VERSION = 9;
const METADATA_VERSION = 9;
const INIT_PRODUCER_ID_VERSION = 4;

const { values: args } = parseArgs({
  options: {
    bootstrap: { type: 'string' },
    topic: { type: 'string' },
    rate: { type: 'string', default: '50' },
    'value-size': { type: 'string', default: '200' },
    keys: { type: 'string', default: '1000' },
  },
});
const number = numberFlags(args);
if (!args.bootstrap || !args.topic) throw new Error('--bootstrap and --topic are required');
const bootstrap = args.bootstrap;
const topic = args.topic;
const rate = number('rate');
const valueSize = number('value-size', { min: 0 });
const keys = number('keys');

const now = () => performance.timeOrigin + performance.now();
const out = (o: object) => process.stdout.write(`${JSON.stringify(o)}\n`);

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Body = Record<string, any>;

async function ask(conn: RawConnection, apiKey: number, version: number, body: object, correlationId: number): Promise<Body> {
  conn.request(apiKey, version, body, correlationId);
  return (await conn.response(apiKey, version, 120_000)).body as Body;
}

/** The partition's leader as the bootstrap (the proxy) advertises it. */
async function leaderOf(): Promise<string> {
  const conn = await RawConnection.open(bootstrap);
  try {
    const body = await ask(
      conn,
      ApiKey.Metadata,
      METADATA_VERSION,
      { topics: [{ name: topic }], allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false },
      1,
    );
    const p = (body.topics as Body[]).find((t) => t.name === topic)?.partitions?.find((x: Body) => x.partitionIndex === 0) as Body | undefined;
    const broker = (body.brokers as Body[]).find((b) => b.nodeId === p?.leaderId);
    if (!broker) throw new Error(`no leader of ${topic}-0 in the metadata of ${bootstrap}`);
    return `${broker.host}:${broker.port}`;
  } finally {
    conn.close();
  }
}

let stopping = false;
process.once('SIGTERM', () => (stopping = true));

async function main(): Promise<void> {
  const conn = await RawConnection.open(await leaderOf());
  const init = await ask(
    conn,
    ApiKey.InitProducerId,
    INIT_PRODUCER_ID_VERSION,
    { transactionalId: null, transactionTimeoutMs: 60_000, producerId: -1n, producerEpoch: -1 },
    2,
  );
  if (init.errorCode) throw new Error(`InitProducerId: error ${init.errorCode}`);
  const value = Buffer.alloc(valueSize);
  let sequence = 0;
  let correlation = 10;
  const send = async (i: number): Promise<Body> => {
    const ts = BigInt(Date.now());
    const batch = await encodeBatch(
      {
        baseOffset: 0n,
        partitionLeaderEpoch: -1,
        attributes: 0,
        lastOffsetDelta: 0,
        baseTimestamp: ts,
        maxTimestamp: ts,
        producerId: init.producerId as bigint,
        producerEpoch: init.producerEpoch as number,
        baseSequence: sequence++,
      },
      [{ timestampDelta: 0, offsetDelta: 0, key: Buffer.from(keyName(i % keys)), value }],
      Compression.None,
    );
    const body = await ask(
      conn,
      ApiKey.Produce,
      PRODUCE_VERSION,
      { transactionalId: null, acks: -1, timeoutMs: 30_000, topicData: [{ name: topic, partitionData: [{ index: 0, records: batch }] }] },
      correlation++,
    );
    return { throttleMs: body.throttleTimeMs ?? 0, error: body.responses?.[0]?.partitionResponses?.[0]?.errorCode ?? -1 };
  };
  const first = await send(0);
  if (first.error) throw new Error(`the first record was refused: error ${first.error}`);
  out({ ready: true });
  const interval = 1000 / rate;
  const start = now();
  for (let i = 1; !stopping; i++) {
    const at = start + (i - 1) * interval;
    const wait = at - now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    if (stopping) break;
    const sent = now();
    const r = await send(i);
    out({ at, sent, acked: now(), throttleMs: r.throttleMs, error: r.error });
  }
  conn.close();
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    out({ failed: String((e as Error)?.stack ?? e) });
    process.exit(1);
  },
);
