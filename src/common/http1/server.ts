/**
 * A small HTTP/1.1 server on node:net, for listeners whose every answer is small JSON or a
 * stream: node:http's per-request machinery (IncomingMessage and ServerResponse streams, header
 * objects built twice) costs more CPU than the answer itself there. What it accepts and refuses
 * is request-parser.ts; how answers are framed, response-writer.ts; keep-alive, pipelining and
 * the timeouts, connection.ts.
 */
import net from 'node:net';
import { Connection, type ConnectionOptions, type Http1Handler } from './connection.js';
import { DEFAULT_PARSER_LIMITS } from './request-parser.js';

export type { Http1Handler, Http1Request } from './connection.js';
export { HttpError } from './request-parser.js';
export { HeaderFields, type ResponseWriter } from './response-writer.js';

export interface Http1ServerOptions extends Partial<ConnectionOptions> {
  host: string;
  port: number;
}

export const DEFAULT_CONNECTION_OPTIONS: ConnectionOptions = {
  limits: DEFAULT_PARSER_LIMITS,
  maxBodyBytes: 1024 * 1024,
  headersTimeoutMs: 60_000,
  requestTimeoutMs: 300_000,
  keepAliveTimeoutMs: 5_000,
  lingerMs: 2_000,
};

/** The timeouts are checked on one timer for all connections: no timer is set or cleared per request. */
const MAX_CHECK_INTERVAL_MS = 1_000;

export interface Http1Server {
  readonly address: { host: string; port: number };
  /** Connections open now. */
  readonly connections: number;
  /** Stops listening and ends every connection; answers being written are cut short. */
  close(): Promise<void>;
}

export async function startHttp1Server(options: Http1ServerOptions, handler: Http1Handler): Promise<Http1Server> {
  const { host, port, ...rest } = options;
  const opts: ConnectionOptions = { ...DEFAULT_CONNECTION_OPTIONS, ...rest };
  const open = new Set<Connection>();
  const server = net.createServer({ allowHalfOpen: true }, (socket) => {
    open.add(new Connection(socket, handler, opts, (c) => open.delete(c)));
  });
  const interval = Math.min(MAX_CHECK_INTERVAL_MS, opts.headersTimeoutMs / 2, opts.keepAliveTimeoutMs / 2, opts.requestTimeoutMs / 2);
  const timer = setInterval(
    () => {
      const now = Date.now();
      for (const c of open) c.checkTimeouts(now);
    },
    Math.max(10, interval),
  );
  timer.unref();
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err) => {
      clearInterval(timer);
      reject(err);
    });
    server.listen({ host, port }, () => resolve());
  });
  const addr = server.address() as net.AddressInfo;
  return {
    address: { host: addr.address, port: addr.port },
    get connections() {
      return open.size;
    },
    close: () =>
      new Promise((resolve) => {
        clearInterval(timer);
        server.close(() => resolve());
        for (const c of open) c.destroy();
      }),
  };
}
