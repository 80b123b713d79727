/**
 * The filters of a proxy, in their declared order, and the one place that decides which frames
 * are decoded: a request is decoded only when a filter hooks its API at its version, a response
 * only when a filter hooks it at the version the upstream was asked or asked to see it. Bodies are
 * decoded once, however many filters read them, and encoded again only when a filter changed them;
 * an unchanged frame goes on as the bytes that came.
 *
 * The connection (connection.ts) owns framing, ordering and backpressure; the chain owns what
 * filters decide. Answers a filter gives pass back through the filters before it, like the
 * upstream's answers do.
 */
import { ProtocolError } from '../../protocol/errors.js';
import type { OutgoingFrame } from '../../protocol/wire/byte-parts.js';
import { decodeApiVersionsResponse } from '../../protocol/api-versions-response.js';
import { decodeRequestHeader, decodeResponseHeader, responseHeaderVersion, type RequestHeader } from '../../protocol/headers.js';
import {
  ApiKey,
  apiName,
  decodeRequest,
  decodeResponseLeniently,
  encodeRequestFrame,
  encodeOutgoingResponse,
  encodeResponseFrame,
  type ApiKeyNumber,
  type RequestBodies,
  type ResponseBodies,
} from '../../protocol/messages.js';
import type {
  ApiHooks,
  Continuation,
  Filter,
  FilterRequest,
  FilterResponse,
  ForwardRequest,
  RequestContext,
  RequestOutcome,
  ResponseContext,
  ResponseOutcome,
} from './filter.js';

/** A hook of one filter for one API, with the filter's place in the chain. */
interface Hooked {
  filter: Filter;
  index: number;
  hooks: ApiHooks<ApiKeyNumber>;
}

/** A continuation a forwarding filter left for the response, with that filter's place. */
export interface PendingContinuation {
  index: number;
  filter: Filter;
  fn: Continuation<ApiKeyNumber>;
}

/** What becomes of a request once the chain has run. */
export type Routed = Forwarded | Answered | Closing;

export interface Forwarded {
  kind: 'forward';
  /** The frame to send upstream, its version already patched to `upstreamVersion`. */
  frame: Buffer;
  upstreamVersion: number;
  /** Filters that asked to see the response, nearest the client first; null when none did. */
  continuations: PendingContinuation[] | null;
  closeAfter?: string;
}

export interface Answered {
  kind: 'respond';
  frame: OutgoingFrame;
}

export class Closing {
  readonly kind = 'close';
  constructor(
    readonly reason: string,
    readonly error?: Error,
  ) {}
}

/** A hook that threw or rejected, named for the log line that closes the connection. */
export class FilterError extends Error {
  constructor(filter: Filter, apiKey: number, direction: 'request' | 'response', cause: unknown) {
    const what = cause instanceof Error ? cause.message : String(cause);
    super(`filter ${filter.name} failed on a ${apiName(apiKey) ?? `api ${apiKey}`} ${direction}: ${what}`, { cause });
    this.name = 'FilterError';
  }
}

type Outcome =
  | { kind: 'forward'; change?: ForwardRequest<ApiKeyNumber> }
  | { kind: 'respond'; body?: object; frame?: Buffer }
  | { kind: 'forward-response'; body?: object; frame?: Buffer }
  | Closing;

/** Byte offset of the api version in a request frame (after the size prefix and api key). */
const VERSION_OFFSET = 6;

/** The connection of requests run without one (tests, benchmarks): all of them one client's. */
const NO_CONNECTION: object = Object.freeze({});

export class FilterChain {
  readonly filters: readonly Filter[];
  readonly decodedApis: ReadonlySet<number>;
  private readonly byApi = new Map<number, Hooked[]>();
  private readonly requestPlan = new Map<number, Hooked[]>();
  private readonly responsePlan = new Map<number, Hooked[]>();
  private readonly requestCtx: RequestContext<ApiKeyNumber>;
  private readonly responseCtx: ResponseContext<ApiKeyNumber>;

