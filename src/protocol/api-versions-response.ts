/**
 * Reading an ApiVersions answer, for the proxy's own upstream client and for the answers it
 * relays to clients: one rule, Kafka's (ApiVersionsResponse.parse in its clients).
 */
import { ApiKey, apiSchema, decodeResponse, type ApiVersionsResponse, type ApiVersionsResponseApiVersion } from './messages.js';
import { Reader } from './wire/reader.js';

const FLEXIBLE_FROM = apiSchema(ApiKey.ApiVersions)!.flexibleMin!;

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

/**
 * What an answer that does not decode still says about ApiVersions itself: its entry for
 * ApiVersions (key 18), read no further than the api keys list, laid out as at the version asked
 * and then as at v0. Java's client reads no further than the fields it knows either, so a store
 * whose answer has bytes after them (librdkafka's mock cluster, asked above the v2 it speaks)
 * still says which version to ask instead. Undefined when it lists none or not even that reads.
 */
export function readApiVersionsEntry(frame: Buffer, offset: number, version: number): ApiVersionsResponseApiVersion | undefined {
  for (const layout of version === 0 ? [0] : [version, 0]) {
    try {
      const r = new Reader(frame, offset);
      r.int16(); // the error code
      const flexible = layout >= FLEXIBLE_FROM;
      const count = flexible ? r.compactArrayLength() : r.arrayLength();
      if (count < 0) continue; // a null list: not laid out so
      let entry: ApiVersionsResponseApiVersion | undefined;
      for (let i = 0; i < count; i++) {
        const [apiKey, minVersion, maxVersion] = [r.int16(), r.int16(), r.int16()];
        if (flexible) r.taggedFields();
        if (apiKey === ApiKey.ApiVersions) entry = { apiKey, minVersion, maxVersion };
      }
      return entry;
    } catch {
      // not laid out so; the next layout, if any
    }
  }
  return undefined;
}
