/**
 * A bare Kafka connection for wire-level tests: sends frames exactly as given (pipelined, with
 * any correlation id) and hands back raw response frames, decoded only when asked.
 */
import net from 'node:net';
import tls from 'node:tls';
import { FrameReader } from '../../src/protocol/wire/frame-reader.js';
import { decodeResponse, encodeRequestFrame } from '../../src/protocol/messages.js';
import { decodeResponseHeader, responseHeaderVersion } from '../../src/protocol/headers.js';

export class RawConnection {
  private readonly frames: Buffer[] = [];
  private readonly waiters: (() => void)[] = [];
  private readonly reader = new FrameReader(1 << 30);
  private closedFlag = false;
  readonly closed: Promise<void>;

  private constructor(readonly socket: net.Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.reader.push(chunk, (f) => this.frames.push(Buffer.from(f)));
      this.wake();
    });
    this.closed = new Promise((resolve) => {
      socket.on('close', () => {
        this.closedFlag = true;
        this.wake();
        resolve();
      });
    });
    socket.on('error', () => {});
  }

  static open(address: string): Promise<RawConnection> {
    const [host, port] = address.split(':');
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host: host!, port: Number(port) }, () => resolve(new RawConnection(socket)));
      socket.once('error', reject);
    });
  }

  /** Over TLS: resolves once the handshake is done (a TLS 1.3 server may still refuse the client's certificate after it). */
  static openTls(address: string, options: tls.ConnectionOptions): Promise<RawConnection> {
    const [host, port] = address.split(':');
    return new Promise((resolve, reject) => {
      const socket = tls.connect({ host: host!, port: Number(port), ...options }, () => resolve(new RawConnection(socket)));
      socket.once('error', reject);
    });
  }

  get isClosed(): boolean {
    return this.closedFlag;
  }

  send(frame: Buffer): void {
    this.socket.write(frame);
  }

  request(apiKey: number, apiVersion: number, body: object, correlationId: number): void {
    this.send(encodeRequestFrame({ apiKey, apiVersion, correlationId, clientId: 'raw-test' }, body));
  }

  /** The next response frame (with its size prefix); rejects on close or after the deadline. */
  async nextFrame(timeoutMs = 10_000): Promise<Buffer> {
    const deadline = Date.now() + timeoutMs;
    while (this.frames.length === 0) {
      if (this.closedFlag) throw new Error('connection closed before a response arrived');
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no response within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    return this.frames.shift()!;
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  async response(apiKey: number, apiVersion: number, timeoutMs?: number): Promise<{ correlationId: number; body: any; frame: Buffer }> {
    const frame = await this.nextFrame(timeoutMs);
    const header = decodeResponseHeader(frame.subarray(4), responseHeaderVersion(apiKey, apiVersion));
    return { correlationId: header.correlationId, body: decodeResponse(apiKey, apiVersion, frame, 4 + header.bodyOffset), frame };
  }

  /** Resolves true if the peer closes within the deadline. */
  async closesWithin(ms: number): Promise<boolean> {
    return Promise.race([this.closed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms))]);
  }

  pendingFrames(): number {
    return this.frames.length;
  }

  close(): void {
    this.socket.destroy();
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}

/** One request on a fresh connection; returns the decoded response body. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export async function askOnce(address: string, apiKey: number, version: number, body: object): Promise<any> {
  const conn = await RawConnection.open(address);
  try {
    conn.request(apiKey, version, body, 7);
    const res = await conn.response(apiKey, version);
    if (res.correlationId !== 7) throw new Error(`response carries correlation id ${res.correlationId}, not 7`);
    return res.body;
  } finally {
    conn.close();
  }
}
