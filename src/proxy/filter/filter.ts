/**
 * What a filter is: the behaviour kcompact adds to one or more APIs, as typed hooks on the
 * requests clients send and the responses that go back to them. The proxy runs its filters as a
 * chain in a declared order (filter-chain.ts): a request passes the filters first to last, its
 * response last to first. A filter sees only the APIs it hooks, and only at the versions it names;
 * every other frame streams through undecoded.
 *
 * A request hook decides what becomes of the request: forward it (as it came, or changed), answer
 * it itself, or close the connection. A forward may carry a continuation that sees this request's
 * response, for filters that need what they learnt from the request. A response hook, or a
 * continuation, passes the response on (as it came, or changed) or closes the connection. Hooks
 * may be asynchronous; the connection keeps the client's order regardless.
 */
import type { RequestHeader } from '../../protocol/headers.js';
import type { ApiKeyNumber, BodyInit, RequestBodies, ResponseBodies } from '../../protocol/messages.js';

/** A request as a filter sees it. */
export interface FilterRequest<K extends ApiKeyNumber> {
  readonly apiKey: K;
  readonly apiVersion: number;
  readonly correlationId: number;
  readonly header: RequestHeader;
  /** The frame as it stands, size prefix included: the client's, or an earlier filter's. */
  readonly frame: Buffer;
  /** False for an acks=0 Produce: nobody reads an answer. */
  readonly expectsResponse: boolean;
  /**
   * The client connection the request came on, as an identity only. Its requests all go to the
   * same upstream broker, so what a broker keeps per client (a share session) can be told apart
   * from the client's sessions with other brokers.
   */
  readonly connection: object;
  /**
   * The body, decoded from `frame` when first read (a filter that decides from the header alone
   * costs no decoding). A filter that changes it passes it to forward() so that it is encoded.
   */
  readonly body: RequestBodies[K];
}

/** A response as a filter sees it. */
export interface FilterResponse<K extends ApiKeyNumber> {
  readonly apiKey: K;
  /** The version the body follows: the one the upstream was asked (or, for ApiVersions, answered). */
  readonly apiVersion: number;
  readonly correlationId: number;
  /** The frame as it stands, size prefix included. */
  readonly frame: Buffer;
  /** The body, decoded when first read. A filter that changes it passes it to forward(). */
  readonly body: ResponseBodies[K];
  /** Answered by a filter further down the chain rather than by the upstream. */
  readonly local: boolean;
}

export type Continuation<K extends ApiKeyNumber> = (res: FilterResponse<K>, ctx: ResponseContext<K>) => ResponseOutcome<K> | Promise<ResponseOutcome<K>>;

declare const outcome: unique symbol;

/** What a request hook decided; made by its context's methods. */
export interface RequestOutcome<K extends ApiKeyNumber> {
  readonly [outcome]: K;
}

/** What a response hook decided; made by its context's methods. */
export interface ResponseOutcome<K extends ApiKeyNumber> {
  readonly [outcome]: K;
}

export interface ForwardRequest<K extends ApiKeyNumber> {
  /** The body to send instead (or the same body, changed in place): it is encoded at the request's version. */
  body?: RequestBodies[K];
  /** A whole request frame to send instead, size prefix included. */
  frame?: Buffer;
  /** Sees this request's response before the filters nearer the client do. */
  response?: Continuation<K>;
  /** Closes the client's connection once the request is on its way (Kafka's answer to a failed acks=0 Produce). */
  closeAfter?: string;
}

export interface FilterContext {
  /** The APIs whose frames the chain decodes (the versions it can read are the only ones it may offer). */
  readonly decodedApis: ReadonlySet<number>;
}

export interface RequestContext<K extends ApiKeyNumber> extends FilterContext {
  /** Passes the request on to the next filter, and after the last one to the upstream. */
  forward(change?: ForwardRequest<K>): RequestOutcome<K>;
  /** Answers the request without the upstream; the filters nearer the client still see the answer. */
  respond(body: BodyInit<ResponseBodies[K]>): RequestOutcome<K>;
  /** Answers with a whole response frame (size prefix included), for answers not at the request's version. */
  respondFrame(frame: Buffer): RequestOutcome<K>;
  /** Closes the client's connection; the request goes nowhere. */
  close(reason: string, error?: Error): RequestOutcome<K>;
}

export interface ResponseContext<K extends ApiKeyNumber> extends FilterContext {
  /** Passes the response on towards the client, as it came or as `body`. */
  forward(body?: ResponseBodies[K]): ResponseOutcome<K>;
  /** Passes on a whole response frame the filter made, size prefix included, at the response's version. */
  forwardFrame(frame: Buffer): ResponseOutcome<K>;
  /** Closes the client's connection instead of answering. */
  close(reason: string, error?: Error): ResponseOutcome<K>;
}

/** A filter's hooks for one API. */
export interface ApiHooks<K extends ApiKeyNumber> {
  /** The lowest version the hooks see (requests by the client's version, responses by the upstream's). */
  minVersion?: number;
  /** The highest version the hooks see. */
  maxVersion?: number;
  onRequest?(req: FilterRequest<K>, ctx: RequestContext<K>): RequestOutcome<K> | Promise<RequestOutcome<K>>;
  onResponse?(res: FilterResponse<K>, ctx: ResponseContext<K>): ResponseOutcome<K> | Promise<ResponseOutcome<K>>;
  /**
   * The version to ask the upstream instead, for a request that reaches it without any filter
   * asking to see its response (streamed requests included). Only for versions whose requests and
   * responses are the same bytes for what kcompact relays.
   */
  passThroughVersion?(version: number): number;
}

export type FilterHooks = { readonly [K in ApiKeyNumber]?: ApiHooks<K> };

export interface Filter {
  /** Names the filter in logs and errors. */
  readonly name: string;
  readonly apis: FilterHooks;
}

/** A filter with one request hook on one API: the shape of most features' filters. */
export function requestFilter<K extends ApiKeyNumber>(name: string, apiKey: K, onRequest: NonNullable<ApiHooks<K>['onRequest']>): Filter {
  return { name, apis: { [apiKey]: { onRequest } } as FilterHooks };
}
