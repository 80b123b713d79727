/**
 * The table API's figures (src/tables/, docs/tables.md): requests by route and status, their
 * latency, compare-and-set conflicts and the change streams open. Registered whether or not the
 * table listener is on, so that dashboards and alerts find the families on every proxy.
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** The routes as metrics name them: a fixed set, so that no request can mint label values. */
export const TABLE_ROUTES = ['get_key', 'put_key', 'delete_key', 'changes', 'topic', 'unmatched'] as const;
export type TableRouteName = (typeof TABLE_ROUTES)[number];

/** A key read answers from the index in well under a millisecond; a write waits for the store's acks=all and the verdict. */
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export class TableMetrics {
  private readonly requests: Counter<'route' | 'status'>;
  private readonly duration: Histogram<'route'>;
  private readonly conflicts: Counter;
  private readonly watchers: Gauge;

  constructor(registry: Registry) {
    const registers = [registry];
    this.requests = new Counter({
      name: 'kcompact_table_requests_total',
      help: 'Requests to the table API, by route and HTTP status (a change stream counts once, with the status it opened with)',
      labelNames: ['route', 'status'],
      registers,
    });
    this.duration = new Histogram({
      name: 'kcompact_table_request_duration_seconds',
      help: "Time from a table API request arriving to its answer sent, by route (a change stream: to its response's head)",
      labelNames: ['route'],
      buckets: DURATION_BUCKETS,
      registers,
    });
    this.conflicts = new Counter({
      name: 'kcompact_table_cas_conflicts_total',
      help: "Conditional writes the index judged void (answered 412): another write got to the key first, or its If-Match offset was not the key's latest",
      registers,
    });
    this.watchers = new Gauge({
      name: 'kcompact_table_watchers',
      help: 'Change streams (GET /v1/topics/{topic}/changes) open now',
      registers,
    });
  }

  /** Per route, its latency child and its request counter per status: label lookups cost more than the count. */
  private readonly byRoute = new Map<TableRouteName, { duration: Histogram.Internal<'route'>; requests: Map<number, Counter.Internal> }>();

  /** Counts an answered request and its latency. */
  answered(route: TableRouteName, status: number, seconds: number): void {
    let children = this.byRoute.get(route);
    if (!children) this.byRoute.set(route, (children = { duration: this.duration.labels({ route }), requests: new Map() }));
    let requests = children.requests.get(status);
    if (!requests) children.requests.set(status, (requests = this.requests.labels({ route, status: String(status) })));
    requests.inc();
    children.duration.observe(seconds);
  }

  conflict(): void {
    this.conflicts.inc();
  }

  watcherOpened(): void {
    this.watchers.inc();
  }

  watcherClosed(): void {
    this.watchers.dec();
  }
}
