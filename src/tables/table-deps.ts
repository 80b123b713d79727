/**
 * What the table API's routes work with: the index's answers (through the engine, once it has
 * started), the store's partition counts, the writer, the figures and the log.
 */
import type { Logger } from '../common/log.js';
import type { TableReads } from '../engine/api/table-reads.js';
import type { TableMetrics } from '../ops/metrics/table-metrics.js';
import { unavailable } from './api-error.js';
import type { TopicPartitions } from './topic-partitions.js';
import type { TableWriter } from './table-writer.js';

export interface TableDeps {
  /** The index's answers; undefined while the engine is starting (the routes answer 503). */
  reads(): TableReads | undefined;
  /**
   * Whether this replica's config layer holds the topic as compacted: a write to one goes to the
   * store without asking the index first (the index refuses the others, 409).
   */
  compacted?: (topic: string) => boolean;
  partitions: TopicPartitions;
  writer: TableWriter;
  metrics?: TableMetrics;
  log: Logger;
  /** Epoch ms, for the timestamps of written records. */
  now?: () => number;
}

/** The index's answers, or a 503 while the engine is starting. */
export function readsOf(deps: TableDeps): TableReads {
  const reads = deps.reads();
  if (!reads) throw unavailable('kcompact is still starting (recovering the key index)', 'try again once /startupz on the metrics listener answers 200');
  return reads;
}
