/**
 * The proxy: a bootstrap listener that reaches any upstream broker, plus one listener per
 * upstream broker on a port derived from its node id, opened as brokers are discovered. With
 * TLS settings every listener speaks TLS with the same certificate.
 */
import net from 'node:net';
import { SYSTEM_CLOCK } from '../common/clock.js';
import type { Logger } from '../common/log.js';
import { ProxyMeter } from './proxy-meter.js';
import { type HostPort } from '../common/host-port.js';
import { BrokerMap } from './broker-map.js';
import { ProxyConnection } from './connection.js';
import { TopicIds } from './topic-ids.js';
import { FilterChain } from './filter/filter-chain.js';
import type { Filter } from './filter/filter.js';
import { apiVersionsFilter } from './filters/api-versions-filter.js';
import { saslHandshakeFilter } from './filters/sasl-handshake-filter.js';
import { fetchVersionFilter } from './filters/fetch-version-filter.js';
import { topicIdFilter } from './filters/topic-id-filter.js';
import { brokerAddressFilter } from './filters/broker-address-filter.js';
import { ListenerTls, type ListenerTlsSettings } from './listener-tls.js';
import { UpstreamConnector } from '../upstream/upstream-connector.js';
import { UpstreamClusterClient } from '../upstream/upstream-cluster-client.js';
import { NoBrokerAnswered } from '../upstream/error-class.js';
import { backoffMs } from '../upstream/backoff.js';
import { LogThrottle } from '../common/log-throttle.js';

export interface ProxyOptions {
  listen: HostPort;
  upstream: HostPort[];
  advertisedHost: string;
  brokerPortBase: number;
  maxFrameBytes: number;
  requestTimeoutMs: number;
  log: Logger;
  /** The features' filters (compaction's), run between the proxy's own in this order. */
  filters?: readonly Filter[];
  /** The topic id map, when features built before the server share it. */
  topics?: TopicIds;
  /** Where traffic figures go (an unexported meter when omitted). */
  meter?: ProxyMeter;
  /** TLS on the client listeners; plain TCP when omitted. */
  tls?: ListenerTlsSettings;
  /** How upstream connections are made (TLS, the discovery client's SASL); plain TCP when omitted. */
  connector?: UpstreamConnector;
  /** The proxy's upstream client, which discovery and the filters' own requests use; the server opens its own when omitted. */
  upstreamClient?: UpstreamClusterClient;
}

/** Retries of a discovery that failed, by the backoff rule: soon at first, every two seconds at most. */
const DISCOVERY_BACKOFF = { baseMs: 500, maxMs: 2_000 };

export class ProxyServer {
  readonly brokers: BrokerMap;
  readonly topics: TopicIds;
  readonly meter: ProxyMeter;
  readonly chain: FilterChain;
  private readonly servers = new Map<number | 'bootstrap', net.Server>();
  private readonly connections = new Set<ProxyConnection>();
  private readonly tls: ListenerTls | undefined;
  private readonly connector: UpstreamConnector;
  private readonly upstream: UpstreamClusterClient;
  private discoveryFailures = 0;
  private readonly throttle = new LogThrottle();
  private discovering: Promise<void> | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private stopped = false;
  private closing: Promise<void> | null = null;
  /** Set while drain() waits: called when the last connection has closed. */
  private onDrained: (() => void) | null = null;

  constructor(private readonly opts: ProxyOptions) {
    this.topics = opts.topics ?? new TopicIds();
    this.meter = opts.meter ?? new ProxyMeter();
    this.tls = opts.tls ? new ListenerTls(opts.tls, opts.log) : undefined;
    this.connector = opts.connector ?? UpstreamConnector.plaintext;
    this.upstream =
      opts.upstreamClient ??
      new UpstreamClusterClient({
        bootstrap: opts.upstream,
        clientId: 'kcompact-discovery',
        maxFrameBytes: opts.maxFrameBytes,
        requestTimeoutMs: opts.requestTimeoutMs,
        connector: this.connector,
        log: opts.log,
      });
    this.brokers = new BrokerMap({
      advertisedHost: opts.advertisedHost,
      brokerPortBase: opts.brokerPortBase,
      onNewNode: (nodeId) => this.openBrokerListener(nodeId),
    });
    // Nearest the client first. The proxy's address and topic-id filters sit nearest the
    // upstream, so every feature sees the addresses clients will see and the ids just learned.
    this.chain = new FilterChain([
      apiVersionsFilter,
      saslHandshakeFilter,
      ...(opts.filters ?? []),
      fetchVersionFilter,
      topicIdFilter(this.topics),
      brokerAddressFilter(this.brokers),
    ]);
  }

