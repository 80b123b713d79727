/**
 * The proxy's own connections to upstream brokers, one per address: opened on first use, reused
 * while they live, and forgotten once they fail or close (or are dropped after a request on them
 * failed), so the next use opens a new one. Callers decide when to try again (backoff.ts).
 */
import type { HostPort } from '../proxy/broker-map.js';
import { UpstreamClient, type UpstreamClientOptions } from './client.js';

export const addressKey = (a: HostPort): string => `${a.host}:${a.port}`;

export class BrokerConnections {
  private readonly open = new Map<string, Promise<UpstreamClient>>();
  private closed = false;

  constructor(private readonly options: UpstreamClientOptions) {}

  /** A live connection to the address: the one open, or a new one. */
  get(address: HostPort): Promise<UpstreamClient> {
    if (this.closed) return Promise.reject(new Error('the upstream client is closed; no new connections'));
    const key = addressKey(address);
    const existing = this.open.get(key);
    if (existing) {
      return existing.then((c) => {
        if (!c.closed) return c;
        if (this.open.get(key) === existing) this.open.delete(key);
        return this.get(address);
      });
    }
    const opening = UpstreamClient.connect(address, this.options);
    this.open.set(key, opening);
    opening.catch(() => {
      if (this.open.get(key) === opening) this.open.delete(key);
    });
    return opening;
  }

  /** Whether a connection to the address is open or being opened. */
  has(address: HostPort): boolean {
    return this.open.has(addressKey(address));
  }

  /** Closes and forgets the address's connection (after a request on it failed); the next get opens another. */
  drop(address: HostPort): void {
    const key = addressKey(address);
    const pending = this.open.get(key);
    if (!pending) return;
    this.open.delete(key);
    pending.then(
      (c) => c.close(),
      () => undefined,
    );
  }

  close(): void {
    this.closed = true;
    for (const pending of this.open.values())
      pending.then(
        (c) => c.close(),
        () => undefined,
      );
    this.open.clear();
  }
}
