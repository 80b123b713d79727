/**
 * One client connection of the HTTP/1.1 server: requests parsed as bytes arrive, handed to the
 * handler one at a time, answered in the order they came (pipelining), kept alive or closed as
 * RFC 9112 section 9 says. A malformed request is answered 400 (or the status its fault has) and the
 * connection closes, since where the next request would start is no longer known.
 */
import type { Socket } from 'node:net';
import { HttpError, RequestParser, type ParserLimits, type RequestHead } from './request-parser.js';
import { ResponseWriter, type ResponseSink } from './response-writer.js';

export interface ConnectionOptions {
  limits: ParserLimits;
  /** A body past this is refused (413) and not read further. */
  maxBodyBytes: number;
  /** From the first byte of a request to the end of its head (slow-loris): 408 past it. */
  headersTimeoutMs: number;
  /** From the first byte of a request to the end of its body: 408 past it. */
  requestTimeoutMs: number;
  /** How long a kept-alive connection may wait for its next request. */
  keepAliveTimeoutMs: number;
  /** After an answer that closes the connection, unread bytes are drained this long so that the client reads the answer rather than a reset. */
  lingerMs: number;
}

/** A request as the handler gets it: the head, and the body on demand. */
export interface Http1Request {
  readonly method: string;
  readonly url: string;
  readonly httpVersion: '1.0' | '1.1';
  /** Names lowercased; repeated fields joined with ", ". */
  readonly headers: Readonly<Record<string, string>>;
  readonly socket: { readonly remoteAddress: string | undefined };
  /** The body whole. Rejects with an HttpError: 413 past the server's limit, 400 when malformed, 408 when too slow. */
  body(): Promise<Buffer>;
}

export type Http1Handler = (req: Http1Request, res: ResponseWriter) => void;

const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';

/** An exchange: the request, its body as it arrives, and its answer. */
class Exchange implements Http1Request {
  readonly method: string;
  readonly url: string;
  readonly httpVersion: '1.0' | '1.1';
  readonly headers: Readonly<Record<string, string>>;
  readonly res: ResponseWriter;
  chunks: Buffer[] = [];
  size = 0;
  complete = false;
  /** The answer went before the body was read whole: the rest of the body is read and dropped. */
  answered = false;
  failure: HttpError | undefined;
  private waiting: { resolve: (b: Buffer) => void; reject: (e: unknown) => void } | undefined;
  continued = false;

  constructor(
    private readonly conn: Connection,
    readonly head: RequestHead,
    sink: ResponseSink,
  ) {
    this.method = head.method;
    this.url = head.url;
    this.httpVersion = head.httpVersion;
    this.headers = head.headers;
    this.res = new ResponseWriter(sink, head.httpVersion, head.keepAlive, head.method === 'HEAD');
  }

  get socket(): { readonly remoteAddress: string | undefined } {
    return this.conn.socket;
  }

  body(): Promise<Buffer> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.complete) return Promise.resolve(this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.size));
    if (this.waiting) return Promise.reject(new Error('the body is already being read'));
    // The client holds the body back until told to send it (RFC 9110 10.1.1).
    if (this.head.expectContinue && !this.continued && !this.res.headersSent && this.size === 0) {
      this.continued = true;
      this.conn.write(CONTINUE);
    }
    return new Promise((resolve, reject) => {
      this.waiting = { resolve, reject };
    });
  }

  data(chunk: Buffer): void {
    this.size += chunk.length;
    if (!this.answered) this.chunks.push(chunk);
  }

  end(): void {
    this.complete = true;
    const w = this.waiting;
    this.waiting = undefined;
    w?.resolve(this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks, this.size));
  }

  fail(err: HttpError): void {
    if (this.failure || this.complete) return;
    this.failure = err;
    this.chunks = [];
    const w = this.waiting;
    this.waiting = undefined;
    w?.reject(err);
  }
}

type Phase = 'idle' | 'head' | 'body' | 'busy' | 'closing';

