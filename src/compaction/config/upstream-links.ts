/**
 * The config layer's own connections to the upstream, apart from client traffic: to any broker
 * for metadata and admin requests, and to a given broker (the configs topic's leader) for
 * produce and fetch. A connection is reused until it fails, then opened again on next use.
 */
import { ApiKey } from '../../protocol/messages.js';
import type { HostPort } from '../../proxy/broker-map.js';
import { ZERO_UUID } from '../../proxy/topic-ids.js';
import { UpstreamClient } from '../../upstream/client.js';
import type { UpstreamConnector } from '../../upstream/upstream-connector.js';

export interface UpstreamLinksOptions {
  upstream: readonly HostPort[];
  clientId: string;
  requestTimeoutMs: number;
  maxFrameBytes: number;
  connector?: UpstreamConnector;
}

export interface MetadataTopic {
  errorCode: number;
  name: string | null;
  topicId: string;
  partitions: { errorCode: number; partitionIndex: number; leaderId: number }[];
}

export interface MetadataAnswer {
  brokers: { nodeId: number; host: string; port: number }[];
  controllerId: number;
  topics: MetadataTopic[];
}

const key = (a: HostPort) => `${a.host}:${a.port}`;

export class UpstreamLinks {
  private readonly clients = new Map<string, Promise<UpstreamClient>>();
  private readonly brokers = new Map<number, HostPort>();
  private closed = false;

  constructor(private readonly opts: UpstreamLinksOptions) {}

  /** A connection to the first bootstrap broker that answers. */
  async any(): Promise<UpstreamClient> {
    let lastErr: unknown = new Error('no upstream configured');
    for (const address of this.opts.upstream) {
      try {
        return await this.to(address);
      } catch (err) {
        lastErr = err;
      }
    }
    throw lastErr;
  }

  /** A connection to the broker with this node id, as the last metadata answer placed it. */
  async broker(nodeId: number): Promise<UpstreamClient> {
    let address = this.brokers.get(nodeId);
    if (!address) {
      await this.metadata([]);
      address = this.brokers.get(nodeId);
    }
    if (!address) throw new Error(`the upstream has no broker with node id ${nodeId}`);
    return this.to(address);
  }

  /**
   * A connection to the controller, for CreateTopics and DeleteTopics: brokers that do not
   * forward admin requests (kfake, ZooKeeper-era Kafka) refuse them elsewhere with NOT_CONTROLLER.
   */
  async controller(): Promise<UpstreamClient> {
    const { controllerId } = await this.metadata([]);
    return controllerId >= 0 ? this.broker(controllerId) : this.any();
  }

  /** Metadata for the named topics (an empty list: brokers only), never creating a topic. */
  async metadata(topics: readonly string[]): Promise<MetadataAnswer> {
    const client = await this.any();
    const version = client.version(ApiKey.Metadata);
    const answer: MetadataAnswer = await client.request(ApiKey.Metadata, version, {
      topics: topics.map((name) => ({ name, topicId: ZERO_UUID })),
      allowAutoTopicCreation: false,
    });
    for (const b of answer.brokers) this.brokers.set(b.nodeId, { host: b.host, port: b.port });
    return answer;
  }

  close(): void {
    this.closed = true;
    for (const pending of this.clients.values())
      pending.then(
        (c) => c.close(),
        () => {},
      );
    this.clients.clear();
  }

  private to(address: HostPort): Promise<UpstreamClient> {
    if (this.closed) return Promise.reject(new Error('upstream links closed'));
    const k = key(address);
    const existing = this.clients.get(k);
    if (existing) {
      return existing.then((c) => {
        if (!c.closed) return c;
        if (this.clients.get(k) === existing) this.clients.delete(k);
        return this.to(address);
      });
    }
    const opening = UpstreamClient.connect(address, {
      clientId: this.opts.clientId,
      maxFrameBytes: this.opts.maxFrameBytes,
      requestTimeoutMs: this.opts.requestTimeoutMs,
      connector: this.opts.connector,
    });
    this.clients.set(k, opening);
    opening.catch(() => {
      if (this.clients.get(k) === opening) this.clients.delete(k);
    });
    return opening;
  }
}
