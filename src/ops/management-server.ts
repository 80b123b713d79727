/**
 * The management HTTP endpoint, on its own port (localhost by default) so it is never exposed
 * with the Kafka listener: operator actions such as `kcompact compact` arrive here.
 */
import http from 'node:http';
import type { Logger } from './log.js';
import type { HostPort } from '../proxy/broker-map.js';

export type Route = (url: URL) => Promise<unknown>;

export interface ManagementServer {
  address: HostPort;
  close(): Promise<void>;
}

/** Routes are keyed "METHOD /path"; each answers JSON, errors become 500 with a message. */
export async function startManagementServer(listen: HostPort, routes: ReadonlyMap<string, Route>, log: Logger): Promise<ManagementServer> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const route = routes.get(`${req.method} ${url.pathname}`);
    const reply = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body, (_k, v) => (typeof v === 'bigint' ? v.toString() : v)) + '\n');
    };
    if (!route) {
      reply(404, { error: `no route ${req.method} ${url.pathname}`, routes: [...routes.keys()] });
      return;
    }
    route(url).then(
      (body) => reply(200, body),
      (err: Error) => {
        log.warn('management request failed', { route: `${req.method} ${url.pathname}`, err });
        reply(500, { error: err.message });
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
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