  constructor(filters: readonly Filter[]) {
    this.filters = filters;
    filters.forEach((filter, index) => {
      for (const [key, hooks] of Object.entries(filter.apis) as [string, ApiHooks<ApiKeyNumber>][]) {
        if (!hooks) continue;
        const apiKey = Number(key);
        let list = this.byApi.get(apiKey);
        if (!list) this.byApi.set(apiKey, (list = []));
        list.push({ filter, index, hooks });
      }
    });
    this.decodedApis = new Set([...this.byApi].filter(([, list]) => list.some((h) => h.hooks.onRequest || h.hooks.onResponse)).map(([k]) => k));
    const decodedApis = this.decodedApis;
    const close = (reason: string, error?: Error) => new Closing(reason, error);
    this.requestCtx = {
      decodedApis,
      forward: (change) => ({ kind: 'forward', change }) satisfies Outcome as unknown as RequestOutcome<ApiKeyNumber>,
      respond: (body) => ({ kind: 'respond', body }) satisfies Outcome as unknown as RequestOutcome<ApiKeyNumber>,
      respondFrame: (frame) => ({ kind: 'respond', frame }) satisfies Outcome as unknown as RequestOutcome<ApiKeyNumber>,
      close: (reason, error) => close(reason, error) as unknown as RequestOutcome<ApiKeyNumber>,
    };
    this.responseCtx = {
      decodedApis,
      forward: (body) => ({ kind: 'forward-response', body }) satisfies Outcome as unknown as ResponseOutcome<ApiKeyNumber>,
      forwardFrame: (frame) => ({ kind: 'forward-response', frame }) satisfies Outcome as unknown as ResponseOutcome<ApiKeyNumber>,
      close: (reason, error) => close(reason, error) as unknown as ResponseOutcome<ApiKeyNumber>,
    };
  }

  /** Whether a request of this API and version is decoded and run through filters (else it streams). */
  decodesRequest(apiKey: number, apiVersion: number): boolean {
    return this.requestHooks(apiKey, apiVersion).length > 0;
  }

  /** Whether a response at this (upstream) version is run through filters when no filter asked to see it. */
  decodesResponse(apiKey: number, apiVersion: number): boolean {
    return this.responseHooks(apiKey, apiVersion).length > 0;
  }

  /** The version to ask the upstream for a request no filter asked to see the response of. */
  passThroughVersion(apiKey: number, apiVersion: number): number {
    let version = apiVersion;
    for (const h of this.byApi.get(apiKey) ?? []) if (h.hooks.passThroughVersion) version = h.hooks.passThroughVersion(version);
    return version;
  }

  /**
   * Runs a request through the filters that hook it. `frame` includes the size prefix; `header`
   * is its decoded header (with a known body offset); `connection` names the client connection
   * it came on (FilterRequest.connection).
   */
  request(frame: Buffer, header: RequestHeader, expectsResponse: boolean, connection: object = NO_CONNECTION): Routed | Promise<Routed> {
    const hooks = this.requestHooks(header.apiKey, header.apiVersion);
    const req = new ChainRequest(frame, header, expectsResponse, connection);
    return this.runRequest(req, hooks, 0, null);
  }

  /**
   * Runs an upstream response through the filters that hook it or asked to see it, nearest the
   * upstream first. Resolves to the frame for the client, or a Closing.
   */
  response(
    apiKey: number,
    apiVersion: number,
    correlationId: number,
    frame: Buffer,
    continuations: PendingContinuation[] | null,
  ): OutgoingFrame | Closing | Promise<OutgoingFrame | Closing> {
    return this.runResponse(
      new ChainResponse(apiKey, apiVersion, correlationId, frame, false),
      this.responseSteps(apiKey, apiVersion, Infinity, continuations),
      0,
    );
  }

  private requestHooks(apiKey: number, apiVersion: number): Hooked[] {
    const key = apiKey * 0x10000 + apiVersion;
    let plan = this.requestPlan.get(key);
    if (!plan) {
      plan = (this.byApi.get(apiKey) ?? []).filter((h) => h.hooks.onRequest && inRange(h.hooks, apiVersion));
      this.requestPlan.set(key, plan);
    }
    return plan;
  }

  private responseHooks(apiKey: number, apiVersion: number): Hooked[] {
    const key = apiKey * 0x10000 + apiVersion;
    let plan = this.responsePlan.get(key);
    if (!plan) {
      plan = (this.byApi.get(apiKey) ?? []).filter((h) => h.hooks.onResponse && inRange(h.hooks, apiVersion)).reverse();
      this.responsePlan.set(key, plan);
    }
    return plan;
  }

  /**
   * The response steps for filters before `below` in the chain, nearest the upstream first: their
   * response hooks and the continuations they left, a filter's continuation before its hook.
   */
  private responseSteps(apiKey: number, apiVersion: number, below: number, continuations: PendingContinuation[] | null): Step[] {
    const steps: Step[] = [];
    for (const h of this.responseHooks(apiKey, apiVersion)) {
      if (h.index < below) steps.push({ index: h.index, filter: h.filter, run: h.hooks.onResponse!.bind(h.hooks) as Continuation<ApiKeyNumber> });
    }
    if (continuations) {
      for (const c of continuations) if (c.index < below) steps.push({ index: c.index, filter: c.filter, run: c.fn, continuation: true });
      steps.sort((a, b) => b.index - a.index || (a.continuation ? -1 : 0) - (b.continuation ? -1 : 0));
    }
    return steps;
  }

