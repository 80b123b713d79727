/**
 * CreatePartitions passes through unchanged: compaction configs are per topic, so new
 * partitions inherit them with nothing to store, and the indexer picks the partitions up from
 * the upstream's metadata. Hooked so the config layer visibly covers every topic admin API.
 */
import { ApiKey } from '../../protocol/messages.js';
import type { Filter } from '../../proxy/filter/filter.js';

export const createPartitionsFilter: Filter = {
  name: 'config-create-partitions',
  apis: { [ApiKey.CreatePartitions]: { onRequest: (_req, chain) => chain.forward() } },
};
