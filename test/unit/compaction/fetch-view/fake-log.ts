/**
 * Test doubles for the fetch view: a partition log of real v2 batches served the way Kafka's
 * broker serves it (from the batch holding the fetch offset, cut at the byte limit, at least one
 * batch), an index view over a declared survivor set, a topic config view, and a round trip that
 * runs a Fetch through the view (in a FilterHarness) and this fake upstream.
 */
import { Attributes, decodeRecords, encodeBatch, iterateBatches, verifyCrc, type RecordInput } from '../../../../src/protocol/records/batch.js';
import {
  ApiKey,
  type ApiKeyOf,
  type BodyInit,
  type FetchRequest,
  type FetchResponse,
  type FetchResponseAbortedTransaction,
  encodeRequestFrame,
} from '../../../../src/protocol/messages.js';
import type { Filter } from '../../../../src/proxy/filter/filter.js';
import type { IndexView, LogEnd, PartitionIndexView, CarriedSnapshot } from '../../../../src/engine/api/index-view.js';
import type { TopicConfigView, TopicPolicy } from '../../../../src/engine/api/topic-policy.js';
import type { PartitionRead, PartitionRecords, StoreBounds, UpstreamRead, UpstreamReads } from '../../../../src/compaction/fetch-view/upstream-reads.js';
import { createLogger } from '../../../../src/common/log.js';
import { FilterHarness, type RequestRun } from '../../../support/filter-harness.js';

type Fetch = ApiKeyOf<'Fetch'>;

export const log = createLogger({ component: 'test' });

export interface BatchSpec {
  count: number;
  codec?: number;
  producerId?: bigint;
  transactional?: boolean;
  /** A transaction marker: 0 abort, 1 commit. */
  marker?: 0 | 1;
  /** Offset gaps inside the batch, as a compacting broker leaves them: keep only these deltas. */
  deltas?: number[];
  valueSize?: number;
}

export interface StoredBatch {
  bytes: Buffer;
  base: number;
  last: number;
}

export function recordsFor(base: number, deltas: number[], valueSize: number): RecordInput[] {
  return deltas.map((d) => ({
    timestampDelta: d,
    offsetDelta: d,
    key: Buffer.from(`key-${(base + d) % 7}`),
    value: Buffer.from(`value-${base + d}-`.padEnd(valueSize, 'x')),
    headers: (base + d) % 3 === 0 ? [{ key: Buffer.from('h'), value: Buffer.from(`${base + d}`) }] : [],
  }));
}

function markerRecord(type: 0 | 1): RecordInput {
  const key = Buffer.alloc(4);
  key.writeInt16BE(0, 0);
  key.writeInt16BE(type, 2);
  const value = Buffer.alloc(6);
  value.writeInt16BE(0, 0);
  value.writeInt32BE(3, 2);
  return { timestampDelta: 0, offsetDelta: 0, key, value };
}

export class FakeLog {
  readonly batches: StoredBatch[] = [];
  /** Aborted transactions with the offset of their abort marker. */
  readonly aborted: { producerId: bigint; firstOffset: bigint; markerOffset: number }[] = [];
  logStart = 0;

  get end(): number {
    return this.batches.length ? this.batches[this.batches.length - 1]!.last + 1 : 0;
  }

  async append(spec: BatchSpec): Promise<StoredBatch> {
    const base = this.end;
    const marker = spec.marker !== undefined;
    const deltas = spec.deltas ?? Array.from({ length: marker ? 1 : spec.count }, (_, i) => i);
    const lastDelta = spec.deltas ? spec.count - 1 : deltas[deltas.length - 1]!;
    let attributes = 0;
    if (spec.transactional || marker) attributes |= Attributes.transactional;
    if (marker) attributes |= Attributes.control;
    const records = marker ? [markerRecord(spec.marker!)] : recordsFor(base, deltas, spec.valueSize ?? 40);
    const bytes = await encodeBatch(
      {
        baseOffset: BigInt(base),
        partitionLeaderEpoch: 4,
        attributes,
        lastOffsetDelta: lastDelta,
        baseTimestamp: 1_700_000_000_000n,
        maxTimestamp: 1_700_000_000_000n + BigInt(lastDelta),
        producerId: spec.producerId ?? -1n,
        producerEpoch: spec.producerId === undefined ? -1 : 2,
        baseSequence: spec.producerId === undefined ? -1 : base,
      },
      records,
      marker ? 0 : (spec.codec ?? 0),
    );
    const stored = { bytes, base, last: base + lastDelta };
    this.batches.push(stored);
    return stored;
  }

