/**
 * How features change traffic without touching the connection machinery: an interceptor is
 * registered for an API key and sees each such request. It may forward it (as is, or replaced)
 * with an optional transform of the upstream's response, or answer it locally.
 *
 * Interceptors may be asynchronous. The connection keeps the client's order regardless: later
 * requests wait until an earlier one has been forwarded or answered (a broker also handles a
 * connection's requests one at a time), and responses go back in request order.
 */
import { decodeRequest } from '../protocol/messages.js';
import type { RequestHeader } from '../protocol/headers.js';

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
