/**
 * One answer on an HTTP/1.1 connection, with the part of node's ServerResponse that a JSON API
 * and a change stream use: writeHead, write, end, flushHeaders, headersSent, 'drain' and 'close'.
 * An answer ended before anything was written goes out as head and body in one socket write,
 * with its Content-Length; one written piece by piece is chunked (close-delimited to an HTTP/1.0
 * client, which does not know chunks).
 */
import { EventEmitter } from 'node:events';
import { STATUS_CODES } from 'node:http';

/** What an answer writes through: the connection. */
export interface ResponseSink {
  /** False once the socket's buffer is past its mark ('drain' follows). */
  write(data: string | Buffer): boolean;
  /** The answer is written whole; `close` says the connection must close after it. */
  finished(res: ResponseWriter, close: boolean): void;
}

export type OutgoingHeaders = Readonly<Record<string, string | number>>;

/** Framing is the writer's to decide: a caller's own would contradict it. */
const FRAMING_FIELDS = new Set(['content-length', 'transfer-encoding']);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** No CR or LF (or other control) in a value: it would let a caller's text start a field of its own. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * Header fields checked and written out once, for answers that send the same fields many times
 * (a warm key's answer): writeHead then only copies the text.
 */
export class HeaderFields {
  readonly text: string;
  /** Whether the fields ask for the connection to close. */
  readonly close: boolean;

  constructor(headers: OutgoingHeaders) {
    let text = '';
    let close = false;
    for (const name in headers) {
      const value = String(headers[name]);
      const lower = name.toLowerCase();
      if (!TOKEN.test(name) || !FIELD_VALUE.test(value)) throw new TypeError(`invalid header field ${JSON.stringify(name)}: ${JSON.stringify(value)}`);
      if (FRAMING_FIELDS.has(lower)) throw new TypeError(`${name} is set by the writer`);
      if (lower === 'connection') {
        close ||= value.toLowerCase() === 'close';
        continue;
      }
      text += `${name}: ${value}\r\n`;
    }
    this.text = text;
    this.close = close;
  }
}

export class ResponseWriter extends EventEmitter {
  statusCode = 200;
  private head: string | undefined;
  private sent = false;
  private chunked = false;
  private ended = false;
  private closed = false;
  private closeAfter: boolean;

  constructor(
    private readonly sink: ResponseSink,
    /** The request's version: an HTTP/1.0 client gets no chunks and says itself whether it keeps the connection. */
    private readonly httpVersion: '1.0' | '1.1',
    keepAlive: boolean,
    /** A HEAD request gets the head of the answer only. */
    private readonly headOnly = false,
  ) {
    super();
    this.closeAfter = !keepAlive;
  }

  /** Whether the head has gone to the socket. */
  get headersSent(): boolean {
    return this.sent;
  }

  /** Whether end() was called. */
  get writableEnded(): boolean {
    return this.ended;
  }

  /** The connection will close once this answer is written (`Connection: close` is sent). */
  closeConnection(): void {
    if (this.sent) throw new Error('the head is already sent');
    this.closeAfter = true;
  }

  writeHead(status: number, headers: OutgoingHeaders | HeaderFields = EMPTY_FIELDS): this {
    if (this.sent) throw new Error('writeHead after the head was sent');
    if (!Number.isInteger(status) || status < 200 || status > 999) throw new RangeError(`status ${status} is not a final status`);
    this.statusCode = status;
    const fields = headers instanceof HeaderFields ? headers : new HeaderFields(headers);
    if (fields.close) this.closeAfter = true;
    this.head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}\r\n${fields.text}`;
    return this;
  }

  /** Sends the head now, committing to chunked framing: a stream's client learns the status before the first record. */
  flushHeaders(): void {
    if (this.sent || this.closed) return;
    this.sink.write(this.streamHead());
  }

  write(chunk: string | Buffer): boolean {
    if (this.ended) throw new Error('write after end');
    if (this.closed) return true;
    const size = typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length;
    const head = this.sent ? '' : this.streamHead();
    // A chunk of size 0 would end the body.
    if (size === 0) return head === '' ? true : this.sink.write(head);
    if (this.headOnly) return head === '' ? true : this.sink.write(head);
    if (!this.chunked)
      return this.sink.write(head === '' ? chunk : typeof chunk === 'string' ? head + chunk : Buffer.concat([Buffer.from(head, 'latin1'), chunk]));
    const frame = `${head}${size.toString(16)}\r\n`;
    if (typeof chunk === 'string') return this.sink.write(`${frame}${chunk}\r\n`);
    return this.sink.write(Buffer.concat([Buffer.from(frame, 'latin1'), chunk, CRLF]));
  }

  end(body?: string | Buffer): void {
    if (this.ended) return;
    this.ended = true;
    if (this.closed) return;
    if (this.sent) {
      if (body !== undefined && body.length > 0) this.write(body);
      if (this.chunked) this.sink.write('0\r\n\r\n');
    } else {
      if (this.head === undefined) this.writeHead(this.statusCode);
      const b = body ?? '';
      const size = typeof b === 'string' ? Buffer.byteLength(b) : b.length;
      const head = `${this.head}content-length: ${size}\r\n${this.connectionField()}\r\n`;
      this.sent = true;
      if (this.headOnly || size === 0) this.sink.write(head);
      else this.sink.write(typeof b === 'string' ? head + b : Buffer.concat([Buffer.from(head, 'latin1'), b]));
    }
    this.sink.finished(this, this.closeAfter);
    this.emitClose();
  }

  /** The connection closed (or the answer ended): 'close', once. */
  emitClose(): void {
    if (this.closed) return;
    this.closed = true;
    this.emit('close');
  }

  private connectionField(): string {
    if (this.closeAfter) return 'connection: close\r\n';
    return this.httpVersion === '1.0' ? 'connection: keep-alive\r\n' : '';
  }

  private streamHead(): string {
    if (this.head === undefined) this.writeHead(this.statusCode);
    this.sent = true;
    // An HTTP/1.0 client reads a body of unknown length until the connection closes.
    if (this.httpVersion === '1.0') this.closeAfter = true;
    else this.chunked = !this.headOnly;
    return `${this.head}${this.chunked ? 'transfer-encoding: chunked\r\n' : ''}${this.connectionField()}\r\n`;
  }
}

const CRLF = Buffer.from('\r\n');
const EMPTY_FIELDS = new HeaderFields({});
