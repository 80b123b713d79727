/**
 * The Fetch version the upstream is asked when the proxy passes a Fetch through untouched.
 *
 * Fetch v16 differs from v15 only by the NodeEndpoints a broker appends to a response when a
 * partition's leader moved (KIP-951); v17 and v18 add only request fields that replicas set
 * (tagged, so a v15 reader skips them). A consumer's v16+ request is byte for byte a valid v15
 * request, and a v15 response is byte for byte a v16+ response without NodeEndpoints.
 *
 * NodeEndpoints sit at the very end of the response, so a v16+ response can only be forwarded once
 * it has arrived whole and been decoded, in case its addresses need rewriting: store-and-forward
 * of every Fetch, which costs consume throughput dearly (docs/performance.md). Asking v15 lets
 * the response stream through as it arrives. What a client loses is the shortcut to a moved
 * leader's address: it finds the new leader through Metadata instead, as it does with any broker
 * older than 3.7.
 */
import { ApiKey } from '../protocol/messages.js';

const STREAMABLE_FETCH_VERSION = 15;
const FIRST_NODE_ENDPOINTS_VERSION = 16;
/** Byte offset of the api version in a request frame (after the size prefix and api key). */
const VERSION_OFFSET = 6;

/** The version to ask upstream for a pass-through request of apiKey at apiVersion. */
export function passThroughVersion(apiKey: number, apiVersion: number): number {
  return apiKey === ApiKey.Fetch && apiVersion >= FIRST_NODE_ENDPOINTS_VERSION ? STREAMABLE_FETCH_VERSION : apiVersion;
}

/**
 * Writes `version` into a request frame's header, in place. `piece` is a part of the frame that
 * starts `at` bytes into it, so a header split across network chunks is patched piece by piece.
 */
export function patchRequestVersion(piece: Buffer, at: number, version: number): void {
  for (let i = 0; i < 2; i++) {
    const pos = VERSION_OFFSET + i - at;
    if (pos >= 0 && pos < piece.length) piece[pos] = i === 0 ? version >>> 8 : version & 0xff;
  }
}