  /** Kafka's read: from the batch holding `offset`, `maxBytes` of the log (one batch at least). */
  read(offset: number, maxBytes: number, minOneBatch: boolean): Buffer {
    const start = this.batches.findIndex((b) => b.last >= offset);
    if (start < 0 || offset >= this.end) return Buffer.alloc(0);
    const all = Buffer.concat(this.batches.slice(start).map((b) => b.bytes));
    const first = this.batches[start]!.bytes.length;
    return all.subarray(0, Math.min(all.length, Math.max(maxBytes, minOneBatch ? first : 0)));
  }

  /** What Kafka lists for a fetch: aborted transactions overlapping [offset, end). */
  abortedFrom(offset: number): FetchResponseAbortedTransaction[] {
    return this.aborted.filter((t) => t.markerOffset >= offset).map((t) => ({ producerId: t.producerId, firstOffset: t.firstOffset }));
  }
}

export class FakeIndex implements PartitionIndexView {
  private sorted: number[];

  constructor(
    survivors: Iterable<number>,
    public horizon: number,
  ) {
    this.sorted = [...survivors].sort((a, b) => a - b);
  }

  setSurvivors(survivors: Iterable<number>): void {
    this.sorted = [...survivors].sort((a, b) => a - b);
  }

  cleanedUpTo(): number {
    return this.horizon;
  }

  /** What a carry pass left, as the index knows it (none unless a test sets it). */
  carry: CarriedSnapshot | undefined;

  carried(): CarriedSnapshot | undefined {
    return this.carry;
  }

  /** Where the log ends for clients, as the worker would say (none unless a test sets it). */
  logEnd: LogEnd | undefined;

  end(): LogEnd | undefined {
    return this.logEnd;
  }

  survivors(from: number, to: number): Float64Array {
    const end = Math.min(to, this.horizon);
    const out: number[] = [];
    for (let i = this.firstAtOrAfter(from); i < this.sorted.length && this.sorted[i]! < end; i++) out.push(this.sorted[i]!);
    return Float64Array.from(out);
  }

  survivorCount(from: number, to: number): number {
    return this.survivors(from, to).length;
  }

  nextVisible(offset: number): number {
    const next = this.sorted[this.firstAtOrAfter(offset)];
    return next !== undefined && next < this.horizon ? next : this.horizon;
  }

  private firstAtOrAfter(offset: number): number {
    let lo = 0;
    let hi = this.sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.sorted[mid]! < offset) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

export const POLICY: TopicPolicy = {
  compact: true,
  delete: false,
  deleteRetentionMs: 86_400_000,
  minCompactionLagMs: 0,
  maxCompactionLagMs: Number.MAX_SAFE_INTEGER,
  minCleanableDirtyRatio: 0.5,
  segmentMs: 604_800_000,
  segmentBytes: 1 << 30,
  retentionMs: -1,
  retentionBytes: -1,
  storeRetentionMs: -1,
  carryAfterMs: -1,
};

export function configView(compacted: string[]): TopicConfigView {
  const set = new Set(compacted);
  return { compacted: (t) => (set.has(t) ? POLICY : undefined), compactedTopics: () => [...set], onChange: () => () => undefined };
}

/** Partitions' indexes; `caughtUp` answers whether one has read the store (default: at once, yes); `used` records the uses. */
export function indexView(partitions: Record<string, FakeIndex>, caughtUp: IndexView['caughtUp'] = async () => true, uses: string[] = []): IndexView {
  return {
    partition: (topic, partition) => partitions[`${topic}-${partition}`],
    caughtUp,
    used: (topic, partition) => void uses.push(`${topic}-${partition}`),
  };
}

/** A fake upstream broker over FakeLogs keyed "topic-partition"; topic ids map to names. */
export class FakeUpstream implements UpstreamReads {
  reads: PartitionRead[] = [];
  /** Reads given back; their records are overwritten then, as a reused buffer would be. */
  released = 0;
  /** How many reads had been given back when each read was made. */
  releasedAtRead: number[] = [];
  /** The Fetch requests the upstream received, as it read them. */
  forwarded: FetchRequest[] = [];
  resolved: string[][] = [];

