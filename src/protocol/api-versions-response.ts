/**
 * Reading an ApiVersions answer, for the proxy's own upstream client and for the answers it
 * relays to clients: one rule, Kafka's (ApiVersionsResponse.parse in its clients).
 */
import { ApiKey, decodeResponse, type ApiVersionsResponse } from './messages.js';

/**
 * The body at `offset` in `frame`, read at the version asked, and as v0 only when that fails: a
 * broker that did not know the version asked answers with a v0 body, and the error code alone
 * does not tell which body it is. `version` is the one it was read at, to re-encode it at.
 */
export function decodeApiVersionsResponse(frame: Buffer, offset: number, version: number): { body: ApiVersionsResponse; version: number } {
  try {
    return { body: decodeResponse(ApiKey.ApiVersions, version, frame, offset), version };
  } catch (err) {
    if (version === 0) throw err;
    try {
      return { body: decodeResponse(ApiKey.ApiVersions, 0, frame, offset), version: 0 };
    } catch {
      throw err;
    }
  }
}
