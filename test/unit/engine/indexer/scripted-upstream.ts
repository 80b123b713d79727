/**
 * A scripted upstream for the indexer's unit tests: it stands in for UpstreamClusterClient (the
 * Indexer's IndexerUpstream) and answers Metadata, Fetch, ListOffsets and DeleteRecords from an
 * in-memory log the test writes to, like a broker would at READ_COMMITTED. Transactions are
 * tracked as a broker does: the last stable offset is the first offset of the oldest open
 * transaction, and an ABORT marker adds the transaction to the aborted list Fetch answers give.
 * A Fetch that has nothing to give waits up to its maxWaitMs (or until the log changes), like a
 * long poll, on the upstream's manual clock (test/support/manual-clock.ts), which the indexer
 * under test is given too: the test moves time, and nothing waits for the real one. Every request is recorded, and faults can be injected: failing requests (a broken
 * connection), failing connects, partition error codes, a stale leader in Metadata, a topic
 * Metadata does not know for a few answers.
 */
import { ErrorCode } from '../../../../src/protocol/errors.js';
import {
  ApiKey,
  type BodyInit,
  type DeleteRecordsRequest,
  type DeleteRecordsResponse,
  type FetchRequest,
  type FetchResponse,
  type FetchResponsePartitionData,
  type ListOffsetsRequest,
  type ListOffsetsResponse,
  type MetadataResponse,
} from '../../../../src/protocol/messages.js';
import { ZERO_UUID } from '../../../../src/protocol/wire/uuid.js';
import type { IndexerUpstream } from '../../../../src/engine/indexer/indexer.js';
import type { UpstreamClient } from '../../../../src/upstream/client.js';
import { ManualClock } from '../../../support/manual-clock.js';
import { dataBatch, markerBatch, type DataRecord } from './batch-builder.js';

export interface FakeBatch {
  base: number;
  last: number;
  bytes: Buffer;
}

export class FakeLog {
  batches: FakeBatch[] = [];
  logStart = 0;
  /** The log end offset (the high watermark: every replica has everything). */
  end = 0;
  /** The broker that leads the partition (answers its Fetch, ListOffsets, DeleteRecords). */
  leader: number;
  /** The leader Metadata names, when it lags behind `leader`. */
  metadataLeader: number | undefined;
  /** An error code every Fetch of the partition is answered with while set. */
  fetchError: number | undefined;
  /** Fetch answers hold no batch at or past this offset while set (as if cut short by their byte limit). */
  withholdFrom: number | undefined;
  /** Producer id → first offset of its open transaction. */
  readonly open = new Map<number, number>();
  readonly aborted: { producerId: number; first: number; last: number }[] = [];

  constructor(leader: number) {
    this.leader = leader;
  }

  get lastStable(): number {
    return this.open.size > 0 ? Math.min(...this.open.values()) : this.end;
  }

  append(bytes: Buffer): void {
    const base = Number(bytes.readBigInt64BE(0));
    const last = base + bytes.readInt32BE(23);
    if (base !== this.end) throw new Error(`batch at ${base} appended to a log ending at ${this.end}`);
    this.batches.push({ base, last, bytes });
    this.end = last + 1;
  }

  /** Moves the log start up (retention, DeleteRecords): batches wholly below it go. */
  deleteBefore(offset: number): void {
    this.logStart = Math.max(this.logStart, offset);
    this.batches = this.batches.filter((b) => b.last >= this.logStart);
  }

  /** Cuts the log back to `offset` (a batch boundary), as an unclean leader election may. */
  truncate(offset: number): void {
    this.batches = this.batches.filter((b) => b.base < offset);
    this.end = offset;
  }
}

export interface FakeTopic {
  name: string;
  id: string;
  partitions: FakeLog[];
}

export interface RecordedRequest {
  node: number;
  apiKey: number;
  version: number;
  body: unknown;
  /** The answer, once given (a failed request has none). */
  response?: unknown;
  /** How many requests had arrived when it was answered: requests at or past this came after the answer. */
  answeredAt?: number;
}

