/**
 * What the proxy tells clients it supports: the upstream's ApiVersions answer, intersected with
 * the versions the proxy can decode for the APIs its filters read or change.
 *
 * APIs the proxy never decodes pass through as opaque frames, so any version the upstream offers
 * works for them and is advertised unchanged. For the APIs it decodes, versions newer than the
 * message definitions it was generated from are withheld: the proxy could not parse them, and a
 * client that negotiated one would get a closed connection instead of data.
 */
import { apiSchema, type ApiVersionsResponse, type ApiVersionsResponseApiVersion } from '../protocol/messages.js';

/** Clamps the ranges in place, dropping APIs left with no common version. Returns true if changed. */
export function clampApiVersions(body: Pick<ApiVersionsResponse, 'apiKeys'>, decoded: ReadonlySet<number>): boolean {
  const keys = body.apiKeys;
  if (!keys) return false;
  let changed = false;
  const kept: ApiVersionsResponseApiVersion[] = [];
  for (const range of keys) {
    const schema = decoded.has(range.apiKey) ? apiSchema(range.apiKey) : undefined;
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