  /** Where the bootstrap listener is bound (the actual port when 0 was asked for). */
  get address(): HostPort {
    const addr = this.servers.get('bootstrap')?.address();
    if (!addr || typeof addr === 'string') throw new Error('proxy is not listening');
    return { host: addr.address, port: addr.port };
  }

  /** Whether the bootstrap listener and a listener for every known upstream broker are up. */
  get listening(): boolean {
    if (!this.servers.get('bootstrap')?.listening) return false;
    return this.brokers.nodes().every((nodeId) => this.servers.get(nodeId)?.listening);
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
      this.scheduleDiscovery(err);
    }
  }

  /**
   * Stops accepting connections and gives the open ones up to `ms` to answer the requests they
   * have already received (they read no new ones and close once answered). Resolves with the
   * number still open then, which stop() closes.
   */
  async drain(ms: number): Promise<number> {
    void this.stopAccepting();
    if (this.connections.size > 0) {
      const drained = new AbortController();
      this.onDrained = () => drained.abort();
      for (const conn of [...this.connections]) conn.drain();
      await SYSTEM_CLOCK.sleep(ms, drained.signal);
      this.onDrained = null;
    }
    return this.connections.size;
  }

  async stop(): Promise<void> {
    const closing = this.stopAccepting();
    for (const conn of this.connections) conn.close('proxy stopping');
    await closing;
    this.servers.clear();
    this.tls?.close();
    if (this.upstream !== this.opts.upstreamClient) this.upstream.close();
  }

  private stopAccepting(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.closing ??= Promise.all([...this.servers.values()].map((s) => new Promise<void>((resolve) => s.close(() => resolve())))).then(() => undefined);
    return this.closing;
  }

  /** Learns the upstream's brokers with a Metadata request on the proxy's own connection. */
  discover(): Promise<void> {
    this.discovering ??= this.discoverOnce().finally(() => {
      this.discovering = null;
    });
    return this.discovering;
  }

  private async discoverOnce(): Promise<void> {
    let metadata;
    try {
      metadata = await this.upstream.metadata([]);
    } catch (err) {
      // One count per address that failed, as each is a connection or request that did.
      const failures = err instanceof NoBrokerAnswered ? err.failures.length : 1;
      for (let i = 0; i < failures; i++) this.meter.upstreamError('discovery');
      throw err;
    }
    this.discoveryFailures = 0;
    for (const b of metadata.brokers) this.brokers.learn(b.nodeId, b.host, b.port);
    const from = this.upstream.answeredBy;
    this.opts.log.info('upstream brokers discovered', {
      upstream: from ? `${from.host}:${from.port}` : undefined,
      brokers: metadata.brokers.map((b) => ({
        nodeId: b.nodeId,
        upstream: `${b.host}:${b.port}`,
        local: `${this.opts.advertisedHost}:${this.brokers.localPort(b.nodeId)}`,
      })),
    });
  }

  private scheduleDiscovery(err: unknown): void {
    if (this.stopped || this.retryTimer) return;
    const retryMs = backoffMs(++this.discoveryFailures, DISCOVERY_BACKOFF);
    this.opts.log.warn('upstream broker discovery failed, retrying', { err, attempt: this.discoveryFailures, retryMs });
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.discover().catch((next: unknown) => this.scheduleDiscovery(next));
    }, retryMs);
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
    const onConnection = (socket: net.Socket) => {
      this.meter.connectionsOpen++;
      this.meter.connectionsTotal++;
      const conn = new ProxyConnection(socket, {
        log: this.opts.log,
        maxFrameBytes: this.opts.maxFrameBytes,
        upstream,
        chain: this.chain,
        meter: this.meter,
        connector: this.connector,
        throttle: this.throttle,
        onClose: (c) => {
          this.meter.connectionsOpen--;
          this.connections.delete(c);
          if (this.connections.size === 0) this.onDrained?.();
        },
      });
      if (!conn.isClosed) this.connections.add(conn);
    };
    const server = this.tls ? this.tls.createServer(onConnection) : net.createServer(onConnection);
    if (this.tls) {
      server.on('tlsClientError', (err: NodeJS.ErrnoException, socket: net.Socket) => {
        // A connection closed before any handshake (a TCP probe, a port scan) is not a client's problem to report.
        const level = err.code === 'ECONNRESET' ? 'debug' : 'warn';
        this.opts.log[level]('TLS handshake with a client failed', {
          client: `${socket.remoteAddress}:${socket.remotePort}`,
          local: port,
          err,
          fix: 'the client must speak TLS (security.protocol SSL or SASL_SSL), trust the CA of --tls-cert-file and, with --tls-client-ca-file, present a certificate that CA signed',
        });
      });
    }
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
