/**
 * The proxy's own client of the upstream cluster, apart from client traffic: the config store,
 * the fetch view's and the produce guard's reads, broker discovery, the readiness probe and the
 * admin routes share one in the main thread; the compaction worker has its own (a thread cannot
 * share sockets). It holds one connection per broker (broker-connections.ts), what Metadata said
 * (metadata-cache.ts), and the one loop that finds a broker that answers: the last one that did,
 * then the bootstrap addresses in order, then every broker Metadata named.
 */
import type { Logger } from '../common/log.js';
import { ApiKey, type MetadataResponse } from '../protocol/messages.js';
import { ZERO_UUID } from '../protocol/wire/uuid.js';
import type { HostPort } from '../common/host-port.js';
import { addressKey, BrokerConnections, type Lane } from './broker-connections.js';
import type { UpstreamClient } from './client.js';
import { isStaleMetadataCode, NoBrokerAnswered } from './error-class.js';
import { MetadataCache } from './metadata-cache.js';
import { UpstreamConnector } from './upstream-connector.js';

export interface UpstreamClusterClientOptions {
  /** The bootstrap addresses (the upstream setting). */
  bootstrap: readonly HostPort[];
  clientId: string;
  maxFrameBytes: number;
  requestTimeoutMs: number;
  connectTimeoutMs?: number;
  /** TLS and SASL towards the upstream; plain TCP without SASL when omitted. */
  connector?: UpstreamConnector;
  log?: Logger;
}

const where = (a: HostPort) => `${a.host}:${a.port}`;

export class UpstreamClusterClient {
  readonly cache = new MetadataCache();
  private readonly connections: BrokerConnections;
  private readonly connector: UpstreamConnector;
  /** The address that answered last: tried first, so a bootstrap address that is down costs one connect, not one per request. */
  private answered: HostPort | undefined;
  private closed = false;

  private readonly metadataListeners: ((answer: MetadataResponse) => void)[] = [];

  constructor(private readonly opts: UpstreamClusterClientOptions) {
    this.connector = opts.connector ?? UpstreamConnector.plaintext;
    this.connections = new BrokerConnections({
      clientId: opts.clientId,
      maxFrameBytes: opts.maxFrameBytes,
      requestTimeoutMs: opts.requestTimeoutMs,
      connectTimeoutMs: opts.connectTimeoutMs,
      connector: this.connector,
    });
  }

  /** A connection to the first broker that answers (see the module comment for the order). */
  any(lane?: Lane): Promise<UpstreamClient> {
    return this.firstThatAnswers(this.candidates(), (address) => this.connections.get(address, lane));
  }

  /** A connection to the broker with this node id, asking Metadata once when it is not known. */
  async broker(nodeId: number, lane?: Lane): Promise<UpstreamClient> {
    let address = this.cache.broker(nodeId);
    if (!address) {
      await this.metadata([]);
      address = this.cache.broker(nodeId);
    }
    if (!address) throw new Error(`the upstream names no broker with node id ${nodeId} in its Metadata`);
    return this.connections.get(address, lane);
  }

  /**
   * A connection to the controller, for CreateTopics and DeleteTopics: brokers that do not
   * forward admin requests (kfake, ZooKeeper-era Kafka) refuse them elsewhere with NOT_CONTROLLER.
   * Asked afresh each time: these requests are rare and the controller moves. Any broker when
   * Metadata names none, or one it does not list (librdkafka's mock cluster names node 0).
   */
  async controller(lane?: Lane): Promise<UpstreamClient> {
    const { controllerId } = await this.metadata([]);
    const listed = controllerId !== undefined && controllerId >= 0 && this.cache.broker(controllerId) !== undefined;
    return listed ? this.broker(controllerId, lane) : this.any(lane);
  }

