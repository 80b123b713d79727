/**
 * A rewrite workload for partition 0 of a topic, written over the bare protocol: records over a
 * key space drawn uniformly at random (seeded), each with a value of its own drawn from the same
 * seeded stream, in batches of exactly `batchRecords` records, uncompressed, from an idempotent
 * producer (as Java's and franz-go's are by default), acks=all, pipelined on one connection to
 * the partition's leader. Two producers with the same seed write the same keys and values, so
 * two stores get the same workload.
 *
 * kbench repeats one value in every record, which lz4 (the codec of kcompact's copies) squeezes
 * to almost nothing: sizes on disk would then say nothing about what carrying costs. Random
 * values are the case no codec helps.
 */
import { ApiKey } from '../src/protocol/messages.js';
import { encodeBatch, type RecordInput } from '../src/protocol/records/batch.js';
import { Compression, type CompressionCodec } from '../src/protocol/records/compression.js';
import { RawConnection } from '../test/support/raw-client.js';
import { pollUntil } from '../test/support/index.js';

export interface RewriteSpec {
  keys: number;
  valueSize: number;
  batchRecords: number;
  seed: number;
  /** The codec of the produced batches (default none). */
  codec?: CompressionCodec;
}

export interface Produced {
  records: number;
  batches: number;
  /** Bytes of the record batches written (their wire size). */
  bytes: number;
  seconds: number;
  firstOffset: number;
  lastOffset: number;
}

const PRODUCE_VERSION = 9;
const METADATA_VERSION = 9;
const INIT_PRODUCER_ID_VERSION = 4;
const IN_FLIGHT = 16;
const KEY_WIDTH = 8;

/** The kbench key format, "key-%08d". */
export function keyName(n: number): string {
  return `key-${String(n).padStart(KEY_WIDTH, '0')}`;
}

/** xorshift32: fast, seeded, good enough for key choice and incompressible bytes. */
class Xorshift {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0 || 0x9e3779b9;
  }
  next(): number {
    let x = this.s;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return (this.s = x >>> 0);
  }
}

interface ResponseBody {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  [k: string]: any;
}

/** The address of the partition's leader, as the bootstrap's Metadata advertises it. */
async function leaderOf(bootstrap: string, topic: string): Promise<string> {
  const conn = await RawConnection.open(bootstrap);
  try {
    conn.request(ApiKey.Metadata, METADATA_VERSION, { topics: [{ name: topic }], allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false }, 1);
    const body = (await conn.response(ApiKey.Metadata, METADATA_VERSION)).body as ResponseBody;
    const t = (body.topics as ResponseBody[]).find((x) => x.name === topic);
    const p = (t?.partitions as ResponseBody[] | undefined)?.find((x) => x.partitionIndex === 0);
    const broker = (body.brokers as ResponseBody[]).find((b) => b.nodeId === p?.leaderId);
    if (!broker) throw new Error(`no leader of ${topic}-0 in the metadata of ${bootstrap} (topic error ${t?.errorCode})`);
    return `${broker.host}:${broker.port}`;
  } finally {
    conn.close();
  }
}

export class RewriteProducer {
  /** Which keys have been written (the roll key aside). */
  readonly written: Uint8Array;
  private readonly rng: Xorshift;
  private readonly keyTable: Buffer;
  private correlation = 1;
  private sequence = 0;

  private constructor(
    private readonly conn: RawConnection,
    private readonly topic: string,
    private readonly spec: RewriteSpec,
    private readonly producerId: bigint,
    private readonly producerEpoch: number,
  ) {
    this.rng = new Xorshift(spec.seed);
    this.written = new Uint8Array(spec.keys);
    this.keyTable = Buffer.from(Array.from({ length: spec.keys }, (_, i) => keyName(i)).join(''));
  }

  static async open(bootstrap: string, topic: string, spec: RewriteSpec): Promise<RewriteProducer> {
    if (spec.keys >= 10 ** KEY_WIDTH) throw new Error(`at most ${10 ** KEY_WIDTH - 1} keys`);
    const conn = await RawConnection.open(await leaderOf(bootstrap, topic));
    try {
      // A broker just started answers COORDINATOR_LOAD_IN_PROGRESS (14) and the like for a moment: ask again.
      const body = await pollUntil('a producer id', 60_000, async () => {
        conn.request(
          ApiKey.InitProducerId,
          INIT_PRODUCER_ID_VERSION,
          { transactionalId: null, transactionTimeoutMs: 60_000, producerId: -1n, producerEpoch: -1 },
          0,
        );
        const res = (await conn.response(ApiKey.InitProducerId, INIT_PRODUCER_ID_VERSION)).body as ResponseBody;
        if (res.errorCode) throw new Error(`InitProducerId: error ${res.errorCode}`);
        return res;
      });
      return new RewriteProducer(conn, topic, spec, body.producerId as bigint, body.producerEpoch as number);
    } catch (e) {
      conn.close();
      throw e;
    }
  }