export interface RecordedFetch {
  node: number;
  version: number;
  topic: string;
  topicId: string;
  partition: number;
  fetchOffset: number;
  /** Index of the request in `requests`: its place among all requests. */
  seq: number;
  /** The partition's error code in the answer; undefined before the answer (or when the request failed). */
  errorCode: number | undefined;
  answeredAt: number | undefined;
}

let idCounter = 0;

/** A fresh topic id (Kafka's form: 22 base64url characters). */
export function newTopicId(): string {
  const buf = Buffer.alloc(16);
  buf.writeUInt32BE(0x6b636f6d, 0);
  buf.writeUInt32BE(++idCounter, 12);
  return buf.toString('base64url');
}

const HOST = 'fake.invalid';

export class ScriptedUpstream implements IndexerUpstream {
  readonly topics = new Map<string, FakeTopic>();
  readonly requests: RecordedRequest[] = [];
  /** Node ids dropBroker was called with, in order. */
  readonly dropped: number[] = [];
  /** Metadata answers given (failed ones not counted). */
  metadataAnswers = 0;
  /** The newest Fetch version the fake brokers speak (13+ names topics by id). */
  fetchVersion = 16;
  /** Whether Metadata gives topic ids (an upstream before Kafka 2.8 does not). */
  topicIds = true;
  /** Brokers that refuse DeleteRecords with this error code. */
  deleteRecordsError: number | undefined;
  private readonly nodes: number[];
  private readonly failing: { apiKey: number; node: number | undefined; times: number }[] = [];
  private readonly connectFailures = new Map<number, number>();
  private readonly hidden = new Map<string, number>();
  private waiters: (() => void)[] = [];

  constructor(
    nodes: number[] = [1, 2],
    readonly clock = new ManualClock(),
  ) {
    this.nodes = nodes;
  }

  createTopic(name: string, partitions: number, leaders: number[] = [this.nodes[0]!]): FakeTopic {
    const topic = { name, id: newTopicId(), partitions: Array.from({ length: partitions }, (_, i) => new FakeLog(leaders[i % leaders.length]!)) };
    this.topics.set(name, topic);
    this.changed();
    return topic;
  }

  /** CreatePartitions: the topic gets partitions up to `count`. */
  addPartitions(name: string, count: number, leader = this.nodes[0]!): void {
    const topic = this.topic(name);
    while (topic.partitions.length < count) topic.partitions.push(new FakeLog(leader));
    this.changed();
  }

  deleteTopic(name: string): void {
    this.topics.delete(name);
    this.changed();
  }

  topic(name: string): FakeTopic {
    const topic = this.topics.get(name);
    if (!topic) throw new Error(`no topic ${name} in the scripted upstream`);
    return topic;
  }

  log(name: string, partition: number): FakeLog {
    const log = this.topic(name).partitions[partition];
    if (!log) throw new Error(`no partition ${name}-${partition} in the scripted upstream`);
    return log;
  }

  /** Appends one data batch; transactional ones open (or continue) the producer's transaction. */
  async produce(name: string, partition: number, records: DataRecord[], txn?: { producerId: number }): Promise<FakeBatch> {
    const log = this.log(name, partition);
    const bytes = await dataBatch({ baseOffset: log.end, ...(txn && { producerId: txn.producerId, transactional: true }) }, records);
    if (txn && !log.open.has(txn.producerId)) log.open.set(txn.producerId, log.end);
    log.append(bytes);
    this.changed();
    return log.batches.at(-1)!;
  }

  /** Ends the producer's open transaction with a COMMIT or ABORT marker. */
  async endTransaction(name: string, partition: number, producerId: number, commit: boolean): Promise<number> {
    const log = this.log(name, partition);
    const first = log.open.get(producerId);
    if (first === undefined) throw new Error(`producer ${producerId} has no open transaction on ${name}-${partition}`);
    const at = log.end;
    log.append(await markerBatch({ baseOffset: at, producerId }, commit));
    log.open.delete(producerId);
    if (!commit) log.aborted.push({ producerId, first, last: at });
    this.changed();
    return at;
  }