  /**
   * Metadata for the named topics (an empty list: brokers only; null: every topic), never
   * creating a topic, from the first broker that answers; the cache learns the answer.
   */
  metadata(topics: readonly string[] | null): Promise<MetadataResponse> {
    return this.firstThatAnswers(this.candidates(), async (address) => {
      const client = await this.connections.get(address);
      let answer: MetadataResponse;
      try {
        answer = await client.request(ApiKey.Metadata, client.version(ApiKey.Metadata), {
          topics: topics === null ? null : topics.map((name) => ({ name, topicId: ZERO_UUID })),
          allowAutoTopicCreation: false,
          includeTopicAuthorizedOperations: false,
        });
      } catch (err) {
        this.connections.drop(address);
        throw err;
      }
      this.cache.learn(answer);
      for (const listener of this.metadataListeners) listener(answer);
      return answer;
    });
  }

  /** Hears every Metadata answer this client gets (the proxy's topic ids learn them: topic-ids.ts). */
  onMetadata(listener: (answer: MetadataResponse) => void): void {
    this.metadataListeners.push(listener);
  }

  /** A connection to the partition's leader, asking Metadata for the topic when the leader is not known. */
  async leader(topic: string, partition: number): Promise<UpstreamClient> {
    let leader = this.cache.leader(topic, partition);
    if (!leader) {
      await this.metadata([topic]);
      leader = this.cache.leader(topic, partition);
    }
    if (!leader) throw new Error(`the upstream names no leader for ${topic}-${partition} (its Metadata has the partition without one, or not at all)`);
    return this.broker(leader.leaderId);
  }

  /** Takes note of an error code the partition's leader answered: a stale leader is forgotten, so the next leader() asks again. */
  partitionError(topic: string, partition: number, errorCode: number): void {
    if (isStaleMetadataCode(errorCode)) this.cache.forgetLeader(topic, partition);
  }

  /** Closes the broker's connection after a request on it failed; the next use opens another. */
  dropBroker(nodeId: number): void {
    const address = this.cache.broker(nodeId);
    if (address) this.connections.drop(address);
  }

  /**
   * The first bootstrap address that accepts a connection (with its TLS handshake when the
   * upstream speaks TLS), without authenticating or asking anything: the readiness probe's
   * question is whether the upstream is there, and clients bring their own credentials.
   */
  reachable(timeoutMs: number): Promise<HostPort> {
    return this.firstThatAnswers(
      [...this.opts.bootstrap],
      async (address) => {
        (await this.connector.connect(address, timeoutMs)).destroy();
        return address;
      },
      'no upstream bootstrap address accepts connections',
    );
  }

  /** The address that answered last (for logs); undefined before any did. */
  get answeredBy(): HostPort | undefined {
    return this.answered;
  }

  close(): void {
    this.closed = true;
    this.connections.close();
  }

  private candidates(): HostPort[] {
    const seen = new Set<string>();
    const out: HostPort[] = [];
    for (const a of [...(this.answered ? [this.answered] : []), ...this.opts.bootstrap, ...this.cache.brokerAddresses()]) {
      const key = addressKey(a);
      if (seen.has(key)) continue;
      seen.add(key);
      out.push(a);
    }
    return out;
  }

  /**
   * The bootstrap loop, here once: `attempt` on each address in turn until one succeeds; when
   * none does, NoBrokerAnswered says what each one did.
   */
  private async firstThatAnswers<T>(addresses: readonly HostPort[], attempt: (address: HostPort) => Promise<T>, what?: string): Promise<T> {
    if (this.closed) throw new Error('the upstream client is closed');
    const failures: { address: string; err: unknown }[] = [];
    for (const address of addresses) {
      try {
        const result = await attempt(address);
        this.answered = address;
        return result;
      } catch (err) {
        failures.push({ address: where(address), err });
        this.opts.log?.debug('upstream broker did not answer; trying the next', { upstream: where(address), err });
        if (this.closed) break;
      }
    }
    if (failures.length === 0) failures.push({ address: '(none)', err: new Error('no upstream address is configured') });
    throw new NoBrokerAnswered(failures, what);
  }
}
