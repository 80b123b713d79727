/**
 * The proxy's Prometheus registry: traffic (proxy-meter.ts), compaction (compaction-metrics.ts),
 * the table API (table-metrics.ts) and prom-client's default process and Node.js runtime metrics under their standard names
 * (process_*, nodejs_*), so stock dashboards and alerts for Node services work unchanged.
 */
import { collectDefaultMetrics, Counter, Registry } from 'prom-client';
import type { ListenerName, RefusalReason } from '../management-server.js';
import type { Logger } from '../../common/log.js';
import { CompactionMetrics } from './compaction-metrics.js';
import { ProxyMeter } from '../../proxy/proxy-meter.js';
import { topicFilter } from './topic-filter.js';
import { TableMetrics } from './table-metrics.js';

export interface MetricsOptions {
  perPartition: boolean;
  topicsInclude: readonly string[];
  topicsExclude: readonly string[];
  log: Logger;
}

export interface Metrics {
  readonly proxy: ProxyMeter;
  readonly compaction: CompactionMetrics;
  readonly tables: TableMetrics;
  /** Counts a management request turned away before its route ran. */
  refused(listener: ListenerName, reason: RefusalReason): void;
  /** The text exposition and the content type to serve it with. */
  scrape(): Promise<{ contentType: string; body: string }>;
}

export function createMetrics(opts: MetricsOptions): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const proxy = new ProxyMeter(registry);
  const compaction = new CompactionMetrics(registry, {
    perPartition: opts.perPartition,
    topics: topicFilter(opts.topicsInclude, opts.topicsExclude),
    log: opts.log,
  });
  const refused = new Counter({
    name: 'kcompact_management_requests_refused_total',
    help: 'Management requests turned away before their route ran: an admin route asked of the metrics listener, no or a wrong bearer token, a web page',
    labelNames: ['listener', 'reason'],
    registers: [registry],
  });
  // Present from the start, so that an alert on their rate sees the first refusal.
  refused.inc({ listener: 'metrics', reason: 'admin-route' }, 0);
  for (const listener of ['admin', 'tables'] as const) {
    for (const reason of ['no-token', 'wrong-token', 'browser'] as const) refused.inc({ listener, reason }, 0);
  }
  return {
    proxy,
    compaction,
    tables: new TableMetrics(registry),
    refused: (listener, reason) => refused.inc({ listener, reason }),
    scrape: async () => ({ contentType: registry.contentType, body: await registry.metrics() }),
  };
}
