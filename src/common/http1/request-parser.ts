/**
 * HTTP/1.1 requests from a byte stream (RFC 9112), as strict as llhttp is by default: whatever
 * two parsers could read differently (bare CR or LF, obs-fold, whitespace before a colon, both
 * Content-Length and Transfer-Encoding, differing lengths) is refused, since a proxy in front of
 * us may have read it the other way (request smuggling). The parser only reads: it never writes
 * to the socket, and it returns the same events however the bytes were split.
 */

/** A request the server refuses, with the status and the JSON answer it gets. */
export class HttpError extends Error {
  override readonly name = 'HttpError';

  constructor(
    readonly status: number,
    message: string,
    /** What the client should do about it. */
    readonly fix: string,
  ) {
    super(message);
  }
}

export interface ParserLimits {
  /** The request line, without its CRLF: 414 beyond. */
  maxRequestLineBytes: number;
  /** The header fields after the request line, and a chunked body's trailers: 431 beyond. */
  maxHeaderBytes: number;
  /** Header fields in one request: 431 beyond. */
  maxHeaders: number;
}

export const DEFAULT_PARSER_LIMITS: ParserLimits = { maxRequestLineBytes: 8 * 1024, maxHeaderBytes: 16 * 1024, maxHeaders: 100 };

export interface RequestHead {
  method: string;
  /** The request-target, in origin-form, as sent. */
  url: string;
  httpVersion: '1.0' | '1.1';
  /** Names lowercased; a field sent more than once is joined with ", " (RFC 9110 5.3). */
  headers: Record<string, string>;
  /** The body's length, or 'chunked' when it is not known before its end. */
  bodyLength: number | 'chunked';
  /** Whether the client lets the connection stay open after the answer (RFC 9112 9.3). */
  keepAlive: boolean;
  /** The client waits for 100 Continue before it sends the body. */
  expectContinue: boolean;
}

export type ParseEvent = { kind: 'head'; head: RequestHead } | { kind: 'data'; data: Buffer } | { kind: 'end' };

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Visible ASCII: no space or control character may reach the target. */
const ORIGIN_FORM = /^\/[\x21-\x7e]*$/;
const VERSION = /^HTTP\/(\d)\.(\d)$/;
/** Field values: visible characters, SP, HTAB and obs-text; no other control character. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const CHUNK_SIZE_LINE = /^([0-9A-Fa-f]+)[ \t]*(;[\t\x20-\x7e\x80-\xff]*)?$/;
const DIGITS = /^\d+$/;
/** A chunk size beyond this many hex digits could not be a length. */
const MAX_CHUNK_SIZE_DIGITS = 12;
/** A chunk-size line with its extensions, which are ignored. */
const MAX_CHUNK_LINE_BYTES = 4096;

const CR = 13;
const HEAD_END = Buffer.from('\r\n\r\n');
const LF = 10;
const EMPTY = Buffer.alloc(0);

const bad = (message: string, fix = 'send a well-formed HTTP/1.1 request (RFC 9112)') => new HttpError(400, message, fix);

/** Trims SP and HTAB only (String.trim would also take other whitespace a field value may not hold anyway). */
function trimOws(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && (s.charCodeAt(a) === 32 || s.charCodeAt(a) === 9)) a++;
  while (b > a && (s.charCodeAt(b - 1) === 32 || s.charCodeAt(b - 1) === 9)) b--;
  return a === 0 && b === s.length ? s : s.slice(a, b);
}

function tokensOf(value: string | undefined): string[] {
  return value === undefined
    ? []
    : value
        .toLowerCase()
        .split(',')
        .map(trimOws)
        .filter((t) => t !== '');
}

type State = 'head' | 'fixed' | 'chunk-size' | 'chunk-data' | 'chunk-crlf' | 'trailers' | 'dead';

export class RequestParser {
  private buf: Buffer = EMPTY;
  private state: State = 'head';
  /** Bytes of `buf` already scanned for the end of the head (or of a line). */
  private scanned = 0;
  /** Body bytes (or bytes of the current chunk) still to come. */
  private remaining = 0;
  private trailerBytes = 0;
  /** Where the request line's CR is, once scanned. */
  private lineEnd = -1;
  private failure: HttpError | undefined;