  constructor(
    readonly logs: Record<string, FakeLog>,
    readonly ids: Record<string, string> = {},
    readonly onResolve?: (ids: string[]) => void,
  ) {}

  partitionData(topic: string, partition: number, offset: number, maxBytes: number, minOneBatch: boolean, isolation: number): PartitionRecords {
    const log = this.logs[`${topic}-${partition}`];
    if (!log) return { errorCode: 3, highWatermark: -1n, lastStableOffset: -1n, logStartOffset: -1n, abortedTransactions: null, records: null };
    if (offset > log.end || offset < log.logStart) {
      return {
        errorCode: 1,
        highWatermark: BigInt(log.end),
        lastStableOffset: BigInt(log.end),
        logStartOffset: BigInt(log.logStart),
        abortedTransactions: null,
        records: null,
      };
    }
    return {
      errorCode: 0,
      highWatermark: BigInt(log.end),
      lastStableOffset: BigInt(log.end),
      logStartOffset: BigInt(log.logStart),
      abortedTransactions: isolation === 1 ? log.abortedFrom(offset) : null,
      records: log.read(offset, maxBytes, minOneBatch),
    };
  }

  async readPartition(read: PartitionRead): Promise<UpstreamRead> {
    this.reads.push(read);
    this.releasedAtRead.push(this.released);
    const data = this.partitionData(read.topic, read.partition, read.fetchOffset, read.maxBytes, true, read.isolationLevel);
    let given = false;
    return {
      ...data,
      release: () => {
        if (given) throw new Error(`the read at ${read.fetchOffset} was given back twice`);
        given = true;
        this.released++;
        data.records?.fill(0xee);
      },
    };
  }

  async bounds(topic: string, partition: number): Promise<StoreBounds> {
    const log = this.logs[`${topic}-${partition}`];
    if (!log) throw new Error(`no log ${topic}-${partition}`);
    return { logStart: BigInt(log.logStart), highWatermark: BigInt(log.end), lastStable: BigInt(log.end) };
  }

  async resolveTopicIds(ids: string[]): Promise<void> {
    this.resolved.push(ids);
    this.onResolve?.(ids);
  }

