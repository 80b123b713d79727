/**
 * One client connection and its upstream twin. Requests are forwarded in arrival order and
 * responses return in the same order (Kafka answers a connection's requests in order), so
 * correlation ids are never rewritten. A response may be transformed asynchronously; an ordered
 * queue of slots keeps the client's view in request order regardless.
 */
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Logger } from '../ops/log.js';
import type { ApiMeter, ProxyMeter } from '../ops/metrics/proxy-meter.js';
import { ApiKey, apiSchema, decodeResponse, encodeResponseFrame } from '../protocol/messages.js';
import { decodeResponseHeader, responseHeaderVersion } from '../protocol/headers.js';
import { decodeApiVersionsResponse } from '../protocol/api-versions-response.js';
import { ErrorCode } from '../protocol/errors.js';
import type { HostPort } from './broker-map.js';
import { FrameReader, type FrameRouter } from './frame-reader.js';
import { responseRewriters, type RewriteContext } from './response-rewrite.js';
import { clampApiVersions } from './api-versions.js';
import { produceAcks } from './produce-acks.js';
import { passThroughVersion, patchRequestVersion } from './fetch-version.js';
import { largeReads } from './large-reads.js';
import { decodeRequestHeader } from '../protocol/headers.js';
import { interceptedRequest, type Interception, type Interceptors, type ResponseTransform } from './interceptor.js';
import { UpstreamConnector } from '../upstream/upstream-connector.js';
import type { LogThrottle } from '../ops/log-throttle.js';

export interface ConnectionDeps {
  log: Logger;
  maxFrameBytes: number;
  rewrite: RewriteContext;
  /** Upstream addresses to try in order (the bootstrap list, or the one broker behind a port). */
  upstream: () => Promise<HostPort[]>;
  interceptors?: Interceptors;
  meter: ProxyMeter;
  /** How the upstream connection is made (TLS or not); plain TCP when omitted. */
  connector?: UpstreamConnector;
  /** Holds back the warnings an outage makes every connection raise (each one logged otherwise). */
  throttle?: LogThrottle;
  onClose?: (conn: ProxyConnection) => void;
}

interface Slot {
  frame: Buffer | null;
  api: ApiMeter;
  /** performance.now() when the request arrived. */
  start: number;
}

interface Awaiting {
  correlationId: number;
  apiKey: number;
  /** The version the upstream was asked, which its response follows. */
  apiVersion: number;
  slot: Slot;
  transform?: ResponseTransform;
}

/** Requests buffered while the upstream connection is being set up, before the client is paused. */
const CONNECT_BUFFER_BYTES = 1 << 20;

export class ProxyConnection {
  private upstreamSocket: net.Socket | null = null;
  private readonly beforeConnect: Buffer[] = [];
  private beforeConnectBytes = 0;
  private readonly out: Slot[] = [];
  private readonly awaiting: Awaiting[] = [];
  private readonly requests: FrameReader;
  private readonly responses: FrameReader;
  /** Requests that arrived while an asynchronous interceptor was deciding on an earlier one. */
  private held: Buffer[] | null = null;
  /** A response is being streamed to the client: nothing else may be written until it ends. */
  private streamingToClient = false;
  private clientPaused = false;
  private upstreamPaused = false;
  private closed = false;
  /** The client ended the connection itself: its unanswered requests are not the proxy's errors. */
  private clientGone = false;
  /** A request is being streamed upstream: it must be let through whole even when draining. */
  private requestStreaming = false;
  /** Shutting down: no new requests are read; the connection closes once every one is answered. */
  private draining = false;
  private readonly log: Logger;
  private readonly meter: ProxyMeter;