  constructor(private readonly limits: ParserLimits = DEFAULT_PARSER_LIMITS) {}

  /** Bytes received and not yet returned as events. */
  get buffered(): number {
    return this.buf.length;
  }

  /** Whether the parser is between requests with nothing of the next one received. */
  get idle(): boolean {
    return this.state === 'head' && this.buf.length === 0;
  }

  feed(chunk: Buffer): void {
    if (this.state === 'dead') return;
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
  }

  /**
   * The next event, or undefined until more bytes come. Throws an HttpError for a malformed
   * request; the parser then stays failed (the connection must close: where the next request
   * starts is no longer known).
   */
  next(): ParseEvent | undefined {
    if (this.failure) throw this.failure;
    try {
      return this.step();
    } catch (err) {
      if (err instanceof HttpError) {
        this.failure = err;
        this.state = 'dead';
        this.buf = EMPTY;
      }
      throw err;
    }
  }

  private take(n: number): Buffer {
    const out = this.buf.subarray(0, n);
    this.buf = n === this.buf.length ? EMPTY : this.buf.subarray(n);
    this.scanned = 0;
    this.lineEnd = -1;
    return out;
  }

  private step(): ParseEvent | undefined {
    switch (this.state) {
      case 'head':
        return this.head();
      case 'fixed': {
        if (this.remaining === 0) return this.end();
        if (this.buf.length === 0) return undefined;
        const data = this.take(Math.min(this.remaining, this.buf.length));
        this.remaining -= data.length;
        return { kind: 'data', data };
      }
      case 'chunk-size':
        return this.chunkSize();
      case 'chunk-data': {
        if (this.buf.length === 0) return undefined;
        const data = this.take(Math.min(this.remaining, this.buf.length));
        this.remaining -= data.length;
        if (this.remaining === 0) this.state = 'chunk-crlf';
        return { kind: 'data', data };
      }
      case 'chunk-crlf':
        if (this.buf.length < 2) {
          if (this.buf.length === 1 && this.buf[0] !== CR) throw bad('a chunk is longer than its size says');
          return undefined;
        }
        if (this.buf[0] !== CR || this.buf[1] !== LF) throw bad('a chunk is longer than its size says');
        this.take(2);
        this.state = 'chunk-size';
        return this.chunkSize();
      case 'trailers':
        return this.trailers();
      case 'dead':
        return undefined;
    }
  }

  private end(): ParseEvent {
    this.state = 'head';
    return { kind: 'end' };
  }

  /**
   * Finds the blank line that ends the head, checking every byte on the way so that a bare CR, a
   * bare LF or a NUL is refused as soon as it arrives rather than after a timeout.
   */
  private head(): ParseEvent | undefined {
    const buf = this.buf;
    // RFC 9112 2.2: empty lines before a request line are ignored (some clients send one after a POST body).
    let start = 0;
    while (start + 1 < buf.length && buf[start] === CR && buf[start + 1] === LF) start += 2;
    if (start > 0) {
      this.take(start);
      return this.head();
    }
    const whole = buf.indexOf(HEAD_END);
    if (whole >= 0) {
      const head = this.wholeHead(whole + 4);
      if (head) return head;
    }
    const { maxRequestLineBytes, maxHeaderBytes } = this.limits;
    let end = -1;
    let i = this.scanned;
    let lineEnd = this.lineEnd;
    // Each refusal depends only on the bytes up to where it is found, so that however the head
    // was split it gets the same answer.
    for (; i < buf.length; i++) {
      const b = buf[i]!;
      if (b === LF) {
        if (i === 0 || buf[i - 1] !== CR) throw bad('a line ends in LF without CR');
        if (lineEnd < 0) lineEnd = i - 1;
        else if (buf[i - 2] === LF) end = i + 1;
      } else if (i > 0 && buf[i - 1] === CR) {
        throw bad('a CR is not followed by LF');
      } else if (b === 0) {
        throw bad('the head holds a NUL byte');
      }
      if (lineEnd < 0 ? i > maxRequestLineBytes + 1 : lineEnd > maxRequestLineBytes) throw this.uriTooLong();
      if (lineEnd >= 0 && i - lineEnd > maxHeaderBytes + 3) throw this.headersTooLarge();
      if (end >= 0) break;
    }
    if (end < 0) {
      this.scanned = i;
      this.lineEnd = lineEnd;
      return undefined;
    }
    const text = buf.toString('latin1', 0, end - 4);
    this.take(end);
    const lines = text.split('\r\n');
    const head = this.requestLine(lines[0]!);
    this.fields(lines, head);
    this.framing(head);
    return { kind: 'head', head };
  }

