/**
 * How long the store keeps each compacted topic's records (docs/carrying.md): retention.ms as
 * the store's DescribeConfigs reports it for the topic (its override, else the broker default
 * the store applies), or the storeRetentionMs setting for a store that cannot describe configs.
 * Learned for all compacted topics in one request, again every poll; a topic the store keeps
 * for ever (-1) needs no carrying by age. What is learned is the carry age each policy gets:
 * carryRetentionShare of the retention, so survivors are written again well before they expire.
 */
import { ConfigResourceType } from '../../protocol/config-resource.js';
import { ErrorCode, ProtocolError } from '../../protocol/errors.js';
import { ApiKey } from '../../protocol/messages.js';
import type { Logger } from '../../common/log.js';
import type { UpstreamClusterClient } from '../../upstream/upstream-cluster-client.js';
import type { TopicPolicy } from '../../engine/api/topic-policy.js';
import { RETENTION_MS } from './definitions.js';

export interface StoreRetentionOptions {
  links: UpstreamClusterClient;
  log: Logger;
  /** Share of the store's retention at which records are carried again (0-1). */
  share: number;
  /** The store's retention where it cannot describe configs; undefined: such a store keeps everything. */
  fallbackMs?: number;
}

/** A carry must find time to run: carrying at this share must leave at least this long before expiry. */
export const MIN_CARRY_WINDOW_MS = 10_000;

/**
 * Why carrying cannot keep a compact-only topic on a store with this retention, or null when it
 * can: the carry age must leave time for a cleaner round and a pass, and min.compaction.lag.ms
 * must let the cleaner clean what ages before half the carry age.
 */
export function carryRefusal(topic: string, retentionMs: number, share: number, backoffMs: number, minCompactionLagMs = 0): string | null {
  if (retentionMs < 0) return null;
  const carryAt = Math.floor(retentionMs * share);
  const window = retentionMs - carryAt;
  const needed = Math.max(MIN_CARRY_WINDOW_MS, 4 * backoffMs);
  if (window < needed || carryAt < 2 * backoffMs) {
    return (
      `the store keeps the records of topic ${topic} for retention.ms=${retentionMs}; kcompact carries them at ${share} of that (${carryAt} ms), ` +
      `leaving ${window} ms before they expire where a carry needs ${needed} ms (and ${2 * backoffMs} ms of cleaner rounds before it): ` +
      `raise the store's retention, or lower carryRetentionShare / cleanerBackoffMs`
    );
  }
  if (minCompactionLagMs > Math.floor(carryAt / 2)) {
    return (
      `topic ${topic} has min.compaction.lag.ms=${minCompactionLagMs}, but the store keeps its records for retention.ms=${retentionMs} and kcompact must ` +
      `clean them within ${Math.floor(carryAt / 2)} ms to carry them in time: lower min.compaction.lag.ms or raise the store's retention`
    );
  }
  return null;
}

export class StoreRetention {
  private readonly known = new Map<string, number>();
  private describable = true;

  constructor(private readonly opts: StoreRetentionOptions) {}

  /** The store's retention of a topic's records; -1 for ever (or not yet learned). */
  of(topic: string): number {
    return this.known.get(topic) ?? (this.describable ? -1 : (this.opts.fallbackMs ?? -1));
  }

  /**
   * The policy with the store's side filled in. A compact,delete topic whose store retention is
   * its own (kcompact forwards retention.ms) expires as the topic says: only a retention the
   * store imposes, shorter than the topic's, is carried against.
   */
  apply(topic: string, policy: TopicPolicy): TopicPolicy {
    const learned = this.of(topic);
    const imposed = learned >= 0 && (!policy.delete || policy.retentionMs < 0 || learned < policy.retentionMs);
    const storeRetentionMs = imposed ? learned : -1;
    const carryAfterMs = imposed ? Math.max(1, Math.floor(learned * this.opts.share)) : -1;
    return { ...policy, storeRetentionMs, carryAfterMs };
  }

  /** Asks the store again; resolves whether any topic's retention changed. Failing asks keep what was known. */
  async refresh(topics: readonly string[]): Promise<boolean> {
    if (topics.length === 0) return false;
    let answer;
    try {
      const client = await this.opts.links.any('admin');
      const version = client.version(ApiKey.DescribeConfigs);
      answer = await client.request(ApiKey.DescribeConfigs, version, {
        resources: topics.map((t) => ({ resourceType: ConfigResourceType.TOPIC, resourceName: t, configurationKeys: [RETENTION_MS] })),
        includeSynonyms: false,
        includeDocumentation: false,
      });
    } catch (err) {
      if (err instanceof ProtocolError && this.describable) {
        // The store has no DescribeConfigs: its retention is what kcompact's configuration says.
        this.describable = false;
        this.opts.log.info('the store cannot describe configs; its retention is the storeRetentionMs setting', {
          storeRetentionMs: this.opts.fallbackMs ?? -1,
        });
        return true;
      }
      this.opts.log.debug("could not learn the store's retention; keeping what was known", { err });
      return false;
    }
    let changed = false;
    for (const r of answer.results) {
      if (r.errorCode !== ErrorCode.NONE) continue;
      const raw = r.configs.find((c) => c.name === RETENTION_MS)?.value;
      const parsed = raw === null || raw === undefined ? NaN : Number(raw);
      const ms = Number.isFinite(parsed) ? (parsed < 0 ? -1 : parsed) : (this.opts.fallbackMs ?? -1);
      if (this.known.get(r.resourceName) !== ms) {
        changed = true;
        this.known.set(r.resourceName, ms);
        if (ms >= 0)
          this.opts.log.info("the store caps a compacted topic's retention: its survivors are carried by age", {
            topic: r.resourceName,
            retentionMs: ms,
            carryAfterMs: Math.floor(ms * this.opts.share),
          });
      }
    }
    return changed;
  }
}
