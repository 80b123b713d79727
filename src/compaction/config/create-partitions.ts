/**
 * CreatePartitions passes through unchanged: compaction configs are per topic, so new
 * partitions inherit them with nothing to store, and the indexer picks the partitions up from
 * the upstream's metadata. Registered so the config layer visibly covers every topic admin API.
 */
import type { RequestInterceptor } from '../../proxy/interceptor.js';

export function createPartitionsInterceptor(): RequestInterceptor {
  return { intercept: () => ({ forward: true }) };
}
