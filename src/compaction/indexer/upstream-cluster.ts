/**
 * The worker's view of the upstream cluster: who leads which partition of the compacted topics
 * (Metadata), and one connection per broker for the worker's own requests. Connections that
 * fail are dropped and reopened on next use; callers back off.
 */
import type { HostPort } from '../../proxy/broker-map.js';
import { ApiKey } from '../../protocol/messages.js';
import { ZERO_UUID } from '../../protocol/wire/uuid.js';
import { UpstreamClient, type UpstreamClientOptions } from '../../upstream/client.js';

export interface PartitionLeader {
  partition: number;
  errorCode: number;
  leaderId: number;
}

export interface TopicMetadata {
  name: string;
  errorCode: number;
  /** ZERO_UUID when the upstream has no topic ids. */
  topicId: string;
  partitions: PartitionLeader[];
}

interface MetadataBody {
  brokers: { nodeId: number; host: string; port: number }[];
  topics: { errorCode: number; name: string; topicId?: string; partitions: { errorCode: number; partitionIndex: number; leaderId: number }[] }[];
}

export class UpstreamCluster {
  private readonly brokers = new Map<number, HostPort>();
  private readonly connections = new Map<number, Promise<UpstreamClient>>();
  private bootstrapClient: Promise<UpstreamClient> | undefined;
  private closed = false;

  constructor(
    private readonly bootstrap: readonly HostPort[],
    private readonly options: UpstreamClientOptions,
  ) {}

  /** Leaders of the given topics, asked of any reachable broker. */
  async metadata(topics: readonly string[]): Promise<TopicMetadata[]> {
    const client = await this.anyClient();
    const version = client.version(ApiKey.Metadata);
    let body: MetadataBody;
    try {
      body = await client.request(ApiKey.Metadata, version, {
        topics: topics.map((name) => ({ topicId: ZERO_UUID, name })),
        allowAutoTopicCreation: false,
        includeTopicAuthorizedOperations: false,
      });
    } catch (err) {
      client.close();
      throw err;
    }
    for (const b of body.brokers) this.brokers.set(b.nodeId, { host: b.host, port: b.port });
    return body.topics.map((t) => ({
      name: t.name,
      errorCode: t.errorCode,
      topicId: t.topicId ?? ZERO_UUID,
      partitions: t.partitions.map((p) => ({ partition: p.partitionIndex, errorCode: p.errorCode, leaderId: p.leaderId })),
    }));
  }

  /** The connection to a broker known from metadata, opened on first use or after a failure. */
  broker(nodeId: number): Promise<UpstreamClient> {
    const address = this.brokers.get(nodeId);
    if (!address) return Promise.reject(new Error(`upstream broker ${nodeId} is not in the metadata`));
    return this.cached(this.connections, nodeId, address);
  }

  /** Forgets a broker connection after an error so the next call reconnects. */
  dropBroker(nodeId: number): void {
    const pending = this.connections.get(nodeId);
    this.connections.delete(nodeId);
    pending?.then(
      (c) => c.close(),
      () => undefined,
    );
  }

  close(): void {
    this.closed = true;
    for (const id of [...this.connections.keys()]) this.dropBroker(id);
    this.bootstrapClient?.then(
      (c) => c.close(),
      () => undefined,
    );
    this.bootstrapClient = undefined;
  }

  private cached(map: Map<number, Promise<UpstreamClient>>, key: number, address: HostPort): Promise<UpstreamClient> {
    const existing = map.get(key);
    if (existing) {
      return existing.then((c) => {
        if (!c.closed) return c;
        if (map.get(key) === existing) map.delete(key);
        return this.cached(map, key, address);
      });
    }
    if (this.closed) return Promise.reject(new Error('upstream cluster closed'));
    const opening = UpstreamClient.connect(address, this.options);
    map.set(key, opening);
    opening.catch(() => {
      if (map.get(key) === opening) map.delete(key);
    });
    return opening;
  }

  /** A live connection to any broker: the bootstrap list first, then every broker seen. */
  private async anyClient(): Promise<UpstreamClient> {
    if (this.bootstrapClient) {
      const c = await this.bootstrapClient.catch(() => undefined);
      if (c && !c.closed) return c;
      this.bootstrapClient = undefined;
    }
    if (this.closed) throw new Error('upstream cluster closed');
    const candidates = [...this.bootstrap, ...this.brokers.values()];
    let last: unknown = new Error('no upstream address configured');
    for (const address of candidates) {
      try {
        const opening = UpstreamClient.connect(address, this.options);
        this.bootstrapClient = opening;
        return await opening;
      } catch (err) {
        this.bootstrapClient = undefined;
        last = err;
      }
    }
    throw last;
  }
}
