/**
 * Drives one filter with typed requests and responses, as the proxy would, and reports what it
 * did: forwarded (and with which body), answered or closed.
 * The filter runs in a real FilterChain of its own, over frames encoded and decoded by the real
 * codec, so what a test sees is what a client and an upstream would see.
 */
import { wholeFrame } from '../../src/protocol/wire/byte-parts.js';
import { decodeRequestHeader, decodeResponseHeader, responseHeaderVersion } from '../../src/protocol/headers.js';
import {
  decodeRequest,
  decodeResponse,
  encodeRequestFrame,
  encodeResponseFrame,
  type ApiKeyNumber,
  type BodyInit,
  type RequestBodies,
  type ResponseBodies,
} from '../../src/protocol/messages.js';
import { Closing, FilterChain, type PendingContinuation } from '../../src/proxy/filter/filter-chain.js';
import type { Filter } from '../../src/proxy/filter/filter.js';

export interface RequestOptions {
  correlationId?: number;
  clientId?: string | null;
  expectsResponse?: boolean;
  /** The client connection the request comes on; one for every request of the harness unless given. */
  connection?: object;
}

export type ResponseRun<K extends ApiKeyNumber> =
  | {
      kind: 'forward';
      /** The response as the client would read it. */
      body: ResponseBodies[K];
      /** Whether the frame differs from the one given (encoded anew or replaced). */
      changed: boolean;
      frame: Buffer;
    }
  | { kind: 'close'; reason: string; error?: Error };

export type RequestRun<K extends ApiKeyNumber> =
  | {
      kind: 'forward';
      /** The request as the upstream would read it (at `upstreamVersion`). */
      body: RequestBodies[K];
      /** Whether the frame differs from the client's (encoded anew or replaced). */
      changed: boolean;
      frame: Buffer;
      upstreamVersion: number;
      /** Whether the filter asked to see this request's response. */
      awaitsResponse: boolean;
      closeAfter?: string;
      /** Plays the upstream's answer to this request through the filter. */
      respond(body: BodyInit<ResponseBodies[K]>): Promise<ResponseRun<K>>;
    }
  | { kind: 'respond'; body: ResponseBodies[K]; frame: Buffer }
  | { kind: 'close'; reason: string; error?: Error };

export class FilterHarness {
  readonly chain: FilterChain;
  /** The connection requests come on unless one is given. */
  readonly connection: object = {};

  constructor(readonly filter: Filter) {
    this.chain = new FilterChain([filter]);
  }

  async request<K extends ApiKeyNumber>(apiKey: K, version: number, body: BodyInit<RequestBodies[K]>, opts: RequestOptions = {}): Promise<RequestRun<K>> {
    const correlationId = opts.correlationId ?? 7;
    const frame = encodeRequestFrame({ apiKey, apiVersion: version, correlationId, clientId: opts.clientId ?? 'harness' }, body as object);
    const original = Buffer.from(frame);
    const routed = await this.chain.request(frame, decodeRequestHeader(frame.subarray(4)), opts.expectsResponse ?? true, opts.connection ?? this.connection);
    if (routed instanceof Closing) return { kind: 'close', reason: routed.reason, error: routed.error };
    if (routed.kind === 'respond') {
      const whole = wholeFrame(routed.frame);
      return { kind: 'respond', body: readResponse(apiKey, version, whole), frame: whole };
    }
    const header = decodeRequestHeader(routed.frame.subarray(4));
    const continuations = routed.continuations;
    return {
      kind: 'forward',
      body: decodeRequest(apiKey, routed.upstreamVersion, routed.frame, 4 + header.bodyOffset!),
      changed: !routed.frame.equals(original),
      frame: routed.frame,
      upstreamVersion: routed.upstreamVersion,
      awaitsResponse: continuations !== null,
      closeAfter: routed.closeAfter,
      respond: (response) => this.playResponse(apiKey, routed.upstreamVersion, correlationId, response, continuations),
    };
  }

  /** Plays an upstream response to a request the filter did not ask to see (its response hooks alone). */
  response<K extends ApiKeyNumber>(apiKey: K, version: number, body: BodyInit<ResponseBodies[K]>, correlationId = 7): Promise<ResponseRun<K>> {
    return this.playResponse(apiKey, version, correlationId, body, null);
  }

  private async playResponse<K extends ApiKeyNumber>(
    apiKey: K,
    version: number,
    correlationId: number,
    body: BodyInit<ResponseBodies[K]>,
    continuations: PendingContinuation[] | null,
  ): Promise<ResponseRun<K>> {
    const frame = encodeResponseFrame(apiKey, version, correlationId, body as object);
    const original = Buffer.from(frame);
    const routed = await this.chain.response(apiKey, version, correlationId, frame, continuations);
    if (routed instanceof Closing) return { kind: 'close', reason: routed.reason, error: routed.error };
    const out = wholeFrame(routed);
    return { kind: 'forward', body: readResponse(apiKey, version, out), changed: !out.equals(original), frame: out };
  }
}

function readResponse<K extends ApiKeyNumber>(apiKey: K, version: number, frame: Buffer): ResponseBodies[K] {
  const header = decodeResponseHeader(frame.subarray(4), responseHeaderVersion(apiKey, version));
  return decodeResponse(apiKey, version, frame, 4 + header.bodyOffset);
}
