/**
 * The Kubernetes probes on the management port.
 * - /livez: the process is alive. Answering at all shows the event loop runs; a blocked loop
 *   times the probe out. It stays 200 through shutdown, which is not a reason to restart.
 * - /startupz: startup is done: the listeners are up and the key index has been recovered from
 *   the data directory (the startup probe covers a long recovery without the liveness probe
 *   killing it).
 * - /readyz: the pod should receive traffic: started, not shutting down, listeners up and the
 *   upstream reachable recently. It fails first thing on SIGTERM, so the pod leaves traffic
 *   before connections are drained.
 * Each answers JSON saying which check failed, with 503 when it fails.
 */
import { Reply, type Route } from '../management-server.js';
import type { Reachability } from './upstream-reachability.js';

export interface HealthOptions {
  /** Whether the proxy's listeners are up. */
  listening: () => boolean;
  upstream: { check(): Promise<Reachability> };
}

interface Check {
  ok: boolean;
  detail: string;
}

export class Health {
  private started = false;
  private stopping = false;

  constructor(private readonly opts: HealthOptions) {}

  markStarted(): void {
    this.started = true;
  }

  /** Readiness fails from now on. */
  markStopping(): void {
    this.stopping = true;
  }

  routes(): [string, Route][] {
    return [
      ['GET /livez', async () => Reply.json(200, { status: 'alive', uptimeSeconds: Math.round(process.uptime()) })],
      [
        'GET /startupz',
        async () =>
          this.started
            ? Reply.json(200, { status: 'started' })
            : Reply.json(503, { status: 'starting', detail: 'opening listeners and recovering the key index' }),
      ],
      ['GET /readyz', () => this.readiness()],
    ];
  }

  private async readiness(): Promise<Reply> {
    const checks: Record<string, Check> = {
      started: { ok: this.started, detail: this.started ? 'started' : 'still starting' },
      shutdown: { ok: !this.stopping, detail: this.stopping ? 'shutting down: draining connections' : 'not shutting down' },
      listeners: this.opts.listening()
        ? { ok: true, detail: 'bootstrap and broker listeners up' }
        : { ok: false, detail: 'a listener is not up (see the log)' },
    };
    // Probing the upstream is pointless (and costs a connection) when another check failed.
    if (Object.values(checks).every((c) => c.ok)) checks.upstream = await this.opts.upstream.check();
    const ready = Object.values(checks).every((c) => c.ok);
    return Reply.json(ready ? 200 : 503, { status: ready ? 'ready' : 'not ready', checks });
  }
}
