/**
 * The proxy's Prometheus registry: traffic (proxy-meter.ts), compaction (compaction-metrics.ts)
 * and prom-client's default process and Node.js runtime metrics under their standard names
 * (process_*, nodejs_*), so stock dashboards and alerts for Node services work unchanged.
 */
import { collectDefaultMetrics, Registry } from 'prom-client';
import type { Logger } from '../log.js';
import { CompactionMetrics } from './compaction-metrics.js';
import { ProxyMeter } from './proxy-meter.js';
import { topicFilter } from './topic-filter.js';

export interface MetricsOptions {
  perPartition: boolean;
  topicsInclude: readonly string[];
  topicsExclude: readonly string[];
  log: Logger;
}

export interface Metrics {
  readonly proxy: ProxyMeter;
  readonly compaction: CompactionMetrics;
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
  return {
    proxy,
    compaction,
    scrape: async () => ({ contentType: registry.contentType, body: await registry.metrics() }),
  };
}
