/**
 * How features change traffic without touching the connection machinery: an interceptor is
 * registered for an API key and sees each such request. It may forward it (as is, or replaced)
 * with an optional transform of the upstream's response, or answer it locally.
 *
 * Interceptors may be asynchronous. The connection keeps the client's order regardless: later
 * requests wait until an earlier one has been forwarded or answered (a broker also handles a
 * connection's requests one at a time), and responses go back in request order.
 */
import { decodeRequest, type ApiKeyNumber } from '../protocol/messages.js';
import type { RequestHeader } from '../protocol/headers.js';
import type { Filter, FilterHooks, FilterRequest, RequestContext, RequestOutcome } from './filter/filter.js';

export interface InterceptedRequest {
  apiKey: number;
  apiVersion: number;
  correlationId: number;
  header: RequestHeader;
  /** The whole request frame, size prefix included. */
  frame: Buffer;
  /** False for an acks=0 Produce: nobody reads an answer, Kafka closes the connection on error. */
  expectsResponse: boolean;
  /** The decoded body (decoded once, on first use). */
  body<T extends object = Record<string, any>>(): T; // eslint-disable-line @typescript-eslint/no-explicit-any
}

/** Transforms the upstream's response frame (size prefix included) into the client's. */
export type ResponseTransform = (frame: Buffer) => Buffer | Promise<Buffer>;

export type Interception =
  /** closeAfter: forward, then close the client connection (Kafka's answer to a failed acks=0 Produce). */
  { forward: true; frame?: Buffer; response?: ResponseTransform; closeAfter?: string } | { respond: Buffer } | { close: string };

export interface RequestInterceptor {
  intercept(req: InterceptedRequest): Interception | Promise<Interception>;
}

export type Interceptors = ReadonlyMap<number, RequestInterceptor>;

export function interceptedRequest(frame: Buffer, header: RequestHeader, expectsResponse: boolean): InterceptedRequest {
  let body: object | undefined;
  return {
    apiKey: header.apiKey,
    apiVersion: header.apiVersion,
    correlationId: header.correlationId,
    header,
    frame,
    expectsResponse,
    body<T extends object>(): T {
      body ??= decodeRequest(header.apiKey, header.apiVersion, frame, 4 + header.bodyOffset!);
      return body as T;
    },
  };
}

/** The interceptor as a filter on its API (while the features move to filters of their own). */
export function interceptorFilter(name: string, apiKey: number, interceptor: RequestInterceptor): Filter {
  const onRequest = (
    req: FilterRequest<ApiKeyNumber>,
    ctx: RequestContext<ApiKeyNumber>,
  ): RequestOutcome<ApiKeyNumber> | Promise<RequestOutcome<ApiKeyNumber>> => {
    const intercepted: InterceptedRequest = {
      apiKey: req.apiKey,
      apiVersion: req.apiVersion,
      correlationId: req.correlationId,
      header: req.header,
      frame: req.frame,
      expectsResponse: req.expectsResponse,
      body: <T>() => req.body as T,
    };
    const toOutcome = (d: Interception): RequestOutcome<ApiKeyNumber> => {
      if ('close' in d) return ctx.close(d.close);
      if ('respond' in d) return ctx.respondFrame(d.respond);
      const transform = d.response;
      return ctx.forward({
        frame: d.frame,
        closeAfter: d.closeAfter,
        response: transform
          ? (res, rctx) => {
              const out = transform(res.frame);
              return out instanceof Promise ? out.then((f) => rctx.forwardFrame(f)) : rctx.forwardFrame(out);
            }
          : undefined,
      });
    };
    const decision = interceptor.intercept(intercepted);
    return decision instanceof Promise ? decision.then(toOutcome) : toOutcome(decision);
  };
  return { name, apis: { [apiKey]: { onRequest } } as FilterHooks };
}
