/**
 * A hand-written broker for the narrow cases a real one cannot produce: a malformed response, a
 * wrong correlation id, a close in the middle of a request. It answers ApiVersions and Metadata
 * correctly (one broker, itself) so the proxy can discover it, and misbehaves on cue.
 */
import net from 'node:net';
import { FrameReader } from '../../src/protocol/wire/frame-reader.js';
import { ApiKey, apiSchema, encodeResponseFrame } from '../../src/protocol/messages.js';

export type Misbehaviour = 'close' | 'garbage-body' | 'wrong-correlation-id' | 'silence' | 'huge-frame';

export interface FakeBroker {
  address: string;
  port: number;
  /** What to do with the next request of the given API (ApiVersions/Metadata answer normally otherwise). */
  misbehave(apiKey: number, how: Misbehaviour): void;
  /** Hands the next request of the given API (frame with size prefix) to `answer`, which writes to the socket itself. */
  handle(apiKey: number, answer: (frame: Buffer, socket: net.Socket) => void): void;
  connections(): number;
  close(): Promise<void>;
}

export async function startFakeBroker(port = 0): Promise<FakeBroker> {
  const plans = new Map<number, Misbehaviour>();
  const handlers = new Map<number, (frame: Buffer, socket: net.Socket) => void>();
  const sockets = new Set<net.Socket>();
  let selfPort = 0;
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    const reader = new FrameReader(1 << 24);
    socket.on('data', (chunk: Buffer) =>
      reader.push(chunk, (frame) => {
        const apiKey = frame.readInt16BE(4);
        const version = frame.readInt16BE(6);
        const correlationId = frame.readInt32BE(8);
        const handler = handlers.get(apiKey);
        if (handler) {
          handlers.delete(apiKey);
          handler(Buffer.from(frame), socket);
          return;
        }
        const plan = plans.get(apiKey);
        if (plan) {
          plans.delete(apiKey);
          if (plan === 'close') socket.destroy();
          else if (plan === 'garbage-body') socket.write(Buffer.from([0, 0, 0, 9, ...int32(correlationId), 0xff, 0xff, 0xff, 0xff, 0x7f]));
          else if (plan === 'wrong-correlation-id') socket.write(answer(apiKey, version, correlationId + 1, selfPort));
          else if (plan === 'huge-frame') socket.write(Buffer.from([0x7f, 0xff, 0xff, 0xff, ...int32(correlationId)]));
          return;
        }
        socket.write(answer(apiKey, version, correlationId, selfPort));
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port }, resolve));
  selfPort = (server.address() as net.AddressInfo).port;
  return {
    address: `127.0.0.1:${selfPort}`,
    port: selfPort,
    misbehave: (apiKey, how) => plans.set(apiKey, how),
    handle: (apiKey, answer) => handlers.set(apiKey, answer),
    connections: () => sockets.size,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

function int32(n: number): number[] {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return [...b];
}

function answer(apiKey: number, version: number, correlationId: number, port: number): Buffer {
  if (apiKey === ApiKey.ApiVersions) {
    const keys = [ApiKey.ApiVersions, ApiKey.Metadata].map((k) => ({ apiKey: k, minVersion: apiSchema(k)!.minVersion, maxVersion: apiSchema(k)!.maxVersion }));
    return encodeResponseFrame(apiKey, version, correlationId, { errorCode: 0, apiKeys: keys });
  }
  if (apiKey === ApiKey.Metadata) {
    return encodeResponseFrame(apiKey, version, correlationId, {
      brokers: [{ nodeId: 0, host: '127.0.0.1', port, rack: null }],
      clusterId: 'fake',
      controllerId: 0,
      topics: [],
    });
  }
  throw new Error(`fake broker has no answer for api ${apiKey}`);
}
