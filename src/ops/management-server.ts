/**
 * The management HTTP endpoint, on its own port (localhost by default) so it is never exposed
 * with the Kafka listener: Prometheus scrapes, Kubernetes probes and operator actions such as
 * `kcompact compact` arrive here.
 */
import http from 'node:http';
import type { Logger } from './log.js';
import type { HostPort } from '../proxy/broker-map.js';

/** An answer other than 200 with a JSON body: a status, a content type and a body as given. */
export class Reply {
  private constructor(readonly status: number, readonly contentType: string, readonly body: string) {}

  static json(status: number, value: unknown): Reply {
    return new Reply(status, 'application/json', JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)) + '\n');
  }

  static text(status: number, body: string, contentType = 'text/plain; charset=utf-8'): Reply {
    return new Reply(status, contentType, body);
  }
}

/** Resolves to a Reply, or to any other value, which is answered as 200 JSON. */
export type Route = (url: URL) => Promise<unknown>;

export interface ManagementServer {
  address: HostPort;
  close(): Promise<void>;
}

/** Routes are keyed "METHOD /path"; a route that throws is answered 500 with its message. */
export async function startManagementServer(listen: HostPort, routes: ReadonlyMap<string, Route>, log: Logger): Promise<ManagementServer> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const key = `${req.method} ${url.pathname}`;
    const route = routes.get(key);
    const send = (reply: Reply) => {
      res.writeHead(reply.status, { 'content-type': reply.contentType });
      res.end(reply.body);
    };
    if (!route) {
      send(Reply.json(404, { error: `no route ${key}`, routes: [...routes.keys()] }));
      return;
    }
    route(url).then(
      (body) => send(body instanceof Reply ? body : Reply.json(200, body)),
      (err: Error) => {
        log.warn('management request failed', { route: key, err });
        send(Reply.json(500, { error: err.message }));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: listen.host, port: listen.port }, () => resolve());
  });
  const addr = server.address() as { address: string; port: number };
  log.info('management endpoint listening', { address: `${addr.address}:${addr.port}` });
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
