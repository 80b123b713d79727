/**
 * ProxyConnection between a real client socket and a scripted upstream on loopback: framing,
 * ordering and what the chain's decisions do to the bytes on both sides.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, test } from 'node:test';
import {
  ApiKey,
  decodeResponse,
  encodeRequestFrame,
  encodeResponseFrame,
  type ApiKeyNumber,
  type BodyInit,
  type RequestBodies,
} from '../../../src/protocol/messages.js';
import { ByteParts, putRecords } from '../../../src/protocol/wire/byte-parts.js';
import { createLogger } from '../../../src/common/log.js';
import { ProxyMeter } from '../../../src/proxy/proxy-meter.js';
import { ProxyConnection } from '../../../src/proxy/connection.js';
import { FilterChain } from '../../../src/proxy/filter/filter-chain.js';
import type { Filter } from '../../../src/proxy/filter/filter.js';
import { fetchVersionFilter } from '../../../src/proxy/filters/fetch-version-filter.js';
import { FrameReader } from '../../../src/protocol/wire/frame-reader.js';

const log = createLogger({ component: 'connection-test' });
const closers: (() => void)[] = [];
after(() => closers.forEach((c) => c()));

/** Collects whole frames from a socket. */
class Frames {
  readonly got: Buffer[] = [];
  private waiters: (() => void)[] = [];
  closed = false;
  constructor(socket: net.Socket) {
    const reader = new FrameReader(32 << 20);
    socket.on('data', (chunk) =>
      reader.push(chunk, (frame) => {
        this.got.push(Buffer.from(frame));
        this.waiters.splice(0).forEach((w) => w());
      }),
    );
    socket.on('close', () => {
      this.closed = true;
      this.waiters.splice(0).forEach((w) => w());
    });
  }
  async next(count: number, ms = 5000): Promise<Buffer[]> {
    const deadline = Date.now() + ms;
    while (this.got.length < count && !this.closed) {
      if (Date.now() > deadline) throw new Error(`waited ${ms} ms for ${count} frames, got ${this.got.length}`);
      await new Promise<void>((r) => {
        this.waiters.push(r);
        setTimeout(r, 50);
      });
    }
    return this.got.slice(0, count);
  }
}

interface Rig {
  client: net.Socket;
  fromProxy: Frames;
  /** What reached the upstream, frame by frame. */
  atUpstream: Frames;
  /** Sends a frame from the upstream to the proxy. */
  answer(frame: Buffer): void;
}

function listen(server: net.Server): Promise<number> {
  closers.push(() => server.close());
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port)));
}

async function rig(filters: Filter[]): Promise<Rig> {
  let accepted!: (s: net.Socket) => void;
  const upstreamSide = new Promise<net.Socket>((r) => (accepted = r));
  const upstreamPort = await listen(net.createServer((s) => accepted(s)));
  const proxyPort = await listen(
    net.createServer(
      (socket) =>
        new ProxyConnection(socket, {
          log,
          maxFrameBytes: 1 << 20,
          upstream: async () => [{ host: '127.0.0.1', port: upstreamPort }],
          chain: new FilterChain(filters),
          meter: new ProxyMeter(),
        }),
    ),
  );
  const client = net.connect(proxyPort, '127.0.0.1');
  closers.push(() => client.destroy());
  const fromProxy = new Frames(client);
  const upstream = await upstreamSide;
  closers.push(() => upstream.destroy());
  return { client, fromProxy, atUpstream: new Frames(upstream), answer: (frame) => upstream.write(frame) };
}

const request = <K extends ApiKeyNumber>(apiKey: K, apiVersion: number, correlationId: number, body: BodyInit<RequestBodies[K]>) =>
  encodeRequestFrame({ apiKey, apiVersion, correlationId, clientId: 'c' }, body as object);

const metadataAnswer = (correlationId: number, clusterId: string) =>
  encodeResponseFrame(ApiKey.Metadata, 12, correlationId, { brokers: [], topics: [], clusterId });

test('an unhooked request and its response cross as the very same bytes', async () => {
  const r = await rig([]);
  const frame = request(ApiKey.Metadata, 12, 1, { topics: [] });
  r.client.write(frame);
  const [up] = await r.atUpstream.next(1);
  assert.deepEqual(up, frame);
  const answer = metadataAnswer(1, 'k');
  r.answer(answer);
  const [back] = await r.fromProxy.next(1);
  assert.deepEqual(back, answer);
});

test('a slow filter holds the requests behind it; everything reaches the upstream and the client in order', async () => {
  const slow: Filter = {
    name: 'slow',
    apis: {
      [ApiKey.Metadata]: {
        onRequest: async (req, ctx) => {
          await new Promise((res) => setTimeout(res, 100));
          return ctx.forward({ body: { ...req.body, allowAutoTopicCreation: true } });
        },
      },
    },
  };
  const r = await rig([slow]);
  const first = request(ApiKey.Metadata, 12, 1, { topics: [], allowAutoTopicCreation: false });
  const second = request(ApiKey.DescribeCluster, 0, 2, {});
  r.client.write(Buffer.concat([first, second]));
  const ups = await r.atUpstream.next(2);
  assert.deepEqual(
    ups.map((f) => f.readInt32BE(8)),
    [1, 2],
    'the unhooked request waited behind the slow one',
  );
  assert.notDeepEqual(ups[0], first, 'the filter changed the first request');
  assert.deepEqual(ups[1], second);
  r.answer(Buffer.concat([metadataAnswer(1, 'a'), encodeResponseFrame(ApiKey.DescribeCluster, 0, 2, { clusterId: 'b', brokers: [] })]));
  const back = await r.fromProxy.next(2);
  assert.deepEqual(
    back.map((f) => f.readInt32BE(4)),
    [1, 2],
  );
});

