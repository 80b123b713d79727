/**
 * What a replica's carry passes may ask of the store (docs/carrying.md, "Pacing"). A pass
 * rewrites every survivor of its partition, and on a store that caps retention it does so every
 * carry age, whether or not clients wrote anything: left alone, it writes and reads as fast as
 * the store answers, within limits the application's own traffic shares (OCI Streaming's and
 * Event Hubs' per-partition and per-unit limits, a Kafka quota on kcompact's principal, the
 * brokers themselves), and the application's produce latency pays for it.
 *
 * Two things bound it, both here, where every request of a pass goes out:
 * - carryBytesPerSecond: a token bucket for what passes write (Produce) and one for what they
 *   read (Fetch), each at that rate, shared by every partition the replica carries. Stores
 *   quota the two directions apart, and a pass moves about the same bytes each way.
 * - the store's own throttle_time_ms: a broker that answers with one (KIP-219) expects the
 *   client to send it nothing before that time has passed, and mutes the connection meanwhile;
 *   the next request of any pass to that broker waits it out.
 */
import type { PacingStats } from '../api/engine-reports.js';
import type { CarryOptions } from '../api/engine-options.js';
import { MONOTONIC_CLOCK, type Clock } from '../../common/clock.js';
import { ApiKey, type ApiKeyNumber, type BodyInit, type RequestBodies, type ResponseBodies } from '../../protocol/messages.js';
import type { UpstreamClient } from '../../upstream/client.js';
import type { PartitionRequests } from '../indexer/partition-requests.js';
import type { ReusedBuffers } from '../../upstream/reused-buffers.js';
import { RUN_BYTES } from '../../protocol/carry/carried-batch.js';

/**
 * A pass's buckets hold a tenth of a second of the rate: its requests go out in small pieces
 * through the second, not as one burst the application's requests queue behind at the store.
 */
const PASS_BURST_SECONDS = 0.1;

/** Paced, what a carry batch's run or a read is cut to at least: below it per-request overhead dominates. */
const MIN_PACED_BYTES = 4 * 1024;

/** A long wait is slept in slices: Node's timers cannot take much more than 24 days, and a debt at a tiny rate can be longer. */
const MAX_SLEEP_MS = 60_000;

/**
 * Bytes per second over time, with a burst of `burstSeconds` of the rate. A take larger than the
 * burst waits for a full bucket and leaves it in debt, which later takes wait out: the average
 * holds whatever the sizes, and a batch never waits for more tokens than the bucket can hold.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;
  readonly burst: number;

  constructor(
    readonly bytesPerSecond: number,
    private readonly clock: Clock,
    burstSeconds = 1,
  ) {
    if (!(bytesPerSecond > 0)) throw new RangeError(`a token bucket needs a positive rate, got ${bytesPerSecond}`);
    this.burst = bytesPerSecond * burstSeconds;
    this.tokens = this.burst;
    this.last = clock.now();
  }

  /** How long a take of `bytes` would wait now (0: it goes at once). */
  delayMs(bytes: number): number {
    this.refill();
    const need = Math.min(bytes, this.burst);
    return this.tokens >= need ? 0 : Math.ceil(((need - this.tokens) * 1000) / this.bytesPerSecond);
  }

  /** Waits until `bytes` may go, then takes them; resolves how long it waited. `signal` ends the wait early (nothing is taken then). */
  async take(bytes: number, signal: AbortSignal): Promise<number> {
    const started = this.clock.now();
    for (let wait = this.delayMs(bytes); wait > 0; wait = this.delayMs(bytes)) {
      await this.clock.sleep(Math.min(wait, MAX_SLEEP_MS), signal);
      if (signal.aborted) return this.clock.now() - started;
    }
    this.tokens -= bytes;
    return this.clock.now() - started;
  }

  /** Takes bytes already moved (a read, whose size only its answer tells): the next take waits out any debt. */
  charge(bytes: number): void {
    this.refill();
    this.tokens -= bytes;
  }

  private refill(): void {
    const now = this.clock.now();
    if (now > this.last) this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) * this.bytesPerSecond) / 1000);
    this.last = now;
  }
}

/**
 * The first version of each API a pass sends whose throttle_time_ms the client must honor
 * (KIP-219); below it the broker delays its answer by the throttle itself, and waiting again
 * would throttle twice (Java's AbstractResponse.shouldClientThrottle).
 */
const CLIENT_THROTTLED_FROM: ReadonlyMap<number, number> = new Map([
  [ApiKey.Produce, 6],
  [ApiKey.Fetch, 8],
  [ApiKey.DeleteRecords, 1],
]);

/** bytesPerSecond (carryBytesPerSecond): 0 (or less) for no bound of kcompact's own. */
export interface CarryPacingOptions extends CarryOptions {
  /** Time for the buckets and the throttles (monotonic by default: a rate must not jump with the wall clock); tests run a pass's hours in no time. */
  clock?: Clock;
}

