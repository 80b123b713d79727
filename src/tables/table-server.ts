/**
 * The table API's HTTP listener (--tables-listen; docs/tables.md): its own HTTP/1.1 server
 * (common/http1, leaner per request than node:http), never the Kafka or management listeners.
 * Each request passes the gate (the bearer token, no web pages), is parsed whole, then goes to
 * its route; whatever fails is answered as JSON `{"error", "fix"}` with its status, and counted.
 */
import type { HostPort } from '../common/host-port.js';
import { HeaderFields, HttpError, startHttp1Server, type Http1Request, type ResponseWriter } from '../common/http1/server.js';
import { LogThrottle } from '../common/log-throttle.js';
import type { RefusalReason, RequestGate } from '../ops/management-server.js';
import type { TableRouteName } from '../ops/metrics/table-metrics.js';
import { ApiError, apiErrorOf } from './api-error.js';
import { ChangeStreams, type ChangeStreamOptions } from './change-stream.js';
import { getKey, topicInfo } from './key-reads.js';
import { writeKey } from './key-writes.js';
import { JsonText, type TableAnswer } from './table-answer.js';
import type { TableDeps } from './table-deps.js';
import { parseTableRequest, routeOf, type TableRequest } from './table-request.js';

/** Larger values are refused before they are read whole (413); the store's own limit is usually lower (1 MiB in Kafka). */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;
/** Failures of one kind are logged at warn once per this. */
const FAILURE_LOG_INTERVAL_MS = 10_000;

export interface TableServerOptions {
  listen: HostPort;
  deps: TableDeps;
  /** The bearer token and web-page check (ops/admin-access.ts bearerGate). */
  gate?: RequestGate;
  /** Counts each refusal by the gate. */
  onRefused?: (reason: RefusalReason) => void;
  changes?: Partial<ChangeStreamOptions>;
  maxBodyBytes?: number;
}

export interface TableServer {
  address: HostPort;
  /** Change streams open now. */
  readonly watchers: number;
  close(): Promise<void>;
}

/** The body whole; a 413 once it passes `max` (the server reads no further). */
async function readBody(req: Http1Request, max: number): Promise<Buffer> {
  try {
    return await req.body();
  } catch (err) {
    if (err instanceof HttpError && err.status === 413) {
      throw new ApiError(413, `the body has more than ${max} bytes`, `write a value of at most ${max} bytes (the store's own limit may be lower)`);
    }
    throw err instanceof HttpError ? new ApiError(err.status, err.message, err.fix) : err;
  }
}

const JSON_HEADERS = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' } as const;
const JSON_FIELDS = new HeaderFields(JSON_HEADERS);
/** An answer made once and sent many times (a warm key's, key-reads.ts) has its fields written out once. */
const fieldsOf = new WeakMap<TableAnswer, HeaderFields>();

function headerFields(answer: TableAnswer): HeaderFields {
  if (!answer.headers) return JSON_FIELDS;
  if (!(answer.body instanceof JsonText)) return new HeaderFields({ ...JSON_HEADERS, ...answer.headers });
  let fields = fieldsOf.get(answer);
  if (!fields) fieldsOf.set(answer, (fields = new HeaderFields({ ...JSON_HEADERS, ...answer.headers })));
  return fields;
}

/** Head and body in one write, with its Content-Length (the writer's rule for an answer ended at once). */
function send(res: ResponseWriter, answer: TableAnswer): void {
  const body = answer.body instanceof JsonText ? answer.body.text : JSON.stringify(answer.body) + '\n';
  res.writeHead(answer.status, headerFields(answer));
  res.end(body);
}

export async function startTableServer(opts: TableServerOptions): Promise<TableServer> {
  const { deps } = opts;
  const { log } = deps;
  const maxBody = opts.maxBodyBytes ?? MAX_BODY_BYTES;
  const streams = new ChangeStreams(deps, opts.changes);
  const failures = new LogThrottle(FAILURE_LOG_INTERVAL_MS);

  const answer = async (req: Http1Request, res: ResponseWriter, parsed: TableRequest): Promise<TableAnswer | undefined> => {
    switch (parsed.route) {
      case 'get_key':
        return getKey(deps, parsed);
      case 'put_key':
      case 'delete_key':
        return writeKey(deps, parsed, await readBody(req, maxBody));
      case 'topic':
        return topicInfo(deps, parsed);
      case 'changes':
        await streams.start(parsed, res);
        return undefined;
    }
  };

  const server = await startHttp1Server({ host: opts.listen.host, port: opts.listen.port, maxBodyBytes: maxBody }, (req, res) => {
    const started = performance.now();
    const rawUrl = req.url;
    const route: TableRouteName = routeOf(req.method, rawUrl);
    const done = (status: number) => deps.metrics?.answered(route, status, (performance.now() - started) / 1000);
    const refusal = opts.gate?.(req);
    if (refusal) {
      opts.onRefused?.(refusal.reason);
      failures.warn(log, `refused ${refusal.reason} ${req.socket.remoteAddress}`, 'refused a table API request', {
        source: req.socket.remoteAddress,
        route,
        status: refusal.reply.status,
        reason: refusal.reason,
        fix: refusal.fix,
      });
      res.writeHead(refusal.reply.status, { ...refusal.reply.headers, 'content-type': refusal.reply.contentType });
      res.end(refusal.reply.body);
      done(refusal.reply.status);
      return;
    }
    let parsed: TableRequest;
    try {
      parsed = parseTableRequest(req.method, rawUrl, req.headers, route);
    } catch (err) {
      const e = apiErrorOf(err, `${req.method} ${rawUrl}`);
      send(res, { status: e.status, body: e.body, headers: e.headers });
      done(e.status);
      return;
    }
    answer(req, res, parsed).then(
      (a) => {
        if (a) send(res, a);
        done(a?.status ?? 200);
      },
      (err: unknown) => {
        const e = apiErrorOf(err, `${req.method} ${route.replace('_', ' ')} of ${parsed.topic}`);
        // A 503 a route chose (the index behind, the engine starting) is an answer, not a failure.
        const failed = e.status >= 500 && !(err instanceof ApiError && e.status === 503);
        const fields = { route, topic: parsed.topic, status: e.status, err, fix: e.fix };
        if (failed) failures.warn(log, `${route} ${e.status} ${err instanceof Error ? err.name : typeof err}`, 'a table API request failed', fields);
        else log.debug('a table API request was refused', fields);
        if (res.headersSent) res.end();
        // A body not read whole (413) is not waited for: the server closes the connection after the answer.
        else send(res, { status: e.status, body: e.body, headers: e.headers });
        done(e.status);
      },
    );
  });
  const addr = server.address;
  log.info('table API listening', { address: `${addr.host}:${addr.port}` });
  return {
    address: addr,
    get watchers() {
      return streams.open;
    },
    close: () => {
      streams.closeAll();
      return server.close();
    },
  };
}
