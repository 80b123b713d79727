/**
 * The management HTTP listeners, each on its own port and never the Kafka listener: the metrics
 * listener (Prometheus scrapes, Kubernetes probes), which a pod opens to its network, and the
 * admin listener (operator actions such as `kcompact compact`), loopback unless a token guards it.
 */
import http from 'node:http';
import type { Logger } from '../common/log.js';
import { LogThrottle } from '../common/log-throttle.js';
import type { HostPort } from '../common/host-port.js';

/** An answer other than 200 with a JSON body: a status, a content type, headers and a body as given. */
export class Reply {
  private constructor(
    readonly status: number,
    readonly contentType: string,
    readonly body: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {}

  static json(status: number, value: unknown, headers: Record<string, string> = {}): Reply {
    return new Reply(status, 'application/json', JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)) + '\n', headers);
  }

  static text(status: number, body: string, contentType = 'text/plain; charset=utf-8'): Reply {
    return new Reply(status, contentType, body);
  }
}

/** Resolves to a Reply, or to any other value, which is answered as 200 JSON. */
export type Route = (url: URL) => Promise<unknown>;

/** Why a request was turned away before any route ran (the label of the refusals metric). */
export type RefusalReason = 'admin-route' | 'no-token' | 'wrong-token' | 'browser';

export interface Refusal {
  reason: RefusalReason;
  reply: Reply;
  /** What the operator should do, in the log line. */
  fix: string;
}

/** Looks at a request before its route: a Refusal answers it instead, and nothing it asked for happens. */
export type Gate = (req: http.IncomingMessage, url: URL) => Refusal | undefined;
/** The fields a RequestGate reads: node:http's IncomingMessage has them, and so has the table API's own server's request. */
export interface GatedRequest {
  headers: { origin?: string; 'sec-fetch-site'?: string; host?: string; authorization?: string };
}
/** A gate that looks at the request's headers only. */
export type RequestGate = (req: GatedRequest) => Refusal | undefined;

/** The HTTP listeners; 'tables' is the table API's (src/tables/), which shares the gates and the refusals metric. */
export type ListenerName = 'metrics' | 'admin' | 'tables';

export interface ListenerOptions {
  listener: ListenerName;
  gate?: Gate;
  /** Counts each refusal (every one, not only the ones logged). */
  onRefused?: (reason: RefusalReason) => void;
  /** The clock of the refusal log's once-a-minute rule. */
  now?: () => number;
}

export interface ManagementServer {
  address: HostPort;
  close(): Promise<void>;
}

/** A source that keeps knocking is logged once a minute, with a count of what was held back. */
const REFUSAL_LOG_INTERVAL_MS = 60_000;

/** Routes are keyed "METHOD /path"; a route that throws is answered 500 with its message. */
export async function startManagementServer(
  listen: HostPort,
  routes: ReadonlyMap<string, Route>,
  log: Logger,
  opts: ListenerOptions = { listener: 'metrics' },
): Promise<ManagementServer> {
  const refusals = new LogThrottle(REFUSAL_LOG_INTERVAL_MS, opts.now);
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const key = `${req.method} ${url.pathname}`;
    const send = (reply: Reply) => {
      res.writeHead(reply.status, { ...reply.headers, 'content-type': reply.contentType });
      res.end(reply.body);
    };
    const refusal = opts.gate?.(req, url);
    if (refusal) {
      opts.onRefused?.(refusal.reason);
      const source = req.socket.remoteAddress ?? 'unknown';
      refusals.warn(log, source, 'refused a management request', {
        listener: opts.listener,
        source,
        route: key,
        status: refusal.reply.status,
        reason: refusal.reason,
        fix: refusal.fix,
      });
      send(refusal.reply);
      return;
    }
    const route = routes.get(key);
    if (!route) {
      send(Reply.json(404, { error: `no route ${key}`, routes: [...routes.keys()] }));
      return;
    }
    route(url).then(
      (body) => send(body instanceof Reply ? body : Reply.json(200, body)),
      (err: Error) => {
        log.warn('management request failed', { listener: opts.listener, route: key, err });
        send(Reply.json(500, { error: err.message }));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: listen.host, port: listen.port }, () => resolve());
  });
  const addr = server.address() as { address: string; port: number };
  log.info(`${opts.listener} endpoint listening`, { address: `${addr.address}:${addr.port}` });
  return {
    address: { host: addr.address, port: addr.port },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        // Keep-alive connections (a Prometheus scraper's) would hold close() open.
        server.closeAllConnections();
      }),
  };
}