  /** Answers a forwarded Fetch request as a broker would. */
  answer(body: FetchRequest, version: number): BodyInit<FetchResponse> {
    this.forwarded.push(body);
    let left = body.maxBytes;
    let first = true;
    const responses = body.topics.map((t) => {
      const name = version >= 13 ? (this.ids[t.topicId ?? ''] ?? '?') : (t.topic ?? '?');
      return {
        topic: t.topic,
        topicId: t.topicId,
        partitions: t.partitions.map((p) => {
          const data = this.partitionData(
            name,
            p.partition,
            Number(p.fetchOffset),
            Math.min(p.partitionMaxBytes, Math.max(left, 0)),
            first,
            body.isolationLevel,
          );
          const size = data.records?.length ?? 0;
          if (size > 0) first = false;
          left -= size;
          return { partitionIndex: p.partition, ...data };
        }),
      };
    });
    return { throttleTimeMs: 0, errorCode: 0, sessionId: 0, responses };
  }
}

export interface FetchSpec {
  version?: number;
  clientId?: string;
  maxWaitMs?: number;
  minBytes?: number;
  maxBytes?: number;
  isolationLevel?: number;
  sessionId?: number;
  sessionEpoch?: number;
  topics: { topic: string; topicId?: string; partitions: { partition: number; fetchOffset: number; partitionMaxBytes?: number }[] }[];
}

export interface RoundTrip {
  /** What the view did with the request. */
  run: RequestRun<Fetch>;
  /** The request the upstream received (throws when the view answered it itself). */
  readonly forwarded: FetchRequest;
  /** What the client received. */
  response: FetchResponse;
  clientFrame: Buffer;
  /** Whether the client got other bytes than the upstream answered (false when answered by the view). */
  responseChanged: boolean;
}

let correlation = 1;

export function fetchBody(spec: FetchSpec): BodyInit<FetchRequest> {
  return {
    replicaId: -1,
    maxWaitMs: spec.maxWaitMs ?? 500,
    minBytes: spec.minBytes ?? 1,
    maxBytes: spec.maxBytes ?? 50 * 1024 * 1024,
    isolationLevel: spec.isolationLevel ?? 0,
    sessionId: spec.sessionId ?? 0,
    sessionEpoch: spec.sessionEpoch ?? -1,
    topics: spec.topics.map((t) => ({
      topic: t.topic,
      topicId: t.topicId,
      partitions: t.partitions.map((p) => ({
        partition: p.partition,
        currentLeaderEpoch: -1,
        fetchOffset: BigInt(p.fetchOffset),
        lastFetchedEpoch: -1,
        logStartOffset: -1n,
        partitionMaxBytes: p.partitionMaxBytes ?? 1024 * 1024,
      })),
    })),
    forgottenTopicsData: [],
    rackId: '',
  };
}

export function fetchFrame(spec: FetchSpec): Buffer {
  const version = spec.version ?? 12;
  return encodeRequestFrame(
    { apiKey: ApiKey.Fetch, apiVersion: version, correlationId: correlation++, clientId: spec.clientId ?? 'test-client' },
    fetchBody(spec),
  );
}

/**
 * One Fetch through the view and the fake upstream, as the proxy's connection runs it. The view
 * plans the request before this returns its promise, as it does before the connection reads on.
 */
export async function roundTrip(view: Filter, upstream: FakeUpstream, spec: FetchSpec): Promise<RoundTrip> {
  const harness = new FilterHarness(view);
  const run = await harness.request(ApiKey.Fetch, spec.version ?? 12, fetchBody(spec), {
    correlationId: correlation++,
    clientId: spec.clientId ?? 'test-client',
  });
  if (run.kind === 'close') throw new Error(`the view closed the connection: ${run.reason}`);
  if (run.kind === 'respond') {
    return {
      run,
      get forwarded(): FetchRequest {
        throw new Error('the view answered the request itself: nothing was forwarded');
      },
      response: run.body,
      clientFrame: run.frame,
      responseChanged: false,
    };
  }
  const client = await run.respond(upstream.answer(run.body, run.upstreamVersion));
  if (client.kind === 'close') throw new Error(`the view closed the connection: ${client.reason}`);
  return { run, forwarded: run.body, response: client.body, clientFrame: client.frame, responseChanged: client.changed };
}

export interface SeenRecord {
  offset: number;
  key: string | null;
  value: string | null;
}

/** What a strict client reads from a partition's records: CRCs and counts checked. */
export async function readBatches(
  records: Buffer | null,
): Promise<{ batches: { base: number; last: number; count: number; attributes: number }[]; records: SeenRecord[]; tail: number }> {
  const walk = iterateBatches(records ?? Buffer.alloc(0));
  const seen: SeenRecord[] = [];
  for (const b of walk.batches) {
    if (!verifyCrc(records!, b)) throw new Error(`batch at ${b.baseOffset} fails its CRC`);
    for (const r of await decodeRecords(records!, b)) {
      if (b.isControl) continue;
      seen.push({ offset: Number(b.baseOffset) + r.offsetDelta, key: r.key?.toString() ?? null, value: r.value?.toString() ?? null });
    }
  }
  return {
    batches: walk.batches.map((b) => ({
      base: Number(b.baseOffset),
      last: Number(b.baseOffset) + b.lastOffsetDelta,
      count: b.recordCount,
      attributes: b.attributes,
    })),
    records: seen,
    tail: walk.truncatedTail.length,
  };
}
