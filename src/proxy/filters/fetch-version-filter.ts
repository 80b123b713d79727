/**
 * Fetch v16+ passed through is asked of the upstream as v15.
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
 * older than 3.7. A Fetch whose response a filter reads anyway keeps its version.
 */
import { ApiKey } from '../../protocol/messages.js';
import type { Filter } from '../filter/filter.js';

const STREAMABLE_FETCH_VERSION = 15;
const FIRST_NODE_ENDPOINTS_VERSION = 16;

export const fetchVersionFilter: Filter = {
  name: 'fetch-version',
  apis: {
    [ApiKey.Fetch]: {
      passThroughVersion: (version) => (version >= FIRST_NODE_ENDPOINTS_VERSION ? STREAMABLE_FETCH_VERSION : version),
    },
  },
};