export class Connection implements ResponseSink {
  private readonly parser: RequestParser;
  private current: Exchange | undefined;
  private phase: Phase = 'idle';
  /** When the current phase began, for the timeouts. */
  private since = Date.now();
  private pumping = false;
  private again = false;
  private destroyed = false;
  /** The client will send nothing more. */
  private ended = false;
  /** The answer to a request refused before it reached the handler. */
  private refusal: ResponseWriter | undefined;

  constructor(
    readonly socket: Socket,
    private readonly handler: Http1Handler,
    private readonly opts: ConnectionOptions,
    private readonly onClose: (c: Connection) => void,
  ) {
    this.parser = new RequestParser(opts.limits);
    socket.setNoDelay(true);
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('drain', () => this.current?.res.emit('drain'));
    socket.on('error', () => socket.destroy());
    socket.on('end', () => this.readEnded());
    socket.on('close', () => this.closed());
  }

  write(data: string | Buffer): boolean {
    if (this.destroyed) return true;
    // A stream to a client that has sent its last byte: it is gone (as node:http's server takes a
    // half close), and an idle stream would otherwise never learn it.
    if (this.ended && this.current && !this.current.res.writableEnded) {
      this.destroy();
      return true;
    }
    return this.socket.write(data);
  }

  finished(res: ResponseWriter, close: boolean): void {
    if (res === this.refusal) {
      this.closeAfterAnswer();
      return;
    }
    const ex = this.current;
    if (!ex || ex.res !== res) return;
    // A client told nothing after Expect: 100-continue may or may not send its body: where the
    // next request starts is not known (RFC 9110 10.1.1 lets the server close).
    if (close || ex.failure || (!ex.complete && ex.head.expectContinue && !ex.continued)) {
      this.closeAfterAnswer();
      return;
    }
    ex.answered = true;
    if (ex.complete) this.nextRequest();
    // An answer given before the body was read whole (a handler that answers at once): the rest
    // of the body is read and dropped, so that the next request is found after it.
    else this.pump();
  }

  private nextRequest(): void {
    this.current = undefined;
    this.setPhase(this.parser.idle ? 'idle' : 'head');
    if (this.socket.isPaused()) this.socket.resume();
    this.pump();
    if (this.ended && !this.current) this.closeAfterAnswer();
  }

  /**
   * The client sent its last byte (a half close, as `nc` does after its request): what it asked
   * whole is still answered, then the connection closes; a stream, which would never end, is cut.
   * The server is half-open for this: with node's default the socket would end before an
   * asynchronous answer could be written.
   */
  private readEnded(): void {
    this.ended = true;
    const ex = this.current;
    if (!ex) {
      if (!this.refusal) this.closeAfterAnswer();
      return;
    }
    if (ex.res.headersSent && !ex.res.writableEnded) {
      this.destroy();
      return;
    }
    if (!ex.complete) {
      ex.fail(new HttpError(400, 'the request ended before its body did', 'send the whole body'));
      if (ex.answered) this.closeAfterAnswer();
      else this.setPhase('busy');
    }
  }

  /** Called by the server's timer. */
  checkTimeouts(now: number): void {
    const elapsed = now - this.since;
    switch (this.phase) {
      case 'idle':
        if (elapsed > this.opts.keepAliveTimeoutMs) this.destroy();
        return;
      case 'head':
        if (elapsed > this.opts.headersTimeoutMs) this.refuse(timedOut('head'));
        return;
      case 'body':
        if (elapsed > this.opts.requestTimeoutMs) {
          const ex = this.current!;
          // The handler answers (its body() rejects); the connection closes after that answer.
          ex.fail(timedOut('body'));
          if (ex.answered) this.closeAfterAnswer();
          else this.setPhase('busy');
        }
        return;
      case 'closing':
        // A client that reads nothing holds the answer in the socket's buffer: it gets the head's time to take it.
        if (elapsed > this.opts.headersTimeoutMs) this.destroy();
        return;
      case 'busy':
        return;
    }
  }

  /** Ends the connection now; an answer being written is cut short. */
  destroy(): void {
    this.socket.destroy();
  }

  private setPhase(phase: Phase): void {
    this.phase = phase;
    this.since = Date.now();
  }

  private onData(chunk: Buffer): void {
    if (this.phase === 'closing') return;
    if (this.phase === 'idle') this.setPhase('head');
    this.parser.feed(chunk);
    this.pump();
  }

