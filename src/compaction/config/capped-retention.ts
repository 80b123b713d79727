/**
 * Compact-only topics on a store that caps retention (docs/carrying.md, "Stores that cap
 * retention"). kcompact asks the store for retention.ms=-1 and retention.bytes=-1 for such a
 * topic; a store that refuses them (OCI Streaming, Event Hubs, a create or alter policy) keeps
 * the topic for its own retention instead, which carrying must then outrun.
 */
import { rateRefusal } from '../../engine/api/carry-capacity.js';
import { carryRefusal } from './store-retention.js';
import type { ConfigContext } from './config-context.js';
import { MIN_COMPACTION_LAG_MS, RETENTION_BYTES, RETENTION_MS } from './definitions.js';
import { effectiveValue, type TopicOverrides } from './effective-policy.js';

/**
 * Why the retention the store gave a compact-only topic (`got`, from DescribeConfigs) loses
 * keys, or null when carrying keeps them: a size cap always does; a time cap when a pass
 * cannot complete within it (config/store-retention.ts), or when carryBytesPerSecond cannot
 * write even the smallest pass within the carry age (engine/api/carry-capacity.ts).
 */
export function cappedRefusal(ctx: ConfigContext, topic: string, overrides: TopicOverrides, got: Record<string, string | null>): string | null {
  const bytes = got[RETENTION_BYTES];
  if (bytes !== undefined && bytes !== null && bytes !== '-1') {
    return (
      `the upstream set retention.bytes=${bytes} on topic ${topic}: a store that drops records by size cannot keep the latest value of every key ` +
      `of a topic whose cleanup.policy lacks delete`
    );
  }
  const ms = Number(got[RETENTION_MS] ?? '-1');
  if (!Number.isFinite(ms) || ms < 0) return null;
  const minLag = Number(effectiveValue(MIN_COMPACTION_LAG_MS, overrides, ctx.defaults));
  return (
    carryRefusal(topic, ms, ctx.carrying.share, ctx.carrying.backoffMs, minLag) ?? rateRefusal(topic, ms, ctx.carrying.share, ctx.carrying.bytesPerSecond ?? 0)
  );
}