  /** Appends raw bytes as a batch (a damaged one, say). */
  appendRaw(name: string, partition: number, bytes: Buffer): void {
    this.log(name, partition).append(bytes);
    this.changed();
  }

  /** Something changed that a waiting Fetch should see now. */
  changed(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const w of waiters) w();
  }

  /** The next `times` requests of this API (to `node`, or to any) fail as a broken connection would. */
  failNext(apiKey: number, times: number, node?: number): void {
    this.failing.push({ apiKey, node, times });
  }

  /** The next `times` connects to the broker fail. */
  failConnects(node: number, times: number): void {
    this.connectFailures.set(node, (this.connectFailures.get(node) ?? 0) + times);
  }

  /** The next `answers` Metadata answers call the topic unknown (a broker whose metadata lags). */
  hideTopic(name: string, answers: number): void {
    this.hidden.set(name, answers);
  }

  fetches(filter: { node?: number; topic?: string; partition?: number } = {}): RecordedFetch[] {
    const out: RecordedFetch[] = [];
    this.requests.forEach((r, seq) => {
      if (r.apiKey !== ApiKey.Fetch) return;
      for (const t of (r.body as BodyInit<FetchRequest>).topics ?? []) {
        const name = r.version >= 13 ? ([...this.topics.values()].find((x) => x.id === t.topicId)?.name ?? `(id ${t.topicId})`) : t.topic!;
        const answered = (r.response as FetchResponse | undefined)?.responses.find((x) => (r.version >= 13 ? x.topicId === t.topicId : x.topic === t.topic));
        for (const p of t.partitions ?? []) {
          out.push({
            node: r.node,
            version: r.version,
            topic: name,
            topicId: t.topicId ?? ZERO_UUID,
            partition: p.partition!,
            fetchOffset: Number(p.fetchOffset),
            seq,
            errorCode: answered?.partitions.find((x) => x.partitionIndex === p.partition)?.errorCode,
            answeredAt: r.answeredAt,
          });
        }
      }
    });
    return out.filter(
      (f) =>
        (filter.node === undefined || f.node === filter.node) &&
        (filter.topic === undefined || f.topic === filter.topic) &&
        (filter.partition === undefined || f.partition === filter.partition),
    );
  }

  // IndexerUpstream

  async metadata(topics: readonly string[] | null): Promise<MetadataResponse> {
    this.requests.push({ node: -1, apiKey: ApiKey.Metadata, version: 12, body: { topics } });
    this.maybeFail(ApiKey.Metadata, -1);
    this.metadataAnswers++;
    const names = topics ?? [...this.topics.keys()];
    return {
      brokers: this.nodes.map((nodeId, i) => ({ nodeId, host: HOST, port: 9092 + i, rack: null })),
      controllerId: this.nodes[0]!,
      topics: names.map((name) => {
        const topic = this.topics.get(name);
        const hidden = this.hidden.get(name) ?? 0;
        if (hidden > 0) this.hidden.set(name, hidden - 1);
        if (!topic || hidden > 0) return { errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name, topicId: ZERO_UUID, partitions: [] };
        return {
          errorCode: ErrorCode.NONE,
          name,
          topicId: this.topicIds ? topic.id : ZERO_UUID,
          partitions: topic.partitions.map((p, partitionIndex) => ({
            errorCode: ErrorCode.NONE,
            partitionIndex,
            leaderId: p.metadataLeader ?? p.leader,
            leaderEpoch: 0,
            replicaNodes: [p.leader],
            isrNodes: [p.leader],
          })),
        };
      }),
    };
  }

  async broker(nodeId: number): Promise<UpstreamClient> {
    if (!this.nodes.includes(nodeId)) throw new Error(`the upstream names no broker with node id ${nodeId} in its Metadata`);
    const failures = this.connectFailures.get(nodeId) ?? 0;
    if (failures > 0) {
      this.connectFailures.set(nodeId, failures - 1);
      throw new Error(`connect ECONNREFUSED ${HOST}:${9092 + this.nodes.indexOf(nodeId)}`);
    }
    const client = {
      version: (apiKey: number) => {
        if (apiKey === ApiKey.Fetch) return this.fetchVersion;
        if (apiKey === ApiKey.ListOffsets) return 7;
        if (apiKey === ApiKey.DeleteRecords) return 2;
        throw new Error(`the scripted broker does not speak API ${apiKey}`);
      },
      request: (apiKey: number, version: number, body: unknown) => this.answer(nodeId, apiKey, version, body),
    };
    // The one cast: UpstreamClient is a class with private state; the indexer uses version() and request() only.
    return client as unknown as UpstreamClient;
  }

  dropBroker(nodeId: number): void {
    this.dropped.push(nodeId);
  }

  private maybeFail(apiKey: number, node: number): void {
    const fault = this.failing.find((f) => f.apiKey === apiKey && f.times > 0 && (f.node === undefined || f.node === node));
    if (!fault) return;
    fault.times--;
    throw new Error(`upstream ${HOST} closed the connection (scripted, api ${apiKey}, node ${node})`);
  }

  private async answer(node: number, apiKey: number, version: number, body: unknown): Promise<unknown> {
    const recorded: RecordedRequest = { node, apiKey, version, body };
    this.requests.push(recorded);
    this.maybeFail(apiKey, node);
    recorded.response = await this.respond(node, apiKey, version, body);
    recorded.answeredAt = this.requests.length;
    return recorded.response;
  }

  private async respond(node: number, apiKey: number, version: number, body: unknown): Promise<unknown> {
    switch (apiKey) {
      case ApiKey.Fetch:
        return this.fetch(node, version, body as BodyInit<FetchRequest>);
      case ApiKey.ListOffsets:
        return this.listOffsets(node, body as BodyInit<ListOffsetsRequest>);
      case ApiKey.DeleteRecords:
        return this.deleteRecords(node, body as BodyInit<DeleteRecordsRequest>);
      default:
        throw new Error(`the scripted broker does not answer API ${apiKey}`);
    }
  }

  private async fetch(node: number, version: number, body: BodyInit<FetchRequest>): Promise<FetchResponse> {
    let answer = this.fetchAnswer(node, version, body);
    if (!answer.hasNews) {
      // A long poll: wait for news, up to maxWaitMs.
      const news = new AbortController();
      this.waiters.push(() => news.abort());
      await this.clock.sleep(body.maxWaitMs ?? 500, news.signal);
      answer = this.fetchAnswer(node, version, body);
    }
    return answer.response;
  }

  private fetchAnswer(node: number, version: number, body: BodyInit<FetchRequest>): { response: FetchResponse; hasNews: boolean } {
    let hasNews = false;
    const responses = (body.topics ?? []).map((t) => {
      const topic = version >= 13 ? [...this.topics.values()].find((x) => x.id === t.topicId) : this.topics.get(t.topic ?? '');
      return {
        ...(version >= 13 ? { topicId: t.topicId ?? ZERO_UUID } : { topic: t.topic ?? '' }),
        partitions: (t.partitions ?? []).map((p): FetchResponsePartitionData => {
          const partitionIndex = p.partition ?? 0;
          const fail = (errorCode: number): FetchResponsePartitionData => {
            hasNews = true;
            return { partitionIndex, errorCode, highWatermark: -1n, lastStableOffset: -1n, logStartOffset: -1n, abortedTransactions: null, records: null };
          };
          const log = topic?.partitions[partitionIndex];
          if (!topic) return fail(version >= 13 ? ErrorCode.UNKNOWN_TOPIC_ID : ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
          if (!log) return fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
          if (log.leader !== node) return fail(ErrorCode.NOT_LEADER_OR_FOLLOWER);
          if (log.fetchError !== undefined) return fail(log.fetchError);
          const from = Number(p.fetchOffset ?? 0);
          if (from < log.logStart || from > log.end) return fail(ErrorCode.OFFSET_OUT_OF_RANGE);
          // Everything up to the high watermark, past the last stable offset too: the indexer
          // must stop at the last stable offset by itself.
          const limit = p.partitionMaxBytes ?? Infinity;
          const taken: FakeBatch[] = [];
          let bytes = 0;
          for (const b of log.batches) {
            if (b.last < from) continue;
            if (log.withholdFrom !== undefined && b.base >= log.withholdFrom) break;
            if (taken.length > 0 && bytes + b.bytes.length > limit) break;
            taken.push(b);
            bytes += b.bytes.length;
          }
          const upTo = taken.at(-1)?.last ?? -1;
          if (taken.some((b) => b.base < log.lastStable)) hasNews = true;
          return {
            partitionIndex,
            errorCode: ErrorCode.NONE,
            highWatermark: BigInt(log.end),
            lastStableOffset: BigInt(log.lastStable),
            logStartOffset: BigInt(log.logStart),
            abortedTransactions: log.aborted
              .filter((a) => a.first <= upTo && a.last >= from)
              .map((a) => ({ producerId: BigInt(a.producerId), firstOffset: BigInt(a.first) })),
            records: Buffer.concat(taken.map((b) => b.bytes)),
          };
        }),
      };
    });
    return { response: { throttleTimeMs: 0, errorCode: ErrorCode.NONE, sessionId: 0, responses }, hasNews };
  }

  private listOffsets(node: number, body: BodyInit<ListOffsetsRequest>): ListOffsetsResponse {
    return {
      throttleTimeMs: 0,
      topics: (body.topics ?? []).map((t) => ({
        name: t.name ?? '',
        partitions: (t.partitions ?? []).map((p) => {
          const partitionIndex = p.partitionIndex ?? 0;
          const log = this.topics.get(t.name ?? '')?.partitions[partitionIndex];
          const errorCode = !log ? ErrorCode.UNKNOWN_TOPIC_OR_PARTITION : log.leader !== node ? ErrorCode.NOT_LEADER_OR_FOLLOWER : ErrorCode.NONE;
          if (!log || errorCode !== ErrorCode.NONE) return { partitionIndex, errorCode, timestamp: -1n, offset: -1n };
          const earliest = BigInt(p.timestamp ?? -1) === -2n;
          const offset = earliest ? log.logStart : body.isolationLevel === 1 ? log.lastStable : log.end;
          return { partitionIndex, errorCode, timestamp: -1n, offset: BigInt(offset), leaderEpoch: 0 };
        }),
      })),
    };
  }

  private deleteRecords(node: number, body: BodyInit<DeleteRecordsRequest>): DeleteRecordsResponse {
    return {
      throttleTimeMs: 0,
      topics: (body.topics ?? []).map((t) => ({
        name: t.name ?? '',
        partitions: (t.partitions ?? []).map((p) => {
          const partitionIndex = p.partitionIndex ?? 0;
          const log = this.topics.get(t.name ?? '')?.partitions[partitionIndex];
          const offset = Number(p.offset ?? -1);
          let errorCode: number = ErrorCode.NONE;
          if (!log) errorCode = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION;
          else if (log.leader !== node) errorCode = ErrorCode.NOT_LEADER_OR_FOLLOWER;
          else if (this.deleteRecordsError !== undefined) errorCode = this.deleteRecordsError;
          else if (offset > log.end) errorCode = ErrorCode.OFFSET_OUT_OF_RANGE;
          if (!log || errorCode !== ErrorCode.NONE) return { partitionIndex, errorCode, lowWatermark: -1n };
          log.deleteBefore(offset < 0 ? log.end : offset);
          this.changed();
          return { partitionIndex, errorCode, lowWatermark: BigInt(log.logStart) };
        }),
      })),
    };
  }
}