  /**
   * A head already whole, read without looking at each byte in JavaScript: the checks of its
   * lines refuse every CR, LF and NUL the byte loop would, so a head that passes them and the
   * limits is the one the loop would give. Anything else is left to the loop, which says what
   * is wrong first, as it would had the bytes come one at a time.
   */
  private wholeHead(end: number): ParseEvent | undefined {
    const lineEnd = this.buf.indexOf('\r\n');
    if (lineEnd > this.limits.maxRequestLineBytes || end - 1 - lineEnd > this.limits.maxHeaderBytes + 3) return undefined;
    const lines = this.buf.toString('latin1', 0, end - 4).split('\r\n');
    let head: RequestHead;
    try {
      head = this.requestLine(lines[0]!);
      this.fields(lines, head);
    } catch (err) {
      if (err instanceof HttpError) return undefined;
      throw err;
    }
    this.take(end);
    this.framing(head);
    return { kind: 'head', head };
  }

  private uriTooLong(): HttpError {
    return new HttpError(
      414,
      `the request line has more than ${this.limits.maxRequestLineBytes} bytes`,
      'send a shorter request-target; a long key or value belongs in the body',
    );
  }

  private headersTooLarge(): HttpError {
    return new HttpError(
      431,
      `the header fields have more than ${this.limits.maxHeaderBytes} bytes or ${this.limits.maxHeaders} fields`,
      'send fewer or shorter header fields',
    );
  }

  private requestLine(line: string): RequestHead {
    const parts = line.split(' ');
    if (parts.length !== 3) throw bad('the request line is not "METHOD target HTTP/1.1" with single spaces');
    const [method, url, version] = parts as [string, string, string];
    if (!TOKEN.test(method)) throw bad('the method is not a token');
    if (!ORIGIN_FORM.test(url)) throw bad('the request-target is not a path (origin-form) of visible ASCII', 'send a path such as /v1/topics/t');
    const v = VERSION.exec(version);
    if (!v) throw bad(`${JSON.stringify(version)} is not an HTTP version`);
    if (v[1] !== '1' || (v[2] !== '0' && v[2] !== '1')) {
      throw new HttpError(505, `${version} is not supported`, 'send HTTP/1.1 (or HTTP/1.0)');
    }
    return { method, url, httpVersion: v[2] === '1' ? '1.1' : '1.0', headers: {}, bodyLength: 0, keepAlive: false, expectContinue: false };
  }

  private fields(lines: string[], head: RequestHead): void {
    if (lines.length - 1 > this.limits.maxHeaders) throw this.headersTooLarge();
    const headers = head.headers;
    for (let n = 1; n < lines.length; n++) {
      const line = lines[n]!;
      const c = line.charCodeAt(0);
      if (c === 32 || c === 9) throw bad('a header field is folded over lines (obs-fold)', 'send each field on one line');
      const colon = line.indexOf(':');
      if (colon <= 0) throw bad('a header line has no field name and colon');
      const rawName = line.slice(0, colon);
      if (!TOKEN.test(rawName)) throw bad(`the header field name ${JSON.stringify(rawName)} is not a token (no space before the colon)`);
      const value = trimOws(line.slice(colon + 1));
      if (!FIELD_VALUE.test(value)) throw bad(`the value of ${rawName} holds a control character`);
      const name = rawName.toLowerCase();
      const had = headers[name];
      if (had === undefined) headers[name] = value;
      else if (name === 'host') throw bad('Host is given more than once', 'send one Host field');
      else headers[name] = `${had}, ${value}`;
    }
  }

