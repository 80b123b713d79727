/**
 * A reader of one partition over the bare protocol, moving as Java's consumer does (to the last
 * complete batch's last offset + 1): it sees every error code the proxy answers (a client
 * library would reset on OFFSET_OUT_OF_RANGE and hide it), checks every batch's CRC, and keeps
 * every record's offset, key, value, timestamp and headers as a client would get them.
 */
import { decodeRecords, iterateBatches, TimestampType, verifyCrc } from '../../src/protocol/records/batch.js';
import { ApiKey } from '../../src/protocol/messages.js';
import { RawConnection } from './raw-client.js';

const FETCH_VERSION = 12;
const LIST_OFFSETS_VERSION = 7;
const OFFSET_FOR_LEADER_EPOCH_VERSION = 4;

export interface RawRecord {
  offset: number;
  timestamp: number;
  key: string | null;
  value: string | null;
  headers: [string, string | null][];
  /** Its batch's partition leader epoch. */
  leaderEpoch: number;
}

export interface RawRead {
  records: RawRecord[];
  /** The high watermark the read ended at. */
  end: number;
  /** The log start the last answer gave. */
  logStart: number;
  fetches: number;
  /** Answers that brought nothing and moved nothing (the reader asked again). */
  emptyAnswers: number;
}

export class RawReadError extends Error {
  override readonly name = 'RawReadError';
  constructor(
    message: string,
    readonly errorCode: number,
  ) {
    super(message);
  }
}

let correlation = 1;

/** Reads `topic`-`partition` from `from` to the high watermark its answers give, within the deadline. */
export async function readPartitionRaw(
  address: string,
  topic: string,
  partition: number,
  opts: { from?: number; isolationLevel?: number; timeoutMs?: number; maxWaitMs?: number; partitionMaxBytes?: number } = {},
): Promise<RawRead> {
  const conn = await RawConnection.open(address);
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000);
  const out: RawRead = { records: [], end: -1, logStart: -1, fetches: 0, emptyAnswers: 0 };
  let position = opts.from ?? 0;
  try {
    for (;;) {
      if (Date.now() > deadline) throw new Error(`no end of ${topic}-${partition} within the deadline: at ${position}, high watermark ${out.end}`);
      const id = correlation++;
      conn.request(
        ApiKey.Fetch,
        FETCH_VERSION,
        fetchBody(topic, partition, position, opts.isolationLevel ?? 0, opts.maxWaitMs ?? 100, opts.partitionMaxBytes),
        id,
      );
      const { body } = await conn.response(ApiKey.Fetch, FETCH_VERSION, 30_000);
      out.fetches++;
      if (body.errorCode !== 0) throw new RawReadError(`Fetch of ${topic} answered error ${body.errorCode}`, body.errorCode);
      const p = body.responses[0].partitions[0];
      if (p.errorCode !== 0) throw new RawReadError(`Fetch of ${topic}-${partition} at ${position} answered error ${p.errorCode}`, p.errorCode);
      out.end = Number(p.highWatermark);
      out.logStart = Number(p.logStartOffset);
      const records: Buffer = p.records ?? Buffer.alloc(0);
      const walk = iterateBatches(records);
      let moved = false;
      for (const b of walk.batches) {
        if (!verifyCrc(records, b)) throw new Error(`the batch at ${b.baseOffset} of ${topic}-${partition} fails its CRC`);
        const base = Number(b.baseOffset);
        if (!b.isControl) {
          for (const r of await decodeRecords(records, b)) {
            const offset = base + r.offsetDelta;
            if (offset < position) continue;
            const timestamp = b.timestampType === TimestampType.LogAppendTime ? Number(b.maxTimestamp) : Number(b.baseTimestamp) + r.timestampDelta;
            out.records.push({
              offset,
              timestamp,
              key: r.key?.toString() ?? null,
              value: r.value?.toString() ?? null,
              headers: r.headers.map((h) => [h.key.toString(), h.value?.toString() ?? null]),
              leaderEpoch: b.partitionLeaderEpoch,
            });
          }
        }
        const next = base + b.lastOffsetDelta + 1;
        if (next > position) {
          position = next;
          moved = true;
        }
      }
      if (position >= out.end && out.end >= 0) return out;
      if (!moved) out.emptyAnswers++;
    }
  } finally {
    conn.close();
  }
}

/** ListOffsets of one partition at `timestamp` (-2 EARLIEST, -1 LATEST): the error code and offset answered. */
export async function listOffsetRaw(address: string, topic: string, partition: number, timestamp: bigint): Promise<{ errorCode: number; offset: number }> {
  const conn = await RawConnection.open(address);
  try {
    conn.request(
      ApiKey.ListOffsets,
      LIST_OFFSETS_VERSION,
      {
        replicaId: -1,
        isolationLevel: 0,
        topics: [{ name: topic, partitions: [{ partitionIndex: partition, currentLeaderEpoch: -1, timestamp }] }],
      },
      correlation++,
    );
    const { body } = await conn.response(ApiKey.ListOffsets, LIST_OFFSETS_VERSION, 30_000);
    const p = body.topics[0].partitions[0];
    return { errorCode: p.errorCode, offset: Number(p.offset) };
  } finally {
    conn.close();
  }
}

/** OffsetForLeaderEpoch of one partition: the end offset the leader gives for `leaderEpoch`. */
export async function epochEndRaw(
  address: string,
  topic: string,
  partition: number,
  leaderEpoch: number,
): Promise<{ errorCode: number; leaderEpoch: number; endOffset: number }> {
  const conn = await RawConnection.open(address);
  try {
    conn.request(
      ApiKey.OffsetForLeaderEpoch,
      OFFSET_FOR_LEADER_EPOCH_VERSION,
      { replicaId: -1, topics: [{ topic, partitions: [{ partition, currentLeaderEpoch: -1, leaderEpoch }] }] },
      correlation++,
    );
    const { body } = await conn.response(ApiKey.OffsetForLeaderEpoch, OFFSET_FOR_LEADER_EPOCH_VERSION, 30_000);
    const p = body.topics[0].partitions[0];
    return { errorCode: p.errorCode, leaderEpoch: p.leaderEpoch, endOffset: Number(p.endOffset) };
  } finally {
    conn.close();
  }
}

export function fetchBody(topic: string, partition: number, offset: number, isolationLevel: number, maxWaitMs: number, partitionMaxBytes = 1 << 20): object {
  return {
    replicaId: -1,
    maxWaitMs,
    minBytes: 1,
    maxBytes: 1 << 20,
    isolationLevel,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [
      {
        topic,
        partitions: [{ partition, currentLeaderEpoch: -1, fetchOffset: BigInt(offset), lastFetchedEpoch: -1, logStartOffset: -1n, partitionMaxBytes }],
      },
    ],
    forgottenTopicsData: [],
    rackId: '',
  };
}