  private runRequest(
    req: ChainRequest,
    hooks: Hooked[],
    from: number,
    continuations: PendingContinuation[] | null,
    closeAfter?: string,
  ): Routed | Promise<Routed> {
    for (let i = from; i < hooks.length; i++) {
      const h = hooks[i]!;
      let out: RequestOutcome<ApiKeyNumber> | Promise<RequestOutcome<ApiKeyNumber>>;
      try {
        out = h.hooks.onRequest!(req as FilterRequest<ApiKeyNumber>, this.requestCtx);
      } catch (err) {
        throw new FilterError(h.filter, req.apiKey, 'request', err);
      }
      if (out instanceof Promise) {
        return out.then(
          (o) => this.afterRequestHook(req, hooks, i, h, o as unknown as Outcome, continuations, closeAfter),
          (err) => {
            throw new FilterError(h.filter, req.apiKey, 'request', err);
          },
        );
      }
      const o = out as unknown as Outcome;
      if (o.kind !== 'forward') return this.answer(req, h, o, continuations);
      if (o.change?.response) (continuations ??= []).push({ index: h.index, filter: h.filter, fn: o.change.response });
      req.apply(o.change);
      closeAfter ??= o.change?.closeAfter;
    }
    return this.forwarded(req, continuations, closeAfter);
  }

  private afterRequestHook(
    req: ChainRequest,
    hooks: Hooked[],
    i: number,
    h: Hooked,
    o: Outcome,
    continuations: PendingContinuation[] | null,
    closeAfter: string | undefined,
  ): Routed | Promise<Routed> {
    if (o.kind !== 'forward') return this.answer(req, h, o, continuations);
    if (o.change?.response) (continuations ??= []).push({ index: h.index, filter: h.filter, fn: o.change.response });
    req.apply(o.change);
    return this.runRequest(req, hooks, i + 1, continuations, closeAfter ?? o.change?.closeAfter);
  }

  private forwarded(req: ChainRequest, continuations: PendingContinuation[] | null, closeAfter: string | undefined): Forwarded {
    const frame = req.outgoingFrame();
    // A response some filter will read is asked at the client's version, so it reads what the client will get.
    const upstreamVersion = continuations ? req.apiVersion : this.passThroughVersion(req.apiKey, req.apiVersion);
    if (upstreamVersion !== req.apiVersion) frame.writeInt16BE(upstreamVersion, VERSION_OFFSET);
    return { kind: 'forward', frame, upstreamVersion, continuations, closeAfter };
  }

  /** A request hook answered or closed: the answer goes back through the filters before it. */
  private answer(req: ChainRequest, h: Hooked, o: Outcome, continuations: PendingContinuation[] | null): Routed | Promise<Routed> {
    if (o instanceof Closing) return o;
    if (o.kind !== 'respond') throw new FilterError(h.filter, req.apiKey, 'request', new Error('a request hook returned a response outcome'));
    let frame: Buffer;
    try {
      frame = o.frame ?? encodeResponseFrame(req.apiKey, req.apiVersion, req.correlationId, o.body!);
    } catch (err) {
      throw new FilterError(h.filter, req.apiKey, 'request', err);
    }
    const steps = this.responseSteps(req.apiKey, req.apiVersion, h.index, continuations);
    if (steps.length === 0) return { kind: 'respond', frame };
    const done = (r: OutgoingFrame | Closing): Routed => (r instanceof Closing ? r : { kind: 'respond', frame: r });
    const res = this.runResponse(new ChainResponse(req.apiKey, req.apiVersion, req.correlationId, frame, true), steps, 0);
    return res instanceof Promise ? res.then(done) : done(res);
  }

  private runResponse(res: ChainResponse, steps: Step[], from: number): OutgoingFrame | Closing | Promise<OutgoingFrame | Closing> {
    for (let i = from; i < steps.length; i++) {
      const step = steps[i]!;
      let out: ResponseOutcome<ApiKeyNumber> | Promise<ResponseOutcome<ApiKeyNumber>>;
      try {
        out = step.run(res as FilterResponse<ApiKeyNumber>, this.responseCtx);
      } catch (err) {
        throw new FilterError(step.filter, res.apiKey, 'response', err);
      }
      if (out instanceof Promise) {
        return out.then(
          (o) => {
            const closed = res.apply(o as unknown as Outcome, step.filter);
            return closed ?? this.runResponse(res, steps, i + 1);
          },
          (err) => {
            throw new FilterError(step.filter, res.apiKey, 'response', err);
          },
        );
      }
      const closed = res.apply(out as unknown as Outcome, step.filter);
      if (closed) return closed;
    }
    return res.outgoingFrame();
  }
}

