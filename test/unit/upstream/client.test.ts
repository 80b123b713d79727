import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { ApiKey, apiSchema, decodeResponse, encodeResponse, encodeResponseFrame } from '../../../src/protocol/messages.js';
import { ErrorCode } from '../../../src/protocol/errors.js';
import { FrameReader } from '../../../src/proxy/frame-reader.js';
import { UpstreamClient } from '../../../src/upstream/client.js';

const NEWEST = apiSchema(ApiKey.ApiVersions)!.maxVersion;
const OPTIONS = { clientId: 'negotiation-test', maxFrameBytes: 1 << 20, requestTimeoutMs: 30_000 };

/** What the broker lists on success: Metadata up to v9, so that client.version() shows the list was read. */
const KEYS = [
  { apiKey: ApiKey.ApiVersions, minVersion: 0, maxVersion: NEWEST },
  { apiKey: ApiKey.Metadata, minVersion: apiSchema(ApiKey.Metadata)!.minVersion, maxVersion: 9 },
];

type Answer = (version: number, correlationId: number) => Buffer;

const answerAt =
  (errorCode: number, apiKeys: typeof KEYS): Answer =>
  (version, correlationId) =>
    encodeResponseFrame(ApiKey.ApiVersions, version, correlationId, { errorCode, apiKeys });

/** What a broker that does not know the version asked sends back, whatever that version was. */
const answerV0 =
  (errorCode: number, apiKeys: typeof KEYS): Answer =>
  (_version, correlationId) =>
    encodeResponseFrame(ApiKey.ApiVersions, 0, correlationId, { errorCode, apiKeys });

/**
 * A broker that answers its requests with `answers` in turn and records the ApiVersions version
 * of each; once out of answers it closes the connection, so a client asking more fails.
 */
async function scriptedBroker(answers: Answer[]): Promise<{ port: number; asked: number[]; close: () => Promise<void> }> {
  const asked: number[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    const reader = new FrameReader(1 << 20);
    socket.on('data', (chunk: Buffer) =>
      reader.push(chunk, (frame) => {
        assert.equal(frame.readInt16BE(4), ApiKey.ApiVersions);
        const version = frame.readInt16BE(6);
        asked.push(version);
        const answer = answers.shift();
        if (answer) socket.write(answer(version, frame.readInt32BE(8)));
        else socket.destroy();
      }),
    );
  });
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    asked,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

async function negotiate(answers: Answer[]): Promise<{ asked: number[]; metadataVersion: number }> {
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

async function negotiationFailure(answers: Answer[]): Promise<{ asked: number[]; error: Error }> {
  const broker = await scriptedBroker(answers);
  try {
    const error = await UpstreamClient.connect({ host: '127.0.0.1', port: broker.port }, OPTIONS).then(
      (client) => {
        client.close();
        throw new Error('negotiation succeeded');
      },
      (err: Error) => err,
    );
    return { asked: broker.asked, error };
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
