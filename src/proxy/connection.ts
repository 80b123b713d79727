/**
 * One client connection and its upstream twin: framing, ordering and backpressure. Requests are
 * forwarded in arrival order and responses return in the same order (Kafka answers a
 * connection's requests in order), so correlation ids are never rewritten. What happens to the
 * frames the filters hook is the filter chain's (filter/filter-chain.ts); every other frame
 * streams through piece by piece. Filters may decide asynchronously: later requests wait until an
 * earlier one has been forwarded or answered (a broker also handles a connection's requests one
 * at a time), and an ordered queue of slots keeps responses in request order.
 */
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Logger } from '../common/log.js';
import type { ApiMeter, ProxyMeter } from './proxy-meter.js';
import { ApiKey } from '../protocol/messages.js';
import { decodeRequestHeader } from '../protocol/headers.js';
import { ProtocolError } from '../protocol/errors.js';
import type { HostPort } from '../common/host-port.js';
import { FrameReader, type FrameRouter } from '../protocol/wire/frame-reader.js';
import { ByteParts, type OutgoingFrame } from '../protocol/wire/byte-parts.js';
import { produceAcks } from './produce-acks.js';
import { patchRequestVersion } from './request-version-patch.js';
import { largeReads } from './large-reads.js';
import { Closing, FilterError, type FilterChain, type PendingContinuation, type Routed } from './filter/filter-chain.js';
import { UpstreamConnector } from '../upstream/upstream-connector.js';
import type { LogThrottle } from '../common/log-throttle.js';

export interface ConnectionDeps {
  log: Logger;
  maxFrameBytes: number;
  /** Upstream addresses to try in order (the bootstrap list, or the one broker behind a port). */
  upstream: () => Promise<HostPort[]>;
  /** What the proxy does to the requests and responses it decodes. */
  chain: FilterChain;
  meter: ProxyMeter;
  /** How the upstream connection is made (TLS or not); plain TCP when omitted. */
  connector?: UpstreamConnector;
  /** Holds back the warnings an outage makes every connection raise (each one logged otherwise). */
  throttle?: LogThrottle;
  onClose?: (conn: ProxyConnection) => void;
}

