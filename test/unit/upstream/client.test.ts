import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { ApiKey, apiName, apiSchema, decodeRequest, decodeResponse, encodeResponse, encodeResponseFrame } from '../../../src/protocol/messages.js';
import { decodeRequestHeader } from '../../../src/protocol/headers.js';
import { ErrorCode } from '../../../src/protocol/errors.js';
import { FrameReader } from '../../../src/protocol/wire/frame-reader.js';
import { createLogger } from '../../../src/common/log.js';
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

test('UNSUPPORTED_VERSION again at the version offered: asked again at v0, and refused there too, the connection fails naming each answer', async () => {
  const offered = [{ apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion: 2 }];
  const refused = answerV0(ErrorCode.UNSUPPORTED_VERSION, []);
  const { asked, error } = await negotiationFailure([answerV0(ErrorCode.UNSUPPORTED_VERSION, offered), refused, refused]);
  assert.deepEqual(asked, [NEWEST, 2, 0]);
  assert.match(
    error.message,
    new RegExp(
      `^upstream 127\\.0\\.0\\.1:\\d+ gave no ApiVersions answer kcompact can use, asked v${NEWEST} \\(UNSUPPORTED_VERSION \\(35\\)\\), v2 \\(UNSUPPORTED_VERSION \\(35\\)\\), v0 \\(UNSUPPORTED_VERSION \\(35\\)\\): check that the upstream address is a Kafka-protocol listener$`,
    ),
  );
});

test('UNSUPPORTED_VERSION offering the version it refused: asked again one version lower, as librdkafka does, so it cannot loop', async () => {
  const offered = [{ apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion: NEWEST }];
  const { asked, metadataVersion } = await negotiate([answerV0(ErrorCode.UNSUPPORTED_VERSION, offered), answerAt(ErrorCode.NONE, KEYS)]);
  assert.deepEqual(asked, [NEWEST, NEWEST - 1]);
  assert.equal(metadataVersion, 9);
});

/** An answer at the version asked with `extra` bytes after its body. */
const withTrailing =
  (errorCode: number, apiKeys: typeof KEYS, extra: number): Answer =>
  (version, correlationId) =>
    withSize(Buffer.concat([encodeResponseFrame(ApiKey.ApiVersions, version, correlationId, { errorCode, apiKeys }).subarray(4), Buffer.alloc(extra)]));

function withSize(frame: Buffer): Buffer {
  const size = Buffer.alloc(4);
  size.writeInt32BE(frame.length);
  return Buffer.concat([size, frame]);
}

/**
 * librdkafka's mock cluster (rd_kafka_mock_handle_ApiVersion in 2.x), which speaks ApiVersions up
 * to v2: asked v3 or above, it answers UNSUPPORTED_VERSION with a one-byte count that holds the
 * count itself instead of count + 1, its ApiVersions entry without tags, a throttle time and no
 * tags. Read at the version asked that is an empty list with 5 bytes left after the body. Below
 * v3 it answers as Kafka does.
 */
const mockCluster: Answer = (version, correlationId) => {
  if (version <= 2) return answerAt(ErrorCode.NONE, [{ ...KEYS[0]!, maxVersion: 2 }, ...KEYS.slice(1)])(version, correlationId);
  const body = Buffer.alloc(2 + 1 + 6 + 4);
  body.writeInt16BE(ErrorCode.UNSUPPORTED_VERSION, 0);
  body.writeInt8(1, 2);
  body.writeInt16BE(ApiKey.ApiVersions, 3);
  body.writeInt16BE(0, 5);
  body.writeInt16BE(2, 7);
  const id = Buffer.alloc(4);
  id.writeInt32BE(correlationId);
  return withSize(Buffer.concat([id, body]));
};

test("librdkafka's mock cluster: its answer above v2 leaves bytes after the body and lists no ApiVersions entry, so v0 is asked, as Java and librdkafka do", async () => {
  const { asked, metadataVersion } = await negotiate(mockCluster);
  assert.deepEqual(asked, [NEWEST, 0]);
  assert.equal(metadataVersion, 9);
});

test('an answer with bytes left after its body: asked again at the ApiVersions version it lists', async () => {
  const listsV3 = [{ apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion: 3 }, ...KEYS.slice(1)];
  for (const errorCode of [ErrorCode.NONE, ErrorCode.UNSUPPORTED_VERSION]) {
    const { asked, metadataVersion } = await negotiate([withTrailing(errorCode, listsV3, 5), answerAt(ErrorCode.NONE, listsV3)]);
    assert.deepEqual(asked, [NEWEST, 3], `error code ${errorCode}`);
    assert.equal(metadataVersion, 9);
  }
});

test('UNSUPPORTED_VERSION at the version asked, with bytes after it, listing ApiVersions up to v2: asked again at v2', async () => {
  const offered = [{ apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion: 2 }];
  const { asked } = await negotiate([withTrailing(ErrorCode.UNSUPPORTED_VERSION, offered, 5), answerAt(ErrorCode.NONE, KEYS)]);
  assert.deepEqual(asked, [NEWEST, 2]);
});

test('an answer that decodes but whose own ApiVersions entry leaves out the version asked: asked again at the version listed', async () => {
  const listsV2 = [{ apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion: 2 }, ...KEYS.slice(1)];
  const { asked, metadataVersion } = await negotiate(answerAt(ErrorCode.NONE, listsV2));
  assert.deepEqual(asked, [NEWEST, 2]);
  assert.equal(metadataVersion, 9);
});

test('an answer nothing of which reads: asked again at v0', async () => {
  const garbage: Answer = (_version, correlationId) => {
    const frame = Buffer.from([0, 0, 0, 7, 0, 0, 0, 0, 0xff, 0xff, 0xff]);
    frame.writeInt32BE(correlationId, 4);
    return frame;
  };
  const { asked, metadataVersion } = await negotiate([garbage, answerAt(ErrorCode.NONE, KEYS)]);
  assert.deepEqual(asked, [NEWEST, 0]);
  assert.equal(metadataVersion, 9);
});

test('a store that answers v0 only, a v0 body whatever is asked, listing ApiVersions v0 alone: asked again at v0 and taken', async () => {
  const v0Only = [{ apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion: 0 }, ...KEYS.slice(1)];
  const { asked, metadataVersion } = await negotiate(answerV0(ErrorCode.NONE, v0Only));
  assert.deepEqual(asked, [NEWEST, 0]);
  assert.equal(metadataVersion, 9);
});

test('a store none of whose answers reads, listing every version: asked one version lower each time down to v0, then the connection fails naming each answer', async () => {
  const { asked, error } = await negotiationFailure(withTrailing(ErrorCode.NONE, KEYS, 5));
  assert.deepEqual(
    asked,
    Array.from({ length: NEWEST + 1 }, (_, i) => NEWEST - i),
  );
  assert.match(
    error.message,
    / gave no ApiVersions answer kcompact can use, asked v\d+ \(ApiVersions v\d+ response: 5 bytes left after the body\), .*v0 \(ApiVersions v0 response: 5 bytes left after the body\): check/,
  );
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
