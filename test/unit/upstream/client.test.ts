import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { ApiKey, apiName, apiSchema, decodeRequest, decodeResponse, encodeResponse, encodeResponseFrame } from '../../../src/protocol/messages.js';
import { decodeRequestHeader } from '../../../src/protocol/headers.js';
import { ErrorCode } from '../../../src/protocol/errors.js';
import { FrameReader } from '../../../src/proxy/frame-reader.js';
import { createLogger } from '../../../src/ops/log.js';
import { UpstreamClient, type UpstreamClientOptions } from '../../../src/upstream/client.js';
import { plainMessage } from '../../../src/upstream/sasl-client.js';
import { UpstreamConnector } from '../../../src/upstream/upstream-connector.js';

const NEWEST = apiSchema(ApiKey.ApiVersions)!.maxVersion;
const OPTIONS = { clientId: 'negotiation-test', maxFrameBytes: 1 << 20, requestTimeoutMs: 30_000 };

/** What the broker lists on success: Metadata up to v9, so that client.version() shows the list was read. */
const KEYS = [
  { apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion: NEWEST },
  { apiKey: ApiKey.Metadata, minVersion: apiSchema(ApiKey.Metadata)!.minVersion, maxVersion: 9 },
  { apiKey: ApiKey.SaslHandshake, minVersion: 0, maxVersion: 1 },
  { apiKey: ApiKey.SaslAuthenticate, minVersion: 0, maxVersion: 2 },
];

/**
 * A response frame, or what the broker does instead: 'reset' ends the connection with a TCP reset,
 * 'close' closes it, 'silent' leaves the request unanswered.
 */
type Answer = (version: number, correlationId: number) => Buffer | 'reset' | 'close' | 'silent';

const answerAt =
  (errorCode: number, apiKeys: typeof KEYS): Answer =>
  (version, correlationId) =>
    encodeResponseFrame(ApiKey.ApiVersions, version, correlationId, { errorCode, apiKeys });

/** What a broker that does not know the version asked sends back, whatever that version was. */
const answerV0 =
  (errorCode: number, apiKeys: typeof KEYS): Answer =>
  (_version, correlationId) =>
    encodeResponseFrame(ApiKey.ApiVersions, 0, correlationId, { errorCode, apiKeys });

/** The broker's Metadata answer, at any version: one broker, no topics. */
const METADATA = { brokers: [{ nodeId: 7, host: 'broker-7.example', port: 9092, rack: null }], clusterId: 'scripted', controllerId: 7, topics: [] };
const USER = { username: 'kcompact', password: 'secret' };

interface ScriptedBroker {
  port: number;
  /** The ApiVersions version of each ApiVersions request, over all connections. */
  asked: number[];
  /** Per connection, in order: each request as "ApiVersions v5", with " (reset)", " (close)" or " (silent)" when not answered. */
  connections: string[][];
  close: () => Promise<void>;
}

/**
 * A broker that answers its ApiVersions requests with `answers` in turn, over all connections,
 * or with `answers` itself every time when it is one function; once out of answers it closes the
 * connection, so a client asking more fails. Metadata, SaslHandshake (PLAIN) and SaslAuthenticate
 * (USER) it answers as a broker would.
 */
