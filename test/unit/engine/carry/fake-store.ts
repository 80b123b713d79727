/**
 * A store for carrier unit tests: a clock that sleeps at once, a broker answering Produce, Fetch
 * and DeleteRecords as a test asks, and a partition whose pass is its markers and its release.
 */
import type { Clock } from '../../../../src/common/clock.js';
import type { PartitionStore } from '../../../../src/engine/store/partition-store.js';
import type { StoreRegistry } from '../../../../src/engine/store/store-registry.js';
import { ErrorCode, ProtocolError } from '../../../../src/protocol/errors.js';
import { ApiKey } from '../../../../src/protocol/messages.js';
import type { UpstreamClient } from '../../../../src/upstream/client.js';

/** Time that moves only when something sleeps: a pass's hours in no time, every wait on record. */
export class FakeClock implements Clock {
  t = 1_000;
  slept: number[] = [];
  now(): number {
    return this.t;
  }
  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return;
    this.slept.push(ms);
    this.t += ms;
  }
}

/** What a fake broker was sent, when, and at which version. */
export interface Sent {
  broker: string;
  apiKey: number;
  version: number;
  at: number;
  bytes: number;
}

/** A broker answering Produce, Fetch and DeleteRecords, with the throttle_time_ms a test gives each answer in turn. */
export function fakeBroker(
  port: number,
  clock: Clock,
  sent: Sent[],
  opts: {
    throttles?: number[];
    fetchBytes?: number;
    versions?: Partial<Record<number, number>>;
    /** 'unlisted': the store does not offer DeleteRecords; a number: its answer's error code. */
    deleteRecords?: 'unlisted' | number;
  } = {},
) {
  const throttles = [...(opts.throttles ?? [])];
  const versions: Record<number, number> = { [ApiKey.Produce]: 11, [ApiKey.Fetch]: 16, [ApiKey.DeleteRecords]: 2, ...opts.versions };
  const client = {
    address: { host: 'store', port },
    version: (apiKey: number) => {
      if (apiKey === ApiKey.DeleteRecords && opts.deleteRecords === 'unlisted')
        throw new ProtocolError(`upstream store:${port} does not support API ${apiKey}`);
      return versions[apiKey]!;
    },
    request: async (apiKey: number, version: number, body: { topicData?: { partitionData: { records: Buffer }[] }[] }) => {
      const bytes = body.topicData?.[0]?.partitionData[0]?.records.length ?? 0;
      sent.push({ broker: `store:${port}`, apiKey, version, at: clock.now(), bytes });
      const throttleTimeMs = throttles.shift() ?? 0;
      switch (apiKey) {
        case ApiKey.Produce:
          return { throttleTimeMs, responses: [{ name: 't', partitionResponses: [{ index: 0, errorCode: 0, baseOffset: 7n, errorMessage: null }] }] };
        case ApiKey.Fetch:
          return {
            throttleTimeMs,
            errorCode: 0,
            responses: [{ topic: 't', partitions: [{ partitionIndex: 0, errorCode: 0, records: Buffer.alloc(opts.fetchBytes ?? 100, 1) }] }],
          };
        case ApiKey.DeleteRecords:
          return {
            throttleTimeMs,
            topics: [
              {
                name: 't',
                partitions: [{ partitionIndex: 0, lowWatermark: 5n, errorCode: typeof opts.deleteRecords === 'number' ? opts.deleteRecords : ErrorCode.NONE }],
              },
            ],
          };
        default:
          throw new Error(`unexpected api ${apiKey}`);
      }
    },
  };
  return client as unknown as UpstreamClient;
}

/**
 * A partition whose cleaned part holds no row, so that a pass is its start marker, its end marker
 * and the release: enough to see where the carrier's requests go out. The index "reads back" the
 * pass when the store is sent its end marker.
 */
export function emptyPartition() {
  const store = {
    id: { topic: 't', partition: 0 },
    checkpoint: { firstDirty: 50, logStartOffset: 0, topicId: '', nextOffset: 60 },
    carry: { pass: -1, passEnd: -1, passRelease: -1, passTime: -1, topicStart: -1, openPass: -1, openRelease: -1, openTime: -1 },
    topicStart: 0,
    knowsTopicStart: () => true,
    get behindStore(): boolean {
      const cp = this.checkpoint as { nextOffset: number; lastStableOffset?: number };
      return cp.nextOffset < (cp.lastStableOffset ?? 0);
    },
    isOpen: true,
    carriedRows: () => [],
    dropBelow: () => false,
  };
  const registry = { get: () => store, publish: () => undefined };
  return { store: store as unknown as PartitionStore, registry: registry as unknown as StoreRegistry, raw: store };
}

/** A broker for a whole pass: Produce answers offsets 100, 101, ... and the second one is the end marker. */
export function passBroker(
  clock: FakeClock,
  sent: Sent[],
  raw: ReturnType<typeof emptyPartition>['raw'],
  throttles: number[],
  deleteRecords?: 'unlisted' | number,
) {
  const inner = fakeBroker(1, clock, sent, { throttles, ...(deleteRecords !== undefined && { deleteRecords }) });
  return producingFrom100(inner, () => (raw.carry = { ...raw.carry, pass: 100, passEnd: 101, passRelease: 50 }));
}

/** `inner` with its Produce answering offsets 100, 101, ...; `endWritten` runs when the second (a pass's end marker) is written. */
export function producingFrom100(inner: ReturnType<typeof fakeBroker>, endWritten: () => void): UpstreamClient {
  let produced = 0;
  return {
    address: inner.address,
    version: (apiKey: number) => inner.version(apiKey),
    request: async (apiKey: number, version: number, body: never) => {
      const answer = (await inner.request(apiKey as never, version, body)) as { responses?: { partitionResponses: { baseOffset: bigint }[] }[] };
      if (apiKey === ApiKey.Produce) {
        answer.responses![0]!.partitionResponses[0]!.baseOffset = BigInt(100 + produced);
        if (++produced === 2) endWritten();
      }
      return answer;
    },
  } as unknown as UpstreamClient;
}
