/**
 * What the proxy changes or learns in upstream responses: broker addresses are swapped for the
 * proxy's own in every response that carries them, so a client never connects around the proxy,
 * and topic ids are learned where topics are listed, created or deleted. Each rewriter mutates the
 * decoded body and says whether anything changed; an unchanged response is forwarded as its
 * original bytes.
 */
import { ApiKey } from '../protocol/messages.js';
import type { BrokerMap } from './broker-map.js';
import type { TopicIds } from './topic-ids.js';

interface NodeAddress {
  nodeId?: number;
  brokerId?: number;
  host: string;
  port: number;
}

/** Rewrites one entry in place; entries without a usable node id (errors: -1) are left alone. */
function rewriteNode(brokers: BrokerMap, entry: NodeAddress, nodeId: number): boolean {
  if (nodeId < 0 || !entry.host || !brokers.portFits(nodeId)) return false;
  const local = brokers.learn(nodeId, entry.host, entry.port);
  if (entry.host === local.host && entry.port === local.port) return false;
  entry.host = local.host;
  entry.port = local.port;
  return true;
}

function rewriteList(brokers: BrokerMap, list: NodeAddress[] | undefined | null, idField: 'nodeId' | 'brokerId'): boolean {
  let changed = false;
  for (const entry of list ?? []) changed = rewriteNode(brokers, entry, entry[idField] ?? -1) || changed;
  return changed;
}

export interface RewriteContext {
  brokers: BrokerMap;
  topics: TopicIds;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Body = any;

export interface ResponseRewriter {
  /** Versions below this cannot carry addresses or topic ids: their frames are not decoded. */
  minVersion: number;
  rewrite(body: Body, ctx: RewriteContext, version: number): boolean;
}

const rewriter = (minVersion: number, rewrite: ResponseRewriter['rewrite']): ResponseRewriter => ({ minVersion, rewrite });

const ENDPOINT_TYPE_CONTROLLER = 2;

export const responseRewriters: ReadonlyMap<number, ResponseRewriter> = new Map<number, ResponseRewriter>([
  [
    ApiKey.Metadata,
    rewriter(0, (body, ctx) => {
      for (const t of body.topics ?? []) ctx.topics.learn(t.name, t.topicId);
      return rewriteList(ctx.brokers, body.brokers, 'nodeId');
    }),
  ],
  [
    ApiKey.FindCoordinator,
    rewriter(0, (body, ctx, version) => {
      if (version < 4) return rewriteNode(ctx.brokers, body, body.nodeId);
      return rewriteList(ctx.brokers, body.coordinators, 'nodeId');
    }),
  ],
  [
    ApiKey.DescribeCluster,
    // Controller endpoints (bootstrap.controllers clients) are not proxied: their ids would
    // collide with broker ports.
    rewriter(0, (body, ctx) => (body.endpointType === ENDPOINT_TYPE_CONTROLLER ? false : rewriteList(ctx.brokers, body.brokers, 'brokerId'))),
  ],
  [ApiKey.Produce, rewriter(10, (body, ctx) => rewriteList(ctx.brokers, body.nodeEndpoints, 'nodeId'))],
  [ApiKey.Fetch, rewriter(16, (body, ctx) => rewriteList(ctx.brokers, body.nodeEndpoints, 'nodeId'))],
  [ApiKey.ShareFetch, rewriter(0, (body, ctx) => rewriteList(ctx.brokers, body.nodeEndpoints, 'nodeId'))],
  [ApiKey.ShareAcknowledge, rewriter(0, (body, ctx) => rewriteList(ctx.brokers, body.nodeEndpoints, 'nodeId'))],
  [
    ApiKey.CreateTopics,
    rewriter(7, (body, ctx) => {
      for (const t of body.topics ?? []) ctx.topics.learn(t.name, t.topicId);
      return false;
    }),
  ],
  [
    ApiKey.DeleteTopics,
    rewriter(1, (body, ctx) => {
      for (const t of body.responses ?? []) if (t.errorCode === 0 && t.name) ctx.topics.forget(t.name);
      return false;
    }),
  ],
]);
