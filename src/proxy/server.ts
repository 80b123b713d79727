/**
 * The proxy: a bootstrap listener that reaches any upstream broker, plus one listener per
 * upstream broker on a port derived from its node id, opened as brokers are discovered.
 */
import net from 'node:net';
import type { Logger } from '../ops/log.js';
import { ApiKey } from '../protocol/messages.js';
import { UpstreamClient } from '../upstream/client.js';
import { BrokerMap, type HostPort } from './broker-map.js';
import { ProxyConnection } from './connection.js';
import { TopicIds } from './topic-ids.js';
import type { Interceptors } from './interceptor.js';

export interface ProxyOptions {
  listen: HostPort;
  upstream: HostPort[];
  advertisedHost: string;
  brokerPortBase: number;
  maxFrameBytes: number;
  requestTimeoutMs: number;
  log: Logger;
  interceptors?: Interceptors;
  /** The topic id map, when features built before the server share it. */
  topics?: TopicIds;
}

const DISCOVERY_RETRY_MS = 2_000;

export class ProxyServer {
  readonly brokers: BrokerMap;
  readonly topics: TopicIds;
  private readonly servers = new Map<number | 'bootstrap', net.Server>();
  private readonly connections = new Set<ProxyConnection>();
  private discovering: Promise<void> | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(private readonly opts: ProxyOptions) {
    this.topics = opts.topics ?? new TopicIds();
    this.brokers = new BrokerMap({
      advertisedHost: opts.advertisedHost,
      brokerPortBase: opts.brokerPortBase,
      onNewNode: (nodeId) => this.openBrokerListener(nodeId),
    });
  }

  /** Where the bootstrap listener is bound (the actual port when 0 was asked for). */
  get address(): HostPort {
    const addr = this.servers.get('bootstrap')?.address();
    if (!addr || typeof addr === 'string') throw new Error('proxy is not listening');
    return { host: addr.address, port: addr.port };
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  bufferedBytes(): number {
    let total = 0;
    for (const conn of this.connections) total += conn.bufferedBytes;
    return total;
  }

  async start(): Promise<void> {
    await this.listen('bootstrap', this.opts.listen.port, async () => this.opts.upstream);
    try {
      await this.discover();
    } catch (err) {
      // The upstream may come up after the proxy (pod start order): keep trying in the background.
      this.opts.log.warn('upstream broker discovery failed, retrying', { err, retryMs: DISCOVERY_RETRY_MS });
      this.scheduleDiscovery();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    const closing = [...this.servers.values()].map((s) => new Promise<void>((resolve) => s.close(() => resolve())));
    for (const conn of this.connections) conn.close('proxy stopping');
    await Promise.all(closing);
    this.servers.clear();
  }

  /** Learns the upstream's brokers with a Metadata request on the proxy's own connection. */
  discover(): Promise<void> {
    this.discovering ??= this.discoverOnce().finally(() => {
      this.discovering = null;
    });
    return this.discovering;
  }

  private async discoverOnce(): Promise<void> {
    let lastErr: unknown;
    for (const address of this.opts.upstream) {
      let client: UpstreamClient | undefined;
      try {
        client = await UpstreamClient.connect(address, {
          clientId: 'kcompact-discovery',
          maxFrameBytes: this.opts.maxFrameBytes,
          requestTimeoutMs: this.opts.requestTimeoutMs,
        });
        const version = client.version(ApiKey.Metadata);
        const metadata = await client.request(ApiKey.Metadata, version, { topics: [], allowAutoTopicCreation: false });
        for (const b of metadata.brokers) this.brokers.learn(b.nodeId, b.host, b.port);
        this.opts.log.info('upstream brokers discovered', {
          upstream: `${address.host}:${address.port}`,
          brokers: metadata.brokers.map((b: { nodeId: number; host: string; port: number }) => ({
            nodeId: b.nodeId,
            upstream: `${b.host}:${b.port}`,
            local: `${this.opts.advertisedHost}:${this.brokers.localPort(b.nodeId)}`,
          })),
        });
        return;
      } catch (err) {
        lastErr = err;
      } finally {
        client?.close();
      }
    }
    throw lastErr ?? new Error('no upstream configured');
  }

  private scheduleDiscovery(): void {
    if (this.stopped || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.discover().catch((err) => {
        this.opts.log.warn('upstream broker discovery failed, retrying', { err, retryMs: DISCOVERY_RETRY_MS });
        this.scheduleDiscovery();
      });
    }, DISCOVERY_RETRY_MS);
    this.retryTimer.unref();
  }

  private openBrokerListener(nodeId: number): void {
    if (this.stopped || this.servers.has(nodeId)) return;
    const port = this.brokers.localPort(nodeId);
    this.listen(nodeId, port, async () => {
      let address = this.brokers.upstreamOf(nodeId);
      if (!address) {
        await this.discover();
        address = this.brokers.upstreamOf(nodeId);
      }
      if (!address) throw new Error(`upstream has no broker with node id ${nodeId}`);
      return [address];
    }).catch((err) => {
      this.opts.log.error('cannot open the listener for an upstream broker; clients will not reach it', {
        nodeId,
        listen: `${this.opts.listen.host}:${port}`,
        err,
        fix: 'free the port or choose another --broker-port-base',
      });
    });
  }

  private listen(key: number | 'bootstrap', port: number, upstream: () => Promise<HostPort[]>): Promise<void> {
    const server = net.createServer((socket) => {
      const conn = new ProxyConnection(socket, {
        log: this.opts.log,
        maxFrameBytes: this.opts.maxFrameBytes,
        rewrite: { brokers: this.brokers, topics: this.topics },
        upstream,
        interceptors: this.opts.interceptors,
        onClose: (c) => this.connections.delete(c),
      });
      if (!conn.isClosed) this.connections.add(conn);
    });
    this.servers.set(key, server);
    return new Promise((resolve, reject) => {
      server.once('error', (err) => {
        this.servers.delete(key);
        reject(err);
      });
      server.listen({ host: this.opts.listen.host, port }, () => {
        server.removeAllListeners('error');
        server.on('error', (err) => this.opts.log.error('listener error', { port, err }));
        this.opts.log.info('listening', { role: key === 'bootstrap' ? 'bootstrap' : `broker ${key}`, address: `${this.opts.listen.host}:${port}` });
        resolve();
      });
    });
  }
}
