/**
 * Whether the upstream was reachable recently, for readiness. Client traffic proves it for
 * free (the proxy's meter records each upstream connection made); when there was none lately,
 * a connect to the bootstrap addresses answers instead (with its TLS handshake when the upstream
 * speaks TLS), so an idle proxy stays ready while its upstream is up and becomes unready when it
 * is not. It does not authenticate: clients bring their own credentials, so the proxy's own
 * being refused is no reason to take the pod out of traffic.
 */
import type { HostPort } from '../../common/host-port.js';
import { UpstreamClusterClient } from '../../upstream/upstream-cluster-client.js';
import type { UpstreamConnector } from '../../upstream/upstream-connector.js';

export interface Reachability {
  ok: boolean;
  detail: string;
}

export interface UpstreamReachabilityOptions {
  /** The proxy's upstream client, whose bootstrap addresses are probed; one of these is built from upstream and connector when omitted. */
  client?: UpstreamClusterClient;
  upstream?: readonly HostPort[];
  /** Epoch ms of the last upstream connection client traffic made (0: none). */
  lastConnectMs: () => number;
  /** How old a successful connection may be and still count. */
  recentMs?: number;
  probeTimeoutMs?: number;
  /** TLS towards the upstream; plain TCP when omitted. */
  connector?: UpstreamConnector;
}

const RECENT_MS = 10_000;
const PROBE_TIMEOUT_MS = 2_000;

export class UpstreamReachability {
  private lastProbeOkMs = 0;
  private probing: Promise<Reachability> | undefined;
  private readonly client: UpstreamClusterClient;

  constructor(private readonly opts: UpstreamReachabilityOptions) {
    this.client =
      opts.client ??
      // Only its connect is used: no client id, frames or requests.
      new UpstreamClusterClient({
        bootstrap: opts.upstream ?? [],
        clientId: 'kcompact-probe',
        maxFrameBytes: 0,
        requestTimeoutMs: 0,
        connector: opts.connector,
      });
  }

  check(): Promise<Reachability> {
    const last = Math.max(this.opts.lastConnectMs(), this.lastProbeOkMs);
    const age = Date.now() - last;
    if (last > 0 && age < (this.opts.recentMs ?? RECENT_MS)) return Promise.resolve({ ok: true, detail: `connected ${age} ms ago` });
    this.probing ??= this.probe().finally(() => {
      this.probing = undefined;
    });
    return this.probing;
  }

  private async probe(): Promise<Reachability> {
    try {
      const target = await this.client.reachable(this.opts.probeTimeoutMs ?? PROBE_TIMEOUT_MS);
      this.lastProbeOkMs = Date.now();
      return { ok: true, detail: `${target.host}:${target.port} accepted a connection` };
    } catch (err) {
      return { ok: false, detail: (err as Error).message };
    }
  }
}