interface Step {
  index: number;
  filter: Filter;
  run: Continuation<ApiKeyNumber>;
  continuation?: boolean;
}

function inRange(hooks: ApiHooks<ApiKeyNumber>, version: number): boolean {
  return version >= (hooks.minVersion ?? 0) && version <= (hooks.maxVersion ?? 0x7fff);
}

class ChainRequest {
  readonly apiKey: ApiKeyNumber;
  readonly apiVersion: number;
  readonly correlationId: number;
  private decoded: object | undefined;
  /** The body was replaced or changed: the frame must be encoded from it. */
  private dirty = false;

  constructor(
    public frame: Buffer,
    public header: RequestHeader,
    readonly expectsResponse: boolean,
    readonly connection: object,
  ) {
    this.apiKey = header.apiKey as ApiKeyNumber;
    this.apiVersion = header.apiVersion;
    this.correlationId = header.correlationId;
  }

  get body(): RequestBodies[ApiKeyNumber] {
    if (this.header.bodyOffset === null)
      throw new ProtocolError(`${apiName(this.apiKey) ?? `api key ${this.apiKey}`} v${this.apiVersion} request: version unknown to kcompact`);
    this.decoded ??= decodeRequest(this.apiKey as number, this.apiVersion, this.frame, 4 + this.header.bodyOffset!);
    return this.decoded as RequestBodies[ApiKeyNumber];
  }

  apply(change: ForwardRequest<ApiKeyNumber> | undefined): void {
    if (!change) return;
    if (change.frame) {
      this.frame = change.frame;
      this.header = decodeRequestHeader(change.frame.subarray(4));
      this.decoded = undefined;
      this.dirty = false;
    }
    if (change.body) {
      this.decoded = change.body;
      this.dirty = true;
    }
  }

  outgoingFrame(): Buffer {
    if (!this.dirty) return this.frame;
    const { apiKey, apiVersion, correlationId, clientId, unknownTags } = this.header;
    return encodeRequestFrame({ apiKey, apiVersion, correlationId, clientId, unknownTags }, this.decoded!);
  }
}

class ChainResponse {
  private decoded: object | undefined;
  private version: number;
  private dirty = false;

  constructor(
    readonly apiKey: ApiKeyNumber | number,
    apiVersion: number,
    readonly correlationId: number,
    public frame: Buffer,
    readonly local: boolean,
  ) {
    this.version = apiVersion;
  }

  get apiVersion(): number {
    // An ApiVersions answer may be a v0 body whatever was asked: its version is known once read.
    if (this.apiKey === ApiKey.ApiVersions) void this.body;
    return this.version;
  }

  get body(): ResponseBodies[ApiKeyNumber] {
    if (this.decoded === undefined) {
      if (this.apiKey === ApiKey.ApiVersions) {
        // ApiVersions responses always use header v0, so the body follows the correlation id.
        const { body, version } = decodeApiVersionsResponse(this.frame, 8, this.version);
        this.decoded = body;
        this.version = version;
      } else {
        // Bytes after the body are left for the client to ignore, as it would without the proxy.
        const header = decodeResponseHeader(this.frame.subarray(4), responseHeaderVersion(this.apiKey, this.version));
        this.decoded = decodeResponseLeniently(this.apiKey as number, this.version, this.frame, 4 + header.bodyOffset);
      }
    }
    return this.decoded as ResponseBodies[ApiKeyNumber];
  }

  /** Applies a response hook's outcome; returns the Closing when it closes. */
  apply(o: Outcome, filter: Filter): Closing | undefined {
    if (o instanceof Closing) return o;
    if (o.kind !== 'forward-response') throw new FilterError(filter, this.apiKey, 'response', new Error('a response hook returned a request outcome'));
    if (o.frame) {
      this.frame = o.frame;
      this.decoded = undefined;
      this.dirty = false;
    }
    if (o.body) {
      this.decoded = o.body;
      this.dirty = true;
    }
    return undefined;
  }

  outgoingFrame(): OutgoingFrame {
    if (!this.dirty) return this.frame;
    return encodeOutgoingResponse(this.apiKey, this.apiVersion, this.correlationId, this.decoded!);
  }
}