test('an answer a filter gives goes back in its turn, and the upstream never sees the request', async () => {
  const answering: Filter = {
    name: 'answering',
    apis: { [ApiKey.DescribeCluster]: { onRequest: (_req, ctx) => ctx.respond({ clusterId: 'local', brokers: [] }) } },
  };
  const r = await rig([answering]);
  r.client.write(
    Buffer.concat([
      request(ApiKey.Metadata, 12, 1, { topics: [] }),
      request(ApiKey.DescribeCluster, 0, 2, {}),
      request(ApiKey.Metadata, 12, 3, { topics: [] }),
    ]),
  );
  const ups = await r.atUpstream.next(2);
  assert.deepEqual(
    ups.map((f) => f.readInt32BE(8)),
    [1, 3],
  );
  r.answer(metadataAnswer(1, 'x'));
  r.answer(metadataAnswer(3, 'y'));
  const back = await r.fromProxy.next(3);
  assert.deepEqual(
    back.map((f) => f.readInt32BE(4)),
    [1, 2, 3],
    'the local answer waited for the upstream answer before it',
  );
  assert.match(back[1]!.toString('latin1'), /local/);
});

test('an acks=0 Produce gets no slot: the next response is the next answer', async () => {
  const r = await rig([]);
  const produce = request(ApiKey.Produce, 9, 1, { transactionalId: null, acks: 0, timeoutMs: 1000, topicData: [] });
  r.client.write(Buffer.concat([produce, request(ApiKey.Metadata, 12, 2, { topics: [] })]));
  await r.atUpstream.next(2);
  r.answer(metadataAnswer(2, 'k'));
  const [back] = await r.fromProxy.next(1);
  assert.equal(back!.readInt32BE(4), 2);
});

test('a filter that closes ends the client connection; Fetch v16+ streamed through is asked as v15', async () => {
  const closing: Filter = { name: 'closing', apis: { [ApiKey.SaslHandshake]: { onRequest: (_r, ctx) => ctx.close('refused') } } };
  const r = await rig([closing, fetchVersionFilter]);
  const fetch = request(ApiKey.Fetch, 17, 1, { maxWaitMs: 1, minBytes: 1, maxBytes: 1, topics: [], forgottenTopicsData: [], rackId: '' });
  r.client.write(fetch);
  const [up] = await r.atUpstream.next(1);
  assert.equal(up!.readInt16BE(6), 15);
  assert.deepEqual(up!.subarray(8), fetch.subarray(8), 'only the version changed');
  r.client.write(request(ApiKey.SaslHandshake, 1, 2, { mechanism: 'PLAIN' }));
  await r.fromProxy.next(1);
  assert.equal(r.fromProxy.closed, true);
  assert.equal(r.atUpstream.got.length, 1, 'the refused request went nowhere');
});

test('records a filter puts in parts reach the client as they were, and go back only once written', async () => {
  // Buffers a pool would hand out again: overwritten the moment they are given back.
  // More than loopback's socket buffers take while the client reads nothing: the write waits.
  const pooled = [Buffer.alloc(12_000_000, 1), Buffer.alloc(4_000_000, 2)];
  const expected = Buffer.concat(pooled);
  let released = 0;
  const inParts: Filter = {
    name: 'in-parts',
    apis: {
      [ApiKey.Fetch]: {
        onResponse: (res, ctx) => {
          const p = res.body.responses[0]!.partitions[0]!;
          putRecords(
            p,
            ByteParts.of(pooled, () => {
              released++;
              for (const b of pooled) b.fill(0xff);
            }),
          );
          return ctx.forward(res.body);
        },
      },
    },
  };
  const r = await rig([inParts]);
  r.client.write(request(ApiKey.Fetch, 12, 1, { maxWaitMs: 1, minBytes: 1, maxBytes: 1 << 20, topics: [], forgottenTopicsData: [], rackId: '' }));
  await r.atUpstream.next(1);
  const partition = {
    partitionIndex: 0,
    errorCode: 0,
    highWatermark: 10n,
    lastStableOffset: 10n,
    logStartOffset: 0n,
    abortedTransactions: [],
    records: Buffer.alloc(0),
  };
  r.client.pause();
  r.answer(encodeResponseFrame(ApiKey.Fetch, 12, 1, { responses: [{ topic: 't', partitions: [partition] }] }));
  await new Promise((res) => setTimeout(res, 200));
  assert.equal(released, 0, 'nothing went back while the socket still held it');
  r.client.resume();
  const [back] = await r.fromProxy.next(1);
  const records = decodeResponse(ApiKey.Fetch, 12, back!, 9).responses[0]!.partitions[0]!.records;
  assert.deepEqual(records, expected, 'the client got the bytes as they were before they went back');
  assert.equal(released, 1);
});
