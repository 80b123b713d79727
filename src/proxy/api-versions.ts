/**
 * What the proxy tells clients it supports: the upstream's ApiVersions answer, intersected with
 * the versions the proxy can decode for the APIs it reads or changes.
 *
 * APIs the proxy never decodes pass through as opaque frames, so any version the upstream offers
 * works for them and is advertised unchanged. For the APIs it decodes, versions newer than the
 * message definitions it was generated from (Apache Kafka 4.2) are withheld: the proxy could not
 * parse them, and a client that negotiated one would get a closed connection instead of data.
 */
import { ApiKey, apiSchema } from '../protocol/messages.js';

export const DECODED_APIS: ReadonlySet<number> = new Set([
  ApiKey.ApiVersions,
  ApiKey.Metadata,
  ApiKey.FindCoordinator,
  ApiKey.DescribeCluster,
  ApiKey.Produce,
  ApiKey.Fetch,
  ApiKey.ListOffsets,
  ApiKey.CreateTopics,
  ApiKey.DeleteTopics,
  ApiKey.CreatePartitions,
  ApiKey.DescribeConfigs,
  ApiKey.AlterConfigs,
  ApiKey.IncrementalAlterConfigs,
  ApiKey.DeleteRecords,
  ApiKey.OffsetForLeaderEpoch,
  ApiKey.ShareFetch,
  ApiKey.ShareAcknowledge,
]);

interface ApiVersionRange {
  apiKey: number;
  minVersion: number;
  maxVersion: number;
}

export interface ApiVersionsBody {
  errorCode: number;
  apiKeys?: ApiVersionRange[];
}

/** Clamps the ranges in place, dropping APIs left with no common version. Returns true if changed. */
export function clampApiVersions(body: ApiVersionsBody): boolean {
  const keys = body.apiKeys;
  if (!keys) return false;
  let changed = false;
  const kept: ApiVersionRange[] = [];
  for (const range of keys) {
    const schema = DECODED_APIS.has(range.apiKey) ? apiSchema(range.apiKey) : undefined;
    if (schema) {
      const min = Math.max(range.minVersion, schema.minVersion);
      const max = Math.min(range.maxVersion, schema.maxVersion);
      if (min > max) {
        changed = true;
        continue;
      }
      if (min !== range.minVersion || max !== range.maxVersion) {
        range.minVersion = min;
        range.maxVersion = max;
        changed = true;
      }
    }
    kept.push(range);
  }
  body.apiKeys = kept;
  return changed;
}

/** The highest version both sides speak, or undefined when they share none. */
export function commonVersion(ours: { minVersion: number; maxVersion: number }, theirs: { minVersion: number; maxVersion: number }): number | undefined {
  const max = Math.min(ours.maxVersion, theirs.maxVersion);
  return max >= Math.max(ours.minVersion, theirs.minVersion) ? max : undefined;
}
