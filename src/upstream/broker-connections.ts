/**
 * The proxy's own connections to upstream brokers, one per address and lane: opened on first
 * use, reused while they live, and forgotten once they fail or close (or are dropped after a
 * request on them failed), so the next use opens a new one. Callers decide when to try again
 * (backoff.ts).
 *
 * A broker handles a connection's requests one at a time, so a slow request holds up every
 * request behind it on that connection. Admin requests (CreateTopics and DeleteTopics wait for
 * the controller, up to the client's timeout) therefore get a lane of their own, as franz-go
 * keeps separate connections per kind of request: the fetch view's reads and the produce guard's
 * lookups never queue behind them.
 */
import type { HostPort } from '../common/host-port.js';
import { UpstreamClient, type UpstreamClientOptions } from './client.js';

export const addressKey = (a: HostPort): string => `${a.host}:${a.port}`;

/**
 * Which connection to a broker a request takes. A broker answers a connection's requests one at
 * a time, so a request that may wait long has a lane of its own, away from the short ones on
 * `main`: `admin` for administrative requests and a carry pass's reads and writes, `group` for
 * the carrier group's JoinGroup, which the coordinator holds until the group rebalanced, and the
 * indexer's two fetch loops: `follow`, its long polls, and `catch-up`, its reads of partitions
 * behind the store, which those long polls would hold up.
 */
export type Lane = 'main' | 'admin' | 'group' | 'follow' | 'catch-up';

const LANES: readonly Lane[] = ['main', 'admin', 'group', 'follow', 'catch-up'];
const laneKey = (a: HostPort, lane: Lane): string => `${lane} ${addressKey(a)}`;

export class BrokerConnections {
  private readonly open = new Map<string, Promise<UpstreamClient>>();
  private closed = false;
  /**
   * Callers waiting for a connection being opened, stopped by close(): a broker that accepts and
   * never answers holds the connect and its ApiVersions for their whole timeouts, and shutdown
   * must not wait for them.
   */
  private readonly waiting = new Set<(err: Error) => void>();

  constructor(private readonly options: UpstreamClientOptions) {}

  /** A live connection to the address in the lane: the one open, or a new one. */
  get(address: HostPort, lane: Lane = 'main'): Promise<UpstreamClient> {
    if (this.closed) return Promise.reject(new Error('the upstream client is closed; no new connections'));
    return new Promise((resolve, reject) => {
      this.waiting.add(reject);
      void this.connection(address, lane)
        .then(resolve, reject)
        .finally(() => this.waiting.delete(reject));
    });
  }

  private connection(address: HostPort, lane: Lane): Promise<UpstreamClient> {
    const key = laneKey(address, lane);
    const existing = this.open.get(key);
    if (existing) {
      return existing.then((c) => {
        if (!c.closed) return c;
        if (this.open.get(key) === existing) this.open.delete(key);
        return this.get(address, lane);
      });
    }
    const opening = UpstreamClient.connect(address, this.options);
    this.open.set(key, opening);
    opening.catch(() => {
      if (this.open.get(key) === opening) this.open.delete(key);
    });
    return opening;
  }

  /** Whether a connection to the address is open or being opened, in any lane. */
  has(address: HostPort): boolean {
    return LANES.some((lane) => this.open.has(laneKey(address, lane)));
  }

  /** Closes and forgets the address's connections (after a request to it failed); the next get opens another. */
  drop(address: HostPort): void {
    for (const lane of LANES) {
      const key = laneKey(address, lane);
      const pending = this.open.get(key);
      if (!pending) continue;
      this.open.delete(key);
      pending.then(
        (c) => c.close(),
        () => undefined,
      );
    }
  }

  close(): void {
    this.closed = true;
    for (const stop of this.waiting) stop(new Error('the upstream client closed while connecting'));
    this.waiting.clear();
    for (const pending of this.open.values())
      pending.then(
        (c) => c.close(),
        () => undefined,
      );
    this.open.clear();
  }
}