export class CarryPacing {
  readonly stats: PacingStats = { pacedMsTotal: 0, throttledMsTotal: 0, throttlesTotal: 0 };
  private readonly clock: Clock;
  private readonly writes: TokenBucket | undefined;
  private readonly reads: TokenBucket | undefined;
  /** By broker address: when the store lets this replica send to it again. */
  private readonly throttledUntil = new Map<string, number>();
  private readonly closing = new AbortController();

  constructor(opts: CarryPacingOptions) {
    this.clock = opts.clock ?? MONOTONIC_CLOCK;
    const rate = opts.bytesPerSecond > 0 ? opts.bytesPerSecond : 0;
    this.writes = rate > 0 ? new TokenBucket(rate, this.clock, PASS_BURST_SECONDS) : undefined;
    this.reads = rate > 0 ? new TokenBucket(rate, this.clock, PASS_BURST_SECONDS) : undefined;
  }

  /** carryBytesPerSecond; 0: unbounded. */
  get bytesPerSecond(): number {
    return this.writes?.bytesPerSecond ?? 0;
  }

  /**
   * How much one read of a pass asks for: about one burst. A read of `max` at a low rate would
   * move seconds of budget at once, which the application's requests would queue behind.
   */
  readBytes(max: number): number {
    // A store answers a read with at least the whole batch holding its offset (KIP-74), so a
    // carry batch's run still comes back in one read.
    return this.reads ? Math.min(max, Math.max(MIN_PACED_BYTES, Math.floor(this.reads.burst))) : max;
  }

  /** Where a pass cuts a run of copies into carry batches: paced, about one burst, so a write is one piece of the second. */
  runBytes(): number {
    return this.writes ? Math.min(RUN_BYTES, Math.max(MIN_PACED_BYTES, Math.floor(this.writes.burst))) : RUN_BYTES;
  }

  /**
   * A pass's requests to one broker, paced. `beforeSend` runs after any wait, right before the
   * request goes: what held when the pass decided to send may not hold after a long wait (the
   * carrier checks it still carries the partition).
   */
  over(client: UpstreamClient, beforeSend?: () => Promise<void>): PartitionRequests {
    const broker = `${client.address.host}:${client.address.port}`;
    return {
      version: (apiKey) => client.version(apiKey),
      request: async <K extends ApiKeyNumber>(
        apiKey: K,
        version: number,
        body: BodyInit<RequestBodies[K]>,
        frames?: ReusedBuffers,
        timeoutMs?: number,
      ): Promise<ResponseBodies[K]> => {
        await this.admit(broker, apiKey, body);
        await beforeSend?.();
        const answer = await client.request(apiKey, version, body, frames, timeoutMs);
        this.answered(broker, apiKey, version, answer);
        return answer;
      },
    };
  }

  /** Ends every wait at once: the replica is stopping, and a pass must not hold up its shutdown. */
  close(): void {
    this.closing.abort();
  }

  /** Waits for the broker's throttle, then for the bytes a Produce writes (or, before a Fetch, for the reads' debt). */
  private async admit(broker: string, apiKey: number, body: unknown): Promise<void> {
    const signal = this.closing.signal;
    const until = this.throttledUntil.get(broker);
    if (until !== undefined) {
      const wait = until - this.clock.now();
      if (wait > 0 && !signal.aborted) {
        const started = this.clock.now();
        await this.clock.sleep(wait, signal);
        this.stats.throttledMsTotal += this.clock.now() - started;
      }
      this.throttledUntil.delete(broker);
    }
    if (signal.aborted) return;
    if (apiKey === ApiKey.Produce && this.writes) {
      this.stats.pacedMsTotal += await this.writes.take(producedBytes(body as BodyInit<RequestBodies[typeof ApiKey.Produce]>), signal);
    } else if (apiKey === ApiKey.Fetch && this.reads) {
      this.stats.pacedMsTotal += await this.reads.take(0, signal);
    }
  }

  private answered(broker: string, apiKey: number, version: number, answer: unknown): void {
    if (apiKey === ApiKey.Fetch) this.reads?.charge(fetchedBytes(answer as ResponseBodies[typeof ApiKey.Fetch]));
    const throttleMs = (answer as { throttleTimeMs?: number }).throttleTimeMs ?? 0;
    const from = CLIENT_THROTTLED_FROM.get(apiKey);
    if (throttleMs <= 0 || from === undefined || version < from) return;
    this.stats.throttlesTotal++;
    const until = this.clock.now() + throttleMs;
    if (until > (this.throttledUntil.get(broker) ?? -Infinity)) this.throttledUntil.set(broker, until);
  }
}

function producedBytes(body: BodyInit<RequestBodies[typeof ApiKey.Produce]>): number {
  let n = 0;
  for (const t of body.topicData ?? []) for (const p of t?.partitionData ?? []) n += p?.records?.length ?? 0;
  return n;
}

function fetchedBytes(body: ResponseBodies[typeof ApiKey.Fetch]): number {
  let n = 0;
  for (const t of body.responses) for (const p of t.partitions) n += p.records?.length ?? 0;
  return n;
}