interface Slot {
  frame: OutgoingFrame | null;
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
  /** Filters that asked to see this response. */
  continuations: PendingContinuation[] | null;
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
  /** Requests that arrived while an asynchronous filter was deciding on an earlier one. */
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
   * Requests no filter hooks go upstream piece by piece as they arrive (Produce excepted: its
   * acks decide whether a response will come).
   */
  private readonly requestRouter: FrameRouter = {
    peekBytes: 12,
    stream: (head) => {
      if (this.held || this.closed) return null;
      const apiKey = head.readInt16BE(4);
      const apiVersion = head.readInt16BE(6);
      if (apiKey === ApiKey.Produce || this.deps.chain.decodesRequest(apiKey, apiVersion)) return null;
      const slot = this.slot(apiKey);
      this.out.push(slot);
      const upstreamVersion = this.deps.chain.passThroughVersion(apiKey, apiVersion);
      this.awaiting.push({ correlationId: head.readInt32BE(8), apiKey, apiVersion: upstreamVersion, slot, continuations: null });
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
   * Responses no filter reads go to the client piece by piece as they arrive, when no earlier
   * response is still pending: receiving and sending overlap, and nothing is copied.
   */
  private readonly responseRouter: FrameRouter = {
    peekBytes: 8,
    stream: (head) => {
      const next = this.awaiting[0];
      if (!next || this.closed || this.streamingToClient || this.out[0] !== next.slot) return null;
      if (head.readInt32BE(4) !== next.correlationId || !this.streams(next)) return null;
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
    const expectsResponse = !(apiKey === ApiKey.Produce && produceAcks(frame) === 0);
    let slot: Slot | null = null;
    if (expectsResponse) this.out.push((slot = this.slot(apiKey)));
    else this.meter.api(apiKey).requests++;
    const chain = this.deps.chain;
    if (!chain.decodesRequest(apiKey, apiVersion)) {
      const upstreamVersion = chain.passThroughVersion(apiKey, apiVersion);
      if (upstreamVersion !== apiVersion) patchRequestVersion(frame, 0, upstreamVersion);
      this.apply({ kind: 'forward', frame, upstreamVersion, continuations: null }, apiKey, correlationId, slot);
      return;
    }
    let routed: Routed | Promise<Routed>;
    try {
      routed = chain.request(frame, decodeRequestHeader(frame.subarray(4)), expectsResponse, this);
    } catch (err) {
      this.close('a filter failed on a request', err);
      return;
    }
    if (!(routed instanceof Promise)) {
      this.apply(routed, apiKey, correlationId, slot);
      return;
    }
    this.held = [];
    routed.then(
      (r) => {
        if (this.closed) return;
        this.apply(r, apiKey, correlationId, slot);
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
      (err) => this.close('a filter failed on a request', err),
    );
  }

  private apply(routed: Routed, apiKey: number, correlationId: number, slot: Slot | null): void {
    if (routed instanceof Closing) {
      this.close(routed.reason, routed.error);
      return;
    }
    if (routed.kind === 'respond') {
      if (slot) {
        slot.frame = routed.frame;
        this.flush();
      }
      return;
    }
    if (slot) this.awaiting.push({ correlationId, apiKey, apiVersion: routed.upstreamVersion, slot, continuations: routed.continuations });
    this.forward(routed.frame);
    if (routed.closeAfter) this.close(routed.closeAfter, undefined, this.upstreamSocket !== null);
  }

  /** Whether a response goes to the client as it came, no filter reading it. */
  private streams(req: Awaiting): boolean {
    return req.continuations === null && !this.deps.chain.decodesResponse(req.apiKey, req.apiVersion);
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
    if (this.streams(head)) {
      head.slot.frame = frame;
      this.flush();
      return;
    }
    let out: OutgoingFrame | Closing | Promise<OutgoingFrame | Closing>;
    try {
      out = this.deps.chain.response(head.apiKey, head.apiVersion, correlationId, frame, head.continuations);
    } catch (err) {
      this.responseFailed(err);
      return;
    }
    if (!(out instanceof Promise)) {
      this.answered(head, out);
      return;
    }
    out.then(
      (f) => this.answered(head, f),
      (err) => this.responseFailed(err),
    );
  }

  private answered(head: Awaiting, out: OutgoingFrame | Closing): void {
    if (this.closed) return;
    if (out instanceof Closing) {
      this.close(out.reason, out.error);
      return;
    }
    head.slot.frame = out;
    this.flush();
  }

  /** A response the upstream sent that cannot be read is its fault; a filter that fails is not. */
  private responseFailed(err: unknown): void {
    const cause = err instanceof FilterError ? err.cause : err;
    if (cause instanceof ProtocolError) this.upstreamFailed('protocol', 'bad response frame from upstream', err);
    else this.close('a filter failed on a response', err);
  }

  private flush(): void {
    if (this.streamingToClient) return;
    while (this.out.length > 0 && this.out[0]!.frame !== null) {
      const slot = this.out.shift()!;
      const frame = slot.frame!;
      this.meter.bytesToClients += frame.length;
      slot.api.observe((performance.now() - slot.start) / 1000);
      if (!this.writeToClient(frame)) this.pauseUpstream();
    }
    if (this.draining) this.closeIfDrained();
  }

  /** Writes a frame to the client; false when the socket asks to wait for 'drain'. */
  private writeToClient(frame: OutgoingFrame): boolean {
    if (!(frame instanceof ByteParts)) return this.client.write(frame);
    // Corked, the parts go to the socket together (one writev), none of them copied first.
    this.client.cork();
    const last = frame.parts.length - 1;
    for (let i = 0; i < last; i++) this.client.write(frame.parts[i]!);
    // Written (or failed), the socket holds none of them any more: their buffers may be reused.
    const room = this.client.write(frame.parts[last]!, () => frame.done());
    this.client.uncork();
    return room;
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
