/**
 * Which upstream broker sits behind which local port. Clients learn broker addresses only from
 * responses (Metadata, FindCoordinator, DescribeCluster, NodeEndpoints), so every address the
 * upstream hands out is swapped for this proxy's advertised host and the node's local port, and
 * the node's upstream address is remembered for the connections that arrive there.
 */
import type { HostPort } from '../common/host-port.js';

export interface BrokerMapOptions {
  advertisedHost: string;
  brokerPortBase: number;
  /** Called the first time a node id is seen so its listener can be opened. */
  onNewNode?: (nodeId: number) => void;
}

export class BrokerMap {
  private readonly upstream = new Map<number, HostPort>();

  constructor(private readonly opts: BrokerMapOptions) {}

  /** The local port for a node: deterministic so every replica and restart agrees. */
  localPort(nodeId: number): number {
    return this.opts.brokerPortBase + nodeId;
  }

  /** Node id served on a local port, or undefined when the port is not a broker port. */
  nodeForPort(port: number): number | undefined {
    const id = port - this.opts.brokerPortBase;
    return id >= 0 && Number.isInteger(id) ? id : undefined;
  }

  portFits(nodeId: number): boolean {
    return nodeId >= 0 && this.localPort(nodeId) <= 65535;
  }

  upstreamOf(nodeId: number): HostPort | undefined {
    return this.upstream.get(nodeId);
  }

  nodes(): number[] {
    return [...this.upstream.keys()];
  }

  /** Records a node's upstream address and returns the address clients must use instead. */
  learn(nodeId: number, host: string, port: number): HostPort {
    const known = this.upstream.get(nodeId);
    if (!known || known.host !== host || known.port !== port) {
      this.upstream.set(nodeId, { host, port });
      if (!known) this.opts.onNewNode?.(nodeId);
    }
    return { host: this.opts.advertisedHost, port: this.localPort(nodeId) };
  }
}