async function scriptedBroker(answers: Answer[] | Answer): Promise<ScriptedBroker> {
  const asked: number[] = [];
  const connections: string[][] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    const requests: string[] = [];
    connections.push(requests);
    socket.on('error', () => {});
    const reader = new FrameReader(1 << 20);
    const respond = (request: Buffer): Buffer | 'reset' | 'close' | 'silent' => {
      const header = decodeRequestHeader(request);
      const { apiKey, apiVersion: version, correlationId } = header;
      const body = decodeRequest(apiKey, version, request, header.bodyOffset!);
      switch (apiKey) {
        case ApiKey.ApiVersions: {
          asked.push(version);
          const answer = typeof answers === 'function' ? answers : answers.shift();
          return answer ? answer(version, correlationId) : 'close';
        }
        case ApiKey.Metadata:
          return encodeResponseFrame(apiKey, version, correlationId, METADATA);
        case ApiKey.SaslHandshake:
          return encodeResponseFrame(apiKey, version, correlationId, { errorCode: ErrorCode.NONE, mechanisms: ['PLAIN'] });
        case ApiKey.SaslAuthenticate: {
          const ok = (body as { authBytes: Buffer }).authBytes.equals(plainMessage(USER.username, USER.password));
          return encodeResponseFrame(apiKey, version, correlationId, {
            errorCode: ok ? ErrorCode.NONE : ErrorCode.SASL_AUTHENTICATION_FAILED,
            errorMessage: ok ? null : 'bad credentials',
            authBytes: Buffer.alloc(0),
          });
        }
        default:
          return 'close';
      }
    };
    socket.on('data', (chunk: Buffer) =>
      reader.push(chunk, (frame) => {
        const request = frame.subarray(4);
        const answer = respond(request);
        requests.push(`${apiName(request.readInt16BE(0))} v${request.readInt16BE(2)}${typeof answer === 'string' ? ` (${answer})` : ''}`);
        if (answer === 'reset') socket.resetAndDestroy();
        else if (answer === 'close') socket.destroy();
        else if (answer !== 'silent') socket.write(answer);
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    asked,
    connections,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

async function negotiate(answers: Answer[] | Answer): Promise<{ asked: number[]; metadataVersion: number }> {
  const broker = await scriptedBroker(answers);
  try {
    const client = await UpstreamClient.connect({ host: '127.0.0.1', port: broker.port }, OPTIONS);
    const metadataVersion = client.version(ApiKey.Metadata);
    client.close();
    return { asked: broker.asked, metadataVersion };
  } finally {
    await broker.close();
  }
}

async function negotiationFailure(
  answers: Answer[] | Answer,
  options: UpstreamClientOptions = OPTIONS,
): Promise<{ asked: number[]; connections: string[][]; error: Error }> {
  const broker = await scriptedBroker(answers);
  try {
    const error = await UpstreamClient.connect({ host: '127.0.0.1', port: broker.port }, options).then(
      (client) => {
        client.close();
        throw new Error('negotiation succeeded');
      },
      (err: Error) => err,
    );
    return { asked: broker.asked, connections: broker.connections, error };
  } finally {
    await broker.close();
  }
}

test('ApiVersions is asked at the newest version the codec has, and an answer at that version is taken', async () => {
  const { asked, metadataVersion } = await negotiate([answerAt(ErrorCode.NONE, KEYS)]);
  assert.deepEqual(asked, [NEWEST]);
  assert.equal(metadataVersion, 9);
});

test('UNSUPPORTED_VERSION with a v0 body offering ApiVersions up to v2: asked again at v2, which works', async () => {
  assert.ok(NEWEST > 2);
  const offered = [{ apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion: 2 }];
  const { asked, metadataVersion } = await negotiate([answerV0(ErrorCode.UNSUPPORTED_VERSION, offered), answerAt(ErrorCode.NONE, KEYS)]);
  assert.deepEqual(asked, [NEWEST, 2]);
  assert.equal(metadataVersion, 9);
});

test('UNSUPPORTED_VERSION offering no ApiVersions entry (a broker before KIP-511): asked again at v0', async () => {
  const withoutApiVersions = [[], [KEYS[1]!]];
  for (const apiKeys of withoutApiVersions) {
    const { asked, metadataVersion } = await negotiate([answerV0(ErrorCode.UNSUPPORTED_VERSION, apiKeys), answerAt(ErrorCode.NONE, KEYS)]);
    assert.deepEqual(asked, [NEWEST, 0], `offering ${JSON.stringify(apiKeys)}`);
    assert.equal(metadataVersion, 9);
  }
});

test('an answer that does not parse at the version asked but parses as v0 is read as v0', async () => {
  const v0Body = encodeResponse(ApiKey.ApiVersions, 0, { errorCode: ErrorCode.NONE, apiKeys: KEYS });
  assert.throws(() => decodeResponse(ApiKey.ApiVersions, NEWEST, v0Body), `a v0 body must not parse as v${NEWEST}`);
  const { asked, metadataVersion } = await negotiate([answerV0(ErrorCode.NONE, KEYS)]);
  assert.deepEqual(asked, [NEWEST]);
  assert.equal(metadataVersion, 9);
});

test('another error fails the connection with the upstream address and the error name, without a retry', async () => {
  const { asked, error } = await negotiationFailure([answerAt(ErrorCode.INVALID_REQUEST, [])]);
  assert.deepEqual(asked, [NEWEST]);
  assert.match(error.message, new RegExp(`^upstream 127\\.0\\.0\\.1:\\d+ answered ApiVersions v${NEWEST} with INVALID_REQUEST \\(42\\)$`));
});

test('UNSUPPORTED_VERSION is retried once: refused again, the connection fails', async () => {
  const offered = [{ apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion: 2 }];
  const { asked, error } = await negotiationFailure([answerV0(ErrorCode.UNSUPPORTED_VERSION, offered), answerV0(ErrorCode.UNSUPPORTED_VERSION, [])]);
  assert.deepEqual(asked, [NEWEST, 2]);
  assert.match(error.message, /^upstream 127\.0\.0\.1:\d+ answered ApiVersions v2 with UNSUPPORTED_VERSION \(35\)$/);
});

test('UNSUPPORTED_VERSION offering the version it refused is not retried', async () => {
  const offered = [{ apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion: NEWEST }];
  const { asked, error } = await negotiationFailure([answerV0(ErrorCode.UNSUPPORTED_VERSION, offered)]);
  assert.deepEqual(asked, [NEWEST]);
  assert.match(error.message, new RegExp(`answered ApiVersions v${NEWEST} with UNSUPPORTED_VERSION \\(35\\) but offers ApiVersions up to v${NEWEST}$`));
});

/** Azure Event Hubs as franz-go reports it: asked ApiVersions v4 or above, it resets the connection. */
const resetsFromV4: Answer = (version, correlationId) => (version >= 4 ? 'reset' : answerAt(ErrorCode.NONE, KEYS)(version, correlationId));
const resetsAboveV0: Answer = (version, correlationId) => (version > 0 ? 'reset' : answerAt(ErrorCode.NONE, KEYS)(version, correlationId));
const reset: Answer = () => 'reset';
const close: Answer = () => 'close';

test('an upstream that resets the connection when asked ApiVersions v4 and above: asked again at v3 on a new connection', async () => {
  assert.ok(NEWEST >= 4);
  const broker = await scriptedBroker(resetsFromV4);
  try {
    const client = await UpstreamClient.connect({ host: '127.0.0.1', port: broker.port }, OPTIONS);
    assert.equal(client.version(ApiKey.Metadata), 9);
    const metadata = await client.request(ApiKey.Metadata, client.version(ApiKey.Metadata), { topics: [], allowAutoTopicCreation: false });
    assert.deepEqual(
      metadata.brokers.map((b: { nodeId: number; host: string; port: number }) => [b.nodeId, b.host, b.port]),
      [[7, 'broker-7.example', 9092]],
    );
    client.close();
    assert.deepEqual(broker.connections, [[`ApiVersions v${NEWEST} (reset)`], ['ApiVersions v3', 'Metadata v9']]);
  } finally {
    await broker.close();
  }
});

test('an upstream that resets the connection on every ApiVersions but v0: asked at the newest, v3, then v0', async () => {
  const { asked, metadataVersion } = await negotiate(resetsAboveV0);
  assert.deepEqual(asked, [NEWEST, 3, 0]);
  assert.equal(metadataVersion, 9);
});

test('an upstream that ends every connection unanswered: the failure names it and each version asked', async () => {
  const { connections, error } = await negotiationFailure([reset, reset, close]);
  assert.deepEqual(connections, [[`ApiVersions v${NEWEST} (reset)`], ['ApiVersions v3 (reset)'], ['ApiVersions v0 (close)']]);
  assert.match(
    error.message,
    new RegExp(
      `^upstream 127\\.0\\.0\\.1:\\d+ ended the connection instead of answering ApiVersions v${NEWEST} \\(ECONNRESET\\), v3 \\(ECONNRESET\\), v0 \\(closed\\)$`,
    ),
  );
});

test('SASL runs on the connection whose ApiVersions was answered, after a reset one', async () => {
  const broker = await scriptedBroker(resetsFromV4);
  try {
    const connector = new UpstreamConnector({ sasl: { mechanism: 'PLAIN', ...USER } }, createLogger());
    const client = await UpstreamClient.connect({ host: '127.0.0.1', port: broker.port }, { ...OPTIONS, connector });
    await client.request(ApiKey.Metadata, client.version(ApiKey.Metadata), { topics: [], allowAutoTopicCreation: false });
    client.close();
    assert.deepEqual(broker.connections, [[`ApiVersions v${NEWEST} (reset)`], ['ApiVersions v3', 'SaslHandshake v1', 'SaslAuthenticate v2', 'Metadata v9']]);
  } finally {
    await broker.close();
  }
});

test('an end of the connection after an ApiVersions answer is not retried on a new connection', async () => {
  const offered = [{ apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion: 2 }];
  const { connections, error } = await negotiationFailure([answerV0(ErrorCode.UNSUPPORTED_VERSION, offered), reset]);
  assert.deepEqual(connections, [[`ApiVersions v${NEWEST}`, 'ApiVersions v2 (reset)']]);
  assert.doesNotMatch(error.message, /instead of answering/);
});

test('an ApiVersions request left unanswered times out without a new connection', async () => {
  const { connections, error } = await negotiationFailure(() => 'silent', { ...OPTIONS, requestTimeoutMs: 50 });
  assert.deepEqual(connections, [[`ApiVersions v${NEWEST} (silent)`]]);
  assert.match(error.message, /did not answer ApiVersions within 50 ms$/);
});