  constructor(
    private readonly client: net.Socket,
    private readonly deps: ConnectionDeps,
  ) {
    this.log = deps.log.child({ client: `${client.remoteAddress}:${client.remotePort}`, local: client.localPort });
    this.meter = deps.meter;
    this.requests = new FrameReader(deps.maxFrameBytes);
    this.responses = new FrameReader(deps.maxFrameBytes);
    client.setNoDelay(true);
    client.on('data', (chunk: Buffer) => this.onClientData(chunk));
    client.on('drain', () => this.resumeUpstream());
    client.on('end', () => this.clientClosed('client closed the connection'));
    client.on('error', (err) => this.clientClosed('client socket error', err));
    client.on('close', () => this.clientClosed('client closed the connection'));
    void this.connectUpstream();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Requests the proxy neither intercepts nor answers itself go upstream piece by piece as they
   * arrive (Produce excepted: its acks decide whether a response will come).
   */
  private readonly requestRouter: FrameRouter = {
    peekBytes: 12,
    stream: (head) => {
      if (this.held || this.closed) return null;
      const apiKey = head.readInt16BE(4);
      if (apiKey === ApiKey.ApiVersions || apiKey === ApiKey.Produce || apiKey === ApiKey.SaslHandshake || this.deps.interceptors?.has(apiKey)) return null;
      const slot = this.slot(apiKey);
      this.out.push(slot);
      const apiVersion = head.readInt16BE(6);
      const upstreamVersion = passThroughVersion(apiKey, apiVersion);
      this.awaiting.push({ correlationId: head.readInt32BE(8), apiKey, apiVersion: upstreamVersion, slot });
      let at = 0;
      this.requestStreaming = true;
      return (piece) => {
        if (!piece) {
          this.requestStreaming = false;
          if (this.draining) {
            this.pauseClient();
            this.closeIfDrained();
          }
          return;
        }
        if (upstreamVersion !== apiVersion && at < 8) patchRequestVersion(piece, at, upstreamVersion);
        at += piece.length;
        this.forward(piece);
      };
    },
  };

  /**
   * Responses the proxy does not change go to the client piece by piece as they arrive, when no
   * earlier response is still pending: receiving and sending overlap, and nothing is copied.
   */
  private readonly responseRouter: FrameRouter = {
    peekBytes: 8,
    stream: (head) => {
      const next = this.awaiting[0];
      if (!next || this.closed || this.streamingToClient || this.out[0] !== next.slot) return null;
      if (head.readInt32BE(4) !== next.correlationId || next.transform || rewritesResponse(next.apiKey, next.apiVersion)) return null;
      this.awaiting.shift();
      const slot = this.out.shift()!;
      this.streamingToClient = true;
      return (piece) => {
        if (piece) {
          if (this.closed) return;
          this.meter.bytesToClients += piece.length;
          if (!this.client.write(piece)) this.pauseUpstream();
          return;
        }
        slot.api.observe((performance.now() - slot.start) / 1000);
        this.streamingToClient = false;
        this.flush();
      };
    },
  };

  /** Bytes held in memory for this connection: unsent socket data and partial frames. */
  get bufferedBytes(): number {
    return this.client.writableLength + (this.upstreamSocket?.writableLength ?? 0) + this.beforeConnectBytes + this.requests.buffered + this.responses.buffered;
  }

  /**
   * Stops reading requests and closes the connection once every request already read has been
   * answered (a request half-streamed upstream is read to its end first).
   */
  drain(): void {
    if (this.closed || this.draining) return;
    this.draining = true;
    if (!this.requestStreaming) this.pauseClient();
    this.closeIfDrained();
  }

  private closeIfDrained(): void {
    if (this.draining && this.out.length === 0 && !this.streamingToClient && !this.requestStreaming && this.held === null) {
      this.close('drained for shutdown', undefined, true);
    }
  }

  private clientClosed(reason: string, err?: unknown): void {
    if (!this.closed) this.clientGone = true;
    this.close(reason, err);
  }

  /** The upstream failed this connection: counted, then the connection closes. */
  private upstreamFailed(kind: 'disconnect' | 'protocol', reason: string, err?: unknown): void {
    if (!this.closed) this.meter.upstreamError(kind);
    this.close(reason, err);
  }

  private warn(kind: string, msg: string, fields: Record<string, unknown>): void {
    if (this.deps.throttle) this.deps.throttle.warn(this.log, kind, msg, fields);
    else this.log.warn(msg, fields);
  }

  private slot(apiKey: number): Slot {
    const api = this.meter.api(apiKey);
    api.requests++;
    return { frame: null, api, start: performance.now() };
  }

  /** `flushUpstream`: let what was already written upstream reach it instead of discarding it. */
  close(reason: string, err?: unknown, flushUpstream = false): void {
    if (this.closed) return;
    this.closed = true;
    if (!this.clientGone) for (const slot of this.out) slot.api.errors++;
    const fields = err ? { reason, err } : { reason };
    if (err) this.warn(`connection closed: ${reason}: ${err instanceof Error ? err.message : String(err)}`, 'connection closed', fields);
    else this.log.debug('connection closed', fields);
    this.client.destroy();
    if (flushUpstream) this.upstreamSocket?.end();
    else this.upstreamSocket?.destroy();
    this.out.length = 0;
    this.awaiting.length = 0;
    this.deps.onClose?.(this);
  }

  private async connectUpstream(): Promise<void> {
    let targets: HostPort[];
    try {
      targets = await this.deps.upstream();
    } catch (err) {
      this.close('no upstream address for this listener', err);
      return;
    }
    let lastErr: unknown = new Error('no upstream address configured');
    for (const target of targets) {
      if (this.closed) return;
      try {
        const connector = this.deps.connector ?? UpstreamConnector.plaintext;
        const socket = await connector.connect(
          target,
          undefined,
          largeReads((chunk) => this.onUpstreamData(chunk)),
        );
        if (this.closed) {
          socket.destroy();
          return;
        }
        this.attach(socket, target);
        return;
      } catch (err) {
        lastErr = err;
        this.meter.upstreamError('connect');
        const upstream = `${target.host}:${target.port}`;
        this.warn(`upstream connect failed: ${upstream}`, 'upstream connect failed', { upstream, err });
      }
    }
    this.close('could not reach any upstream broker', lastErr);
  }

  private attach(socket: net.Socket, target: HostPort): void {
    this.upstreamSocket = socket;
    this.meter.upstreamConnected();
    socket.setNoDelay(true);
    socket.on('drain', () => this.resumeClient());
    const where = `${target.host}:${target.port}`;
    socket.on('end', () => this.upstreamFailed('disconnect', `upstream ${where} closed the connection`));
    socket.on('close', () => this.upstreamFailed('disconnect', `upstream ${where} closed the connection`));
    socket.on('error', (err) => this.upstreamFailed('disconnect', `upstream ${where} socket error`, err));
    for (const frame of this.beforeConnect) socket.write(frame);
    this.beforeConnect.length = 0;
    this.beforeConnectBytes = 0;
    this.resumeClient();
  }

  private onClientData(chunk: Buffer): void {
    this.meter.bytesFromClients += chunk.length;
    try {
      this.requests.push(chunk, (frame) => this.onRequest(frame), this.requestRouter);
    } catch (err) {
      this.close('bad request frame from client', err);
    }
  }

  private onUpstreamData(chunk: Buffer): void {
    this.meter.bytesFromUpstream += chunk.length;
    try {
      this.responses.push(chunk, (frame) => this.onResponse(frame), this.responseRouter);
    } catch (err) {
      this.upstreamFailed('protocol', 'bad response frame from upstream', err);
    }
  }

  private onRequest(frame: Buffer): void {
    if (this.closed) return;
    if (frame.length < 12) throw new Error(`request frame of ${frame.length - 4} bytes is shorter than a request header`);
    if (this.held) {
      this.held.push(frame);
      return;
    }
    const apiKey = frame.readInt16BE(4);
    const apiVersion = frame.readInt16BE(6);
    const correlationId = frame.readInt32BE(8);
    if (apiKey === ApiKey.ApiVersions) {
      const max = apiSchema(ApiKey.ApiVersions)!.maxVersion;
      if (apiVersion > max) {
        // Kafka's answer to a too-new ApiVersions: a v0 body naming the versions it does speak,
        // so the client retries with one of them.
        this.respondLocally(
          apiKey,
          encodeResponseFrame(ApiKey.ApiVersions, 0, correlationId, {
            errorCode: ErrorCode.UNSUPPORTED_VERSION,
            apiKeys: [{ apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion: max }],
          }),
        );
        return;
      }
    }
    if (apiKey === ApiKey.SaslHandshake && apiVersion === 0) {
      // After a v0 handshake the SASL tokens travel outside Kafka frames, which no frame reader
      // can follow. ApiVersions still offers v0 (librdkafka takes its absence for no SASL at all),
      // but clients since Kafka 1.0 send v1 and SaslAuthenticate when the broker has them.
      this.close(
        'refused SaslHandshake v0',
        new Error(
          'SaslHandshake v0 (SASL tokens outside Kafka frames) does not pass through kcompact; use a client that authenticates with SaslHandshake v1 and SaslAuthenticate (Kafka 1.0 clients and later)',
        ),
      );
      return;
    }
    const expectsResponse = !(apiKey === ApiKey.Produce && produceAcks(frame) === 0);
    let slot: Slot | null = null;
    if (expectsResponse) this.out.push((slot = this.slot(apiKey)));
    else this.meter.api(apiKey).requests++;
    const interceptor = this.deps.interceptors?.get(apiKey);
    const header = interceptor ? decodeRequestHeader(frame.subarray(4)) : null;
    if (!interceptor || !header || header.bodyOffset === null) {
      this.apply({ forward: true }, frame, apiKey, apiVersion, correlationId, slot);
      return;
    }
    const decision = interceptor.intercept(interceptedRequest(frame, header, expectsResponse));
    if (!(decision instanceof Promise)) {
      this.apply(decision, frame, apiKey, apiVersion, correlationId, slot);
      return;
    }
    this.held = [];
    decision.then(
      (d) => {
        if (this.closed) return;
        this.apply(d, frame, apiKey, apiVersion, correlationId, slot);
        const later = this.held ?? [];
        this.held = null;
        for (let i = 0; i < later.length; i++) {
          this.onRequest(later[i]!);
          // A later request went asynchronous too: the rest wait behind it again.
          if (this.held) {
            (this.held as Buffer[]).push(...later.slice(i + 1));
            break;
          }
        }
        this.closeIfDrained();
      },
      (err) => this.close(`interceptor for API ${apiKey} failed`, err),
    );
  }

  private apply(decision: Interception, frame: Buffer, apiKey: number, apiVersion: number, correlationId: number, slot: Slot | null): void {
    if ('close' in decision) {
      this.close(decision.close);
      return;
    }
    if ('respond' in decision) {
      if (slot) {
        slot.frame = decision.respond;
        this.flush();
      }
      return;
    }
    const forwarded = decision.frame ?? frame;
    // A response nobody transforms can stream through when asked at a streamable version.
    const upstreamVersion = decision.response ? apiVersion : passThroughVersion(apiKey, apiVersion);
    if (upstreamVersion !== apiVersion) patchRequestVersion(forwarded, 0, upstreamVersion);
    if (slot) this.awaiting.push({ correlationId, apiKey, apiVersion: upstreamVersion, slot, transform: decision.response });
    this.forward(forwarded);
    if (decision.closeAfter) this.close(decision.closeAfter, undefined, this.upstreamSocket !== null);
  }

  private respondLocally(apiKey: number, frame: Buffer): void {
    const slot = this.slot(apiKey);
    slot.frame = frame;
    this.out.push(slot);
    this.flush();
  }

  private forward(frame: Buffer): void {
    this.meter.bytesToUpstream += frame.length;
    const socket = this.upstreamSocket;
    if (!socket) {
      this.beforeConnect.push(frame);
      this.beforeConnectBytes += frame.length;
      if (this.beforeConnectBytes > CONNECT_BUFFER_BYTES) this.pauseClient();
      return;
    }
    if (!socket.write(frame)) this.pauseClient();
  }

  private onResponse(frame: Buffer): void {
    if (this.closed) return;
    const head = this.awaiting.shift();
    if (frame.length < 8) throw new Error(`response frame of ${frame.length - 4} bytes is shorter than a response header`);
    const correlationId = frame.readInt32BE(4);
    if (!head) throw new Error(`upstream sent a response (correlation id ${correlationId}) nobody asked for`);
    if (head.correlationId !== correlationId) {
      throw new Error(`upstream answered correlation id ${correlationId} while ${head.correlationId} was next`);
    }
    const rewritten = this.transform(head, frame);
    if (!head.transform) {
      head.slot.frame = rewritten;
      this.flush();
      return;
    }
    const transformed = head.transform(rewritten);
    if (!(transformed instanceof Promise)) {
      head.slot.frame = transformed;
      this.flush();
      return;
    }
    transformed.then(
      (f) => {
        if (this.closed) return;
        head.slot.frame = f;
        this.flush();
      },
      (err) => this.close(`response transform for API ${head.apiKey} failed`, err),
    );
  }

  private transform(req: Awaiting, frame: Buffer): Buffer {
    if (req.apiKey === ApiKey.ApiVersions) return this.rewriteApiVersions(req, frame);
    const rewriter = responseRewriters.get(req.apiKey);
    if (!rewriter || req.apiVersion < rewriter.minVersion) return frame;
    const header = decodeResponseHeader(frame.subarray(4), responseHeaderVersion(req.apiKey, req.apiVersion));
    const body = decodeResponse(req.apiKey, req.apiVersion, frame, 4 + header.bodyOffset);
    if (!rewriter.rewrite(body, this.deps.rewrite, req.apiVersion)) return frame;
    return encodeResponseFrame(req.apiKey, req.apiVersion, req.correlationId, body);
  }

  private rewriteApiVersions(req: Awaiting, frame: Buffer): Buffer {
    // ApiVersions responses always use header v0, so the body follows the correlation id.
    const { body, version } = decodeApiVersionsResponse(frame, 8, req.apiVersion);
    if (!clampApiVersions(body)) return frame;
    return encodeResponseFrame(ApiKey.ApiVersions, version, req.correlationId, body);
  }

  private flush(): void {
    if (this.streamingToClient) return;
    while (this.out.length > 0 && this.out[0]!.frame !== null) {
      const slot = this.out.shift()!;
      const frame = slot.frame!;
      this.meter.bytesToClients += frame.length;
      slot.api.observe((performance.now() - slot.start) / 1000);
      if (!this.client.write(frame)) this.pauseUpstream();
    }
    if (this.draining) this.closeIfDrained();
  }

  private pauseClient(): void {
    if (this.clientPaused) return;
    this.clientPaused = true;
    this.client.pause();
  }

  private resumeClient(): void {
    if (!this.clientPaused || this.closed || (this.draining && !this.requestStreaming)) return;
    this.clientPaused = false;
    this.client.resume();
  }

  private pauseUpstream(): void {
    if (this.upstreamPaused || !this.upstreamSocket) return;
    this.upstreamPaused = true;
    this.upstreamSocket.pause();
  }

  private resumeUpstream(): void {
    if (!this.upstreamPaused || this.closed) return;
    this.upstreamPaused = false;
    this.upstreamSocket?.resume();
  }
}

function rewritesResponse(apiKey: number, apiVersion: number): boolean {
  if (apiKey === ApiKey.ApiVersions) return true;
  const rewriter = responseRewriters.get(apiKey);
  return rewriter !== undefined && apiVersion >= rewriter.minVersion;
}