  /** Takes events from the parser while the connection may act on them; re-entered calls fold into the running one. */
  private pump(): void {
    if (this.pumping) {
      this.again = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.again = false;
        this.drainParser();
      } while (this.again);
    } finally {
      this.pumping = false;
    }
  }

  private drainParser(): void {
    for (;;) {
      if (this.destroyed || this.phase === 'closing') return;
      const ex = this.current;
      if (ex?.answered && ex.complete) {
        this.nextRequest();
        return;
      }
      if (ex && (ex.complete || ex.failure)) {
        // The next request waits for this answer; past a head's worth of pipelined bytes, stop reading.
        if (this.parser.buffered > this.opts.limits.maxRequestLineBytes + this.opts.limits.maxHeaderBytes) this.socket.pause();
        return;
      }
      let event;
      try {
        event = this.parser.next();
      } catch (err) {
        if (!(err instanceof HttpError)) throw err;
        if (ex) {
          ex.fail(err);
          if (ex.answered) this.closeAfterAnswer();
          else this.setPhase('busy');
        } else this.refuse(err);
        return;
      }
      if (!event) return;
      switch (event.kind) {
        case 'head':
          this.start(event.head);
          break;
        case 'data':
          ex!.data(event.data);
          if (ex!.size > this.opts.maxBodyBytes) {
            ex!.fail(tooLarge(this.opts.maxBodyBytes));
            if (ex!.answered) this.closeAfterAnswer();
            else this.setPhase('busy');
          }
          break;
        case 'end':
          ex!.end();
          if (this.phase === 'body') this.setPhase('busy');
          break;
      }
    }
  }

  private start(head: RequestHead): void {
    const ex = new Exchange(this, head, this);
    this.current = ex;
    // The head's clock goes on for the body.
    this.phase = 'body';
    if (typeof head.bodyLength === 'number' && head.bodyLength > this.opts.maxBodyBytes) {
      ex.fail(tooLarge(this.opts.maxBodyBytes));
      this.setPhase('busy');
    }
    try {
      this.handler(ex, ex.res);
    } catch (err) {
      this.handlerFailed(ex, err);
    }
  }

  private handlerFailed(ex: Exchange, err: unknown): void {
    if (ex.res.headersSent) {
      this.destroy();
      return;
    }
    const message = err instanceof Error ? err.message : String(err);
    ex.res.closeConnection();
    answer(ex.res, new HttpError(500, `the server failed: ${message}`, "this is a fault of the server's"));
  }

  /** A request that cannot be taken, before any handler saw it: its answer, and the connection closes. */
  private refuse(err: HttpError): void {
    if (this.current || this.refusal) {
      this.destroy();
      return;
    }
    this.refusal = new ResponseWriter(this, '1.1', false);
    this.setPhase('busy');
    answer(this.refusal, err);
  }

  private closeAfterAnswer(): void {
    if (this.phase === 'closing') return;
    this.setPhase('closing');
    if (this.socket.isPaused()) this.socket.resume();
    // Unread bytes at close would make the kernel reset the connection and the client could lose
    // the answer: what the client still sends is read and dropped for a while after the answer is out.
    this.socket.end(() => setTimeout(() => this.destroy(), this.opts.lingerMs).unref());
  }

  private closed(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    const ex = this.current;
    if (ex) {
      ex.fail(new HttpError(400, 'the client closed the connection', 'send the whole request'));
      ex.res.emitClose();
    }
    this.onClose(this);
  }
}

function timedOut(what: 'head' | 'body'): HttpError {
  return new HttpError(408, `the request's ${what} did not arrive in time`, 'send the whole request at once');
}

function tooLarge(max: number): HttpError {
  return new HttpError(413, `the body has more than ${max} bytes`, `send a body of at most ${max} bytes`);
}

/** An HttpError as the API's other refusals look: JSON `{"error", "fix"}`. */
export function answer(res: ResponseWriter, err: HttpError): void {
  res.writeHead(err.status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(JSON.stringify({ error: err.message, fix: err.fix }) + '\n');
}
