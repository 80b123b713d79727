/**
 * The proxy's own connection to one upstream broker, for the requests it makes itself (broker
 * discovery, index tailing, config storage, the fetch view's reads). It negotiates versions with
 * ApiVersions first, authenticates with the proxy's own SASL credentials when the connector has
 * them, and then correlates responses by id.
 */
import type net from 'node:net';
import {
  ApiKey,
  apiSchema,
  decodeResponseLeniently,
  encodeRequestFrame,
  type ApiKeyNumber,
  type ApiVersionsResponse,
  type BodyInit,
  type RequestBodies,
  type ResponseBodies,
} from '../protocol/messages.js';
import { decodeResponseHeader, responseHeaderVersion } from '../protocol/headers.js';
import { decodeApiVersionsResponse, readApiVersionsEntry } from '../protocol/api-versions-response.js';
import { ErrorCode, errorName, ProtocolError } from '../protocol/errors.js';
import type { HostPort } from '../common/host-port.js';
import type { ReusedBuffers } from './reused-buffers.js';
import { frameReads } from './frame-reads.js';
import { saslAuthenticate } from './sasl-client.js';
import { UpstreamConnector } from './upstream-connector.js';

export interface UpstreamClientOptions {
  clientId: string;
  maxFrameBytes: number;
  requestTimeoutMs: number;
  connectTimeoutMs?: number;
  /** TLS and SASL towards the upstream; plain TCP without SASL when omitted. */
  connector?: UpstreamConnector;
}

/**
 * Share of a SASL session's lifetime after which the connection takes no new requests (callers
 * open a fresh one) so that it is never in use when the upstream ends the session.
 */
const RETIRE_AT_SESSION_SHARE = 0.8;

interface InFlight {
  apiKey: number;
  version: number;
  resolve: (body: ResponseBodies[ApiKeyNumber]) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
  frames?: ReusedBuffers;
}

/**
 * The ApiVersions version to start from on each new connection while the upstream closes or
 * resets it instead of answering. A broker should answer a version it does not know with
 * UNSUPPORTED_VERSION, but Azure Event Hubs resets the connection instead (franz-go reconnects
 * and asks v0 for it). So: the newest kcompact speaks; then the one every broker since Kafka 2.4
 * answers, which kcompact asked before; then v0, which every broker answers.
 */
const APIVERSIONS_LADDER: readonly number[] = [apiSchema(ApiKey.ApiVersions)!.maxVersion, 3, 0];

/** The upstream closed or reset the connection before answering anything on it; the message says which. */
class EndedUnanswered extends Error {}

/** An ApiVersions answer that does not decode; `offered` is the ApiVersions version it still lists. */
class UnreadableApiVersions extends ProtocolError {
  constructor(
    readonly offered: number | undefined,
    cause: Error,
  ) {
    super(cause.message, { cause });
  }
}

/** Read at the version asked or, where the broker did not know that version, as v0. */
function readApiVersions(frame: Buffer, offset: number, version: number): ApiVersionsResponse {
  try {
    return decodeApiVersionsResponse(frame, offset, version).body;
  } catch (err) {
    throw new UnreadableApiVersions(readApiVersionsEntry(frame, offset, version)?.maxVersion, err as Error);
  }
}

/** Socket errors that mean the upstream reset the connection (EPIPE: found so when writing). */
const RESET = new Set(['ECONNRESET', 'EPIPE']);

export class UpstreamClient {
  private nextCorrelationId = 1;
  private readonly inFlight = new Map<number, InFlight>();
  private versions = new Map<number, { minVersion: number; maxVersion: number }>();
  private closedError: Error | null = null;
  /** Epoch ms after which the connection counts as closed for new work (its SASL session is ending). */
  private retireAtMs = Infinity;
  private sessionTimer: NodeJS.Timeout | undefined;
  private answered = false;

  private constructor(
    private readonly socket: net.Socket,
    readonly address: HostPort,
    private readonly opts: UpstreamClientOptions,
  ) {
    socket.setNoDelay(true);
    const ended = (how: string, err: Error) => this.fail(this.answered ? err : new EndedUnanswered(how, { cause: err }));
    socket.on('error', (err: NodeJS.ErrnoException) => (RESET.has(err.code ?? '') ? ended(err.code!, err) : this.fail(err)));
    socket.on('close', () => ended('closed', new Error(`upstream ${address.host}:${address.port} closed the connection`)));
  }

