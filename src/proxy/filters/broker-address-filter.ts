/**
 * Broker addresses are swapped for the proxy's own in every response that carries them, so a
 * client never connects around the proxy. Responses whose addresses are already the proxy's go
 * on as the bytes that came.
 */
import { ApiKey } from '../../protocol/messages.js';
import type { BrokerMap } from '../broker-map.js';
import type { Filter } from '../filter/filter.js';

interface NodeAddress {
  host: string;
  port: number;
}

const ENDPOINT_TYPE_CONTROLLER = 2;

/** Rewrites one entry in place; entries without a usable node id (errors: -1) are left alone. */
function rewriteNode(brokers: BrokerMap, entry: NodeAddress, nodeId: number): boolean {
  if (nodeId < 0 || !entry.host || !brokers.portFits(nodeId)) return false;
  const local = brokers.learn(nodeId, entry.host, entry.port);
  if (entry.host === local.host && entry.port === local.port) return false;
  entry.host = local.host;
  entry.port = local.port;
  return true;
}

function rewriteNodes(brokers: BrokerMap, list: readonly (NodeAddress & { nodeId: number })[] | undefined): boolean {
  let changed = false;
  for (const entry of list ?? []) changed = rewriteNode(brokers, entry, entry.nodeId) || changed;
  return changed;
}

export function brokerAddressFilter(brokers: BrokerMap): Filter {
  return {
    name: 'broker-addresses',
    apis: {
      [ApiKey.Metadata]: {
        onResponse: (res, ctx) => (rewriteNodes(brokers, res.body.brokers) ? ctx.forward(res.body) : ctx.forward()),
      },
      [ApiKey.FindCoordinator]: {
        onResponse: (res, ctx) => {
          const body = res.body;
          const changed = res.apiVersion < 4 ? rewriteNode(brokers, body as NodeAddress, body.nodeId ?? -1) : rewriteNodes(brokers, body.coordinators);
          return changed ? ctx.forward(body) : ctx.forward();
        },
      },
      [ApiKey.DescribeCluster]: {
        onResponse: (res, ctx) => {
          const body = res.body;
          // Controller endpoints (bootstrap.controllers clients) are not proxied: their ids would collide with broker ports.
          if (body.endpointType === ENDPOINT_TYPE_CONTROLLER) return ctx.forward();
          let changed = false;
          for (const b of body.brokers) changed = rewriteNode(brokers, b, b.brokerId) || changed;
          return changed ? ctx.forward(body) : ctx.forward();
        },
      },
      [ApiKey.Produce]: {
        minVersion: 10,
        onResponse: (res, ctx) => (rewriteNodes(brokers, res.body.nodeEndpoints) ? ctx.forward(res.body) : ctx.forward()),
      },
      [ApiKey.Fetch]: {
        minVersion: 16,
        onResponse: (res, ctx) => (rewriteNodes(brokers, res.body.nodeEndpoints) ? ctx.forward(res.body) : ctx.forward()),
      },
      [ApiKey.ShareFetch]: {
        onResponse: (res, ctx) => (rewriteNodes(brokers, res.body.nodeEndpoints) ? ctx.forward(res.body) : ctx.forward()),
      },
      [ApiKey.ShareAcknowledge]: {
        onResponse: (res, ctx) => (rewriteNodes(brokers, res.body.nodeEndpoints) ? ctx.forward(res.body) : ctx.forward()),
      },
    },
  };
}