  private framing(head: RequestHead): void {
    const h = head.headers;
    if (head.httpVersion === '1.1' && h.host === undefined) throw bad('an HTTP/1.1 request has no Host field', 'send Host (RFC 9112 3.2)');
    const te = h['transfer-encoding'];
    const cl = h['content-length'];
    if (te !== undefined) {
      if (cl !== undefined) {
        throw bad('both Content-Length and Transfer-Encoding are given', 'send one: Content-Length, or Transfer-Encoding: chunked');
      }
      const codings = tokensOf(te);
      if (codings.length === 0) throw bad('Transfer-Encoding is empty');
      if (codings.length !== 1 || codings[0] !== 'chunked') {
        throw new HttpError(501, `Transfer-Encoding ${JSON.stringify(te)} is not supported`, 'send the body with Content-Length or Transfer-Encoding: chunked');
      }
      head.bodyLength = 'chunked';
      this.state = 'chunk-size';
    } else if (cl !== undefined) {
      const lengths = cl.split(',').map(trimOws);
      const first = lengths[0]!;
      if (!lengths.every((l) => l === first) || !DIGITS.test(first)) {
        throw bad(`Content-Length ${JSON.stringify(cl)} is not one length`, 'send one Content-Length of decimal digits');
      }
      const length = Number(first);
      if (!Number.isSafeInteger(length)) throw bad(`Content-Length ${first} is too large`);
      head.bodyLength = length;
      this.remaining = length;
      this.state = 'fixed';
    } else {
      this.remaining = 0;
      this.state = 'fixed';
    }
    const connection = tokensOf(h.connection);
    head.keepAlive = connection.includes('close') ? false : head.httpVersion === '1.1' || connection.includes('keep-alive');
    const expect = h.expect;
    if (expect !== undefined) {
      if (expect.toLowerCase() !== '100-continue') {
        // The head is whole and its body framed: the answer can be given and the connection closed.
        throw new HttpError(417, `Expect: ${expect} is not supported`, 'send no Expect, or Expect: 100-continue');
      }
      head.expectContinue = head.httpVersion === '1.1' && head.bodyLength !== 0;
    }
  }

  private chunkSize(): ParseEvent | undefined {
    const lineEnd = this.buf.indexOf('\r\n');
    if (lineEnd < 0) {
      if (this.buf.length > MAX_CHUNK_LINE_BYTES) throw bad('a chunk-size line is too long');
      if (this.buf.includes(LF)) throw bad('a chunk-size line ends in LF without CR');
      return undefined;
    }
    if (lineEnd > MAX_CHUNK_LINE_BYTES) throw bad('a chunk-size line is too long');
    const line = this.take(lineEnd + 2).toString('latin1', 0, lineEnd);
    const m = CHUNK_SIZE_LINE.exec(line);
    if (!m) throw bad(`${JSON.stringify(line)} is not a chunk-size line`);
    if (m[1]!.length > MAX_CHUNK_SIZE_DIGITS) throw bad('a chunk size is too large');
    const size = parseInt(m[1]!, 16);
    if (size === 0) {
      this.state = 'trailers';
      this.trailerBytes = 0;
      return this.trailers();
    }
    this.remaining = size;
    this.state = 'chunk-data';
    return this.step();
  }

  /** Trailer fields are read and dropped: nothing here has a use for them. */
  private trailers(): ParseEvent | undefined {
    for (;;) {
      const lineEnd = this.buf.indexOf('\r\n');
      if (lineEnd < 0) {
        if (this.trailerBytes + this.buf.length > this.limits.maxHeaderBytes) throw this.headersTooLarge();
        if (this.buf.includes(LF)) throw bad('a trailer line ends in LF without CR');
        return undefined;
      }
      this.trailerBytes += lineEnd + 2;
      if (this.trailerBytes > this.limits.maxHeaderBytes) throw this.headersTooLarge();
      const line = this.take(lineEnd + 2).toString('latin1', 0, lineEnd);
      if (line === '') return this.end();
      const colon = line.indexOf(':');
      if (colon <= 0 || !TOKEN.test(line.slice(0, colon)) || !FIELD_VALUE.test(line.slice(colon + 1))) throw bad('a trailer field is malformed');
    }
  }
}