  /** Distinct keys written so far. */
  distinctKeys(): number {
    return this.written.reduce((n, w) => n + w, 0);
  }

  /** Writes the next `count` records of the workload. */
  async produce(count: number): Promise<Produced> {
    const { batchRecords, valueSize, keys } = this.spec;
    const values = Buffer.allocUnsafe(batchRecords * valueSize + 4);
    const words = new Uint32Array(values.buffer, values.byteOffset, Math.floor(values.length / 4));
    return this.send(count, (n) => {
      for (let i = 0; i < Math.ceil((n * valueSize) / 4); i++) words[i] = this.rng.next();
      return Array.from({ length: n }, (_, i) => {
        const k = Math.floor((this.rng.next() / 2 ** 32) * keys);
        this.written[k] = 1;
        return {
          timestampDelta: 0,
          offsetDelta: i,
          key: this.keyTable.subarray(k * 12, k * 12 + 12),
          // encodeBatch copies it before the next batch refills the buffer.
          value: values.subarray(i * valueSize, (i + 1) * valueSize),
        };
      });
    });
  }

  /**
   * Writes every key once, in order (a round of a rewrite workload), each value `valueSize` bytes:
   * random ones, or text a codec squeezes as it would a JSON or Avro payload (the round and the
   * key, then filler).
   */
  async produceRound(round: number, values: 'random' | 'text'): Promise<Produced> {
    const { valueSize } = this.spec;
    let next = 0;
    return this.send(this.spec.keys, (n) =>
      Array.from({ length: n }, (_, i) => {
        const k = next++;
        this.written[k] = 1;
        const value = Buffer.alloc(valueSize, values === 'text' ? 0x2e : 0);
        if (values === 'text') value.write(`{"round":${round},"key":${k},"pad":"`, 'latin1');
        else for (let j = 0; j < valueSize; j += 4) value.writeUInt32LE(this.rng.next(), Math.min(j, valueSize - 4));
        return { timestampDelta: 0, offsetDelta: i, key: this.keyTable.subarray(k * 12, k * 12 + 12), value: value.subarray(0, valueSize) };
      }),
    );
  }

  /** Writes one record of `key` (outside the key space) and returns its offset: the roll records. */
  async append(key: string): Promise<number> {
    const r = await this.send(1, () => [{ timestampDelta: 0, offsetDelta: 0, key: Buffer.from(key), value: Buffer.alloc(this.spec.valueSize, 0x72) }]);
    return r.firstOffset;
  }

  close(): void {
    this.conn.close();
  }

  private async send(count: number, records: (n: number) => RecordInput[]): Promise<Produced> {
    const started = performance.now();
    const out: Produced = { records: 0, batches: 0, bytes: 0, seconds: 0, firstOffset: -1, lastOffset: -1 };
    // Records per batch in flight; one connection answers in order.
    const inFlight: number[] = [];
    const settle = async () => {
      const body = (await this.conn.response(ApiKey.Produce, PRODUCE_VERSION, 60_000)).body as ResponseBody;
      const n = inFlight.shift()!;
      const p = body.responses[0]?.partitionResponses[0] as ResponseBody | undefined;
      if (!p || p.errorCode) throw new Error(`Produce to ${this.topic}-0: error ${p?.errorCode} ${p?.errorMessage ?? ''}`);
      if (out.firstOffset < 0) out.firstOffset = Number(p.baseOffset);
      out.lastOffset = Number(p.baseOffset) + n - 1;
    };
    for (let done = 0; done < count;) {
      const n = Math.min(this.spec.batchRecords, count - done);
      const now = BigInt(Date.now());
      const batch = await encodeBatch(
        {
          baseOffset: 0n,
          partitionLeaderEpoch: -1,
          attributes: 0,
          lastOffsetDelta: n - 1,
          baseTimestamp: now,
          maxTimestamp: now,
          producerId: this.producerId,
          producerEpoch: this.producerEpoch,
          baseSequence: this.sequence,
        },
        records(n),
        this.spec.codec ?? Compression.None,
      );
      this.sequence += n;
      this.conn.request(
        ApiKey.Produce,
        PRODUCE_VERSION,
        { transactionalId: null, acks: -1, timeoutMs: 30_000, topicData: [{ name: this.topic, partitionData: [{ index: 0, records: batch }] }] },
        this.correlation++,
      );
      inFlight.push(n);
      done += n;
      out.records += n;
      out.batches++;
      out.bytes += batch.length;
      if (inFlight.length >= IN_FLIGHT) await settle();
    }
    while (inFlight.length > 0) await settle();
    out.seconds = (performance.now() - started) / 1000;
    return out;
  }
}