  /**
   * Connected, versions negotiated, authenticated. Only an end of the connection before any
   * answer (EndedUnanswered) moves down APIVERSIONS_LADDER on a new connection; any other failure
   * (connect, TLS, timeout, an error answer, SASL, which follows an answer) is thrown as it is.
   */
  static async connect(address: HostPort, opts: UpstreamClientOptions): Promise<UpstreamClient> {
    const connector = opts.connector ?? UpstreamConnector.plaintext;
    const tried: string[] = [];
    let last: Error | undefined;
    for (const version of APIVERSIONS_LADDER) {
      const client = await UpstreamClient.open(address, opts, connector);
      try {
        await client.negotiate(version);
        const credentials = connector.credentials();
        if (credentials) client.keepSession(await saslAuthenticate(client, credentials));
        return client;
      } catch (err) {
        client.close();
        if (!(err instanceof EndedUnanswered)) throw err;
        tried.push(`v${version} (${err.message})`);
        last = err;
      }
    }
    const where = `${address.host}:${address.port}`;
    throw new Error(`upstream ${where} ended the connection instead of answering ApiVersions ${tried.join(', ')}`, { cause: last });
  }

  private static async open(address: HostPort, opts: UpstreamClientOptions, connector: UpstreamConnector): Promise<UpstreamClient> {
    // Nothing arrives before the first request, which the constructed client sends.
    let client: UpstreamClient | undefined;
    const reads = frameReads(
      opts.maxFrameBytes,
      (frame) => client?.onFrame(frame),
      (err) => {
        client?.fail(err);
        client?.close();
      },
      (size, correlationId) => client?.inFlight.get(correlationId)?.frames?.take(size) ?? Buffer.allocUnsafe(size),
    );
    const socket = await connector.connect(address, opts.connectTimeoutMs, reads);
    return (client = new UpstreamClient(socket, address, opts));
  }

  /** True once the connection failed or was closed, and once its SASL session is about to end. */
  get closed(): boolean {
    return this.closedError !== null || (this.retireAtMs !== Infinity && Date.now() >= this.retireAtMs);
  }

  /** The newest version of an API both the proxy and this broker speak. */
  version(apiKey: number): number {
    const ours = apiSchema(apiKey);
    const theirs = this.versions.get(apiKey);
    if (!ours || !theirs) throw new ProtocolError(`upstream ${this.address.host}:${this.address.port} does not support API ${apiKey}`);
    const max = Math.min(ours.maxVersion, theirs.maxVersion);
    if (max < Math.max(ours.minVersion, theirs.minVersion)) {
      throw new ProtocolError(`upstream ${this.address.host}:${this.address.port} shares no version of API ${ours.name} with kcompact`);
    }
    return max;
  }

