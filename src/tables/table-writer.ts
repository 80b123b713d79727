/**
 * One record appended to a partition for the table API, with acks=all, from the main thread
 * through the proxy's upstream client. It is asked again only where the store certainly did not
 * append it: a second copy of a conditional record is void in the log and harmless, but its
 * verdict would be reported instead of the first copy's.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ErrorCode } from '../protocol/errors.js';
import { ApiKey } from '../protocol/messages.js';
import { encodeBatch } from '../protocol/records/batch.js';
import { Compression } from '../protocol/records/compression.js';
import type { RecordHeader } from '../protocol/records/record-decode.js';
import { backoffMs } from '../upstream/backoff.js';
import type { UpstreamClient } from '../upstream/client.js';
import { UpstreamError } from '../upstream/error-class.js';
import type { UpstreamClusterClient } from '../upstream/upstream-cluster-client.js';

export interface TableWrite {
  key: Buffer;
  /** null: a tombstone. */
  value: Buffer | null;
  headers: readonly RecordHeader[];
  /** Epoch ms, the record's CreateTime. */
  timestamp: number;
}

export interface TableWriter {
  /**
   * Appends the record; resolves with its offset once the store acknowledged it (acks=all).
   * `conditional`: the record carries a condition, and a write whose outcome is unknown is not
   * sent again. Rejects with WriteOutcomeUnknown when the store may or may not have it.
   */
  append(topic: string, partition: number, record: TableWrite, opts: { conditional: boolean }): Promise<number>;
}

/** The request went out and no answer says whether the store appended the record. */
export class WriteOutcomeUnknown extends Error {
  override readonly name = 'WriteOutcomeUnknown';
}

/** Produce v13 names topics by id only. */
const MAX_NAMED_PRODUCE_VERSION = 12;
/** Codes a leader answers before it appends anything. */
const NOT_APPENDED = new Set<number>([ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NOT_ENOUGH_REPLICAS]);
/** Answered before appending, or by a leader that lost its place while waiting for its followers: the record may be there. */
const MAYBE_APPENDED = ErrorCode.NOT_LEADER_OR_FOLLOWER;
const ATTEMPTS = 3;
const BACKOFF = { baseMs: 100, maxMs: 1_000 };

export interface UpstreamTableWriterOptions {
  /** The Produce request's own timeout: how long the leader waits for its followers. */
  produceTimeoutMs: number;
}

export class UpstreamTableWriter implements TableWriter {
  constructor(
    private readonly client: Pick<UpstreamClusterClient, 'leader' | 'partitionError'>,
    private readonly opts: UpstreamTableWriterOptions = { produceTimeoutMs: 10_000 },
  ) {}

  async append(topic: string, partition: number, record: TableWrite, opts: { conditional: boolean }): Promise<number> {
    const batch = await encodeBatch(
      {
        baseOffset: 0n,
        partitionLeaderEpoch: -1,
        attributes: 0,
        lastOffsetDelta: 0,
        baseTimestamp: BigInt(record.timestamp),
        maxTimestamp: BigInt(record.timestamp),
        producerId: -1n,
        producerEpoch: -1,
        baseSequence: -1,
      },
      [{ timestampDelta: 0, offsetDelta: 0, key: record.key, value: record.value, headers: record.headers }],
      Compression.None,
    );
    for (let failures = 1; ; failures++) {
      try {
        return await this.produce(topic, partition, batch);
      } catch (err) {
        if (err instanceof UpstreamError) this.client.partitionError(topic, partition, err.errorCode);
        const again =
          err instanceof NotSent ||
          (err instanceof UpstreamError && (NOT_APPENDED.has(err.errorCode) || (!opts.conditional && err.errorCode === MAYBE_APPENDED)));
        if (!again || failures >= ATTEMPTS) throw err instanceof NotSent ? err.cause : err;
        await sleep(backoffMs(failures, BACKOFF));
      }
    }
  }

  private async produce(topic: string, partition: number, batch: Buffer): Promise<number> {
    let leader: UpstreamClient;
    try {
      leader = await this.client.leader(topic, partition);
    } catch (err) {
      throw new NotSent(err);
    }
    const version = Math.min(leader.version(ApiKey.Produce), MAX_NAMED_PRODUCE_VERSION);
    let body;
    try {
      body = await leader.request(ApiKey.Produce, version, {
        transactionalId: null,
        acks: -1,
        timeoutMs: this.opts.produceTimeoutMs,
        topicData: [{ name: topic, partitionData: [{ index: partition, records: batch }] }],
      });
    } catch (err) {
      throw new WriteOutcomeUnknown(
        `the write to ${topic}-${partition} went to the store and got no answer (${err instanceof Error ? err.message : String(err)}): it may or may not have been appended`,
        { cause: err },
      );
    }
    const p = body.responses[0]?.partitionResponses[0];
    if (!p) throw new UpstreamError(`Produce to ${topic}-${partition}`, ErrorCode.UNKNOWN_SERVER_ERROR, 'the answer names no partition');
    if (p.errorCode !== ErrorCode.NONE) throw new UpstreamError(`Produce to ${topic}-${partition}`, p.errorCode, p.errorMessage);
    return Number(p.baseOffset);
  }
}

/** The request never left: no leader known, no connection to it. */
class NotSent extends Error {
  constructor(override readonly cause: unknown) {
    super('not sent', { cause });
  }
}