  /**
   * With `frames`, the response is read into a buffer from there, and the decoded body's bytes
   * and records are views of it: the caller gives it back (frames.give) once done with them.
   */
  request<K extends ApiKeyNumber>(
    apiKey: K,
    version: number,
    body: BodyInit<RequestBodies[K]>,
    frames?: ReusedBuffers,
    /** For a request the broker holds on purpose (JoinGroup): how long to wait instead of the client's request timeout. */
    timeoutMs = this.opts.requestTimeoutMs,
  ): Promise<ResponseBodies[K]> {
    if (this.closedError) return Promise.reject(this.closedError);
    const correlationId = this.nextCorrelationId++ & 0x7fffffff;
    const frame = encodeRequestFrame({ apiKey, apiVersion: version, correlationId, clientId: this.opts.clientId }, body as object);
    return new Promise<ResponseBodies[K]>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.inFlight.delete(correlationId);
        reject(new Error(`upstream ${this.address.host}:${this.address.port} did not answer ${apiSchema(apiKey)?.name ?? apiKey} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.inFlight.set(correlationId, { apiKey, version, resolve: resolve as (body: ResponseBodies[ApiKeyNumber]) => void, reject, timer, frames });
      this.socket.write(frame);
    });
  }

  close(): void {
    clearTimeout(this.sessionTimer);
    this.fail(new Error('upstream client closed'));
    this.socket.destroy();
  }

  /**
   * A session the upstream ends after `lifetimeMs` (KIP-368 re-authentication): rather than
   * re-authenticate in the middle of its traffic, the connection retires early and is closed
   * when the session ends; callers open a new one, as after any failure.
   */
  private keepSession(lifetimeMs: number): void {
    if (lifetimeMs <= 0) return;
    this.retireAtMs = Date.now() + lifetimeMs * RETIRE_AT_SESSION_SHARE;
    this.sessionTimer = setTimeout(() => this.close(), lifetimeMs);
    this.sessionTimer.unref();
  }

  /**
   * Asked at `version`, first the newest kcompact speaks, as Kafka's clients ask theirs, and asked
   * again lower, as Java's NetworkClient and librdkafka do, while the answer is no use: an
   * UNSUPPORTED_VERSION (a broker that does not know the version asked answers so with a v0 body,
   * since Kafka 2.4 listing the ApiVersions versions it speaks, KIP-511), a body that does not
   * decode, or one whose own ApiVersions entry leaves out the version asked (a store answering a
   * version it cannot really speak; either is how librdkafka's mock cluster answers above v2).
   * Asked again at the version the answer lists for ApiVersions, or v0 when it lists none; below
   * the version just asked (librdkafka's rule), so that the retries end at v0.
   */
  private async negotiate(version: number): Promise<void> {
    const upstream = `upstream ${this.address.host}:${this.address.port}`;
    const unused: string[] = [];
    for (let asked = version; ;) {
      let offered: number | undefined;
      try {
        const body = await this.askApiVersions(asked);
        const own = body.apiKeys.find((k) => k.apiKey === ApiKey.ApiVersions);
        if (body.errorCode === ErrorCode.NONE && (asked === 0 || !own || (own.minVersion <= asked && asked <= own.maxVersion))) {
          this.versions = new Map(body.apiKeys.map((k) => [k.apiKey, k]));
          return;
        }
        if (body.errorCode !== ErrorCode.NONE && body.errorCode !== ErrorCode.UNSUPPORTED_VERSION) {
          throw new ProtocolError(`${upstream} answered ApiVersions v${asked} with ${errorName(body.errorCode)}`);
        }
        offered = own?.maxVersion;
        const why =
          own && body.errorCode === ErrorCode.NONE ? `an answer listing ApiVersions v${own.minVersion}-v${own.maxVersion}` : errorName(body.errorCode);
        unused.push(`v${asked} (${why})`);
      } catch (err) {
        if (!(err instanceof UnreadableApiVersions)) throw err;
        offered = err.offered;
        unused.push(`v${asked} (${err.message})`);
      }
      if (asked === 0) {
        throw new ProtocolError(
          `${upstream} gave no ApiVersions answer kcompact can use, asked ${unused.join(', ')}: check that the upstream address is a Kafka-protocol listener`,
        );
      }
      asked = Math.max(0, Math.min(asked - 1, offered ?? 0));
    }
  }

  private askApiVersions(version: number): Promise<ApiVersionsResponse> {
    return this.request(ApiKey.ApiVersions, version, { clientSoftwareName: 'kcompact', clientSoftwareVersion: '0' });
  }

  private onFrame(frame: Buffer): void {
    if (frame.length < 8) throw new ProtocolError('upstream response is shorter than a response header');
    this.answered = true;
    const correlationId = frame.readInt32BE(4);
    const call = this.inFlight.get(correlationId);
    if (!call) return; // answered after its timeout
    this.inFlight.delete(correlationId);
    clearTimeout(call.timer);
    try {
      const header = decodeResponseHeader(frame.subarray(4), responseHeaderVersion(call.apiKey, call.version));
      const offset = 4 + header.bodyOffset;
      call.resolve(
        call.apiKey === ApiKey.ApiVersions
          ? (readApiVersions(frame, offset, call.version) as ResponseBodies[ApiKeyNumber])
          : (decodeResponseLeniently(call.apiKey, call.version, frame, offset) as ResponseBodies[ApiKeyNumber]),
      );
    } catch (err) {
      call.reject(err as Error);
    }
  }

  private fail(err: Error): void {
    if (this.closedError) return;
    this.closedError = err;
    for (const call of this.inFlight.values()) {
      clearTimeout(call.timer);
      call.reject(err);
    }
    this.inFlight.clear();
  }
}
