/**
 * Bad input from clients, against Apache Kafka 4.4 itself: the same bytes go straight to Kafka and
 * through kcompact (the whole product, compaction on), and kcompact must do what Kafka does, close
 * the connection or answer with the same error, and log a connection it closes itself.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ApiKey, apiSchema } from '../../src/protocol/messages.js';
import { encodeBatch } from '../../src/protocol/records/batch.js';
import { setLogLevel, setLogSink, type LogSink } from '../../src/common/log.js';
import { startCompactingProxy, type RunningCompactingProxy } from '../support/kcompact.js';
import { askOnce, RawConnection } from '../support/raw-client.js';
import { pollUntil, requirePeers, startKafka, type RunningKafka } from '../support/index.js';

const DIRECT = 'bad-input-direct';
const PROXIED = 'bad-input-proxied';
const skip = requirePeers();

let kafka: RunningKafka;
let proxy: RunningCompactingProxy;
let previousSink: LogSink | undefined;
const lines: Record<string, unknown>[] = [];

before(async () => {
  if (skip) return;
  kafka = await startKafka({ compaction: 'reference' });
  proxy = await startCompactingProxy(kafka.bootstrap);
  // Connections the upstream closes are logged at debug: capture everything.
  setLogLevel('debug');
  previousSink = setLogSink((line) => lines.push(JSON.parse(line)));
  const topic = (name: string) => ({ name, numPartitions: 1, replicationFactor: 1, assignments: [], configs: [{ name: 'cleanup.policy', value: 'compact' }] });
  const direct = await askOnce(kafka.bootstrap, ApiKey.CreateTopics, 7, { topics: [topic(DIRECT)], timeoutMs: 10_000 });
  assert.equal(direct.topics[0].errorCode, 0);
  const proxied = await askOnce(proxy.bootstrap, ApiKey.CreateTopics, 7, { topics: [topic(PROXIED)], timeoutMs: 10_000 });
  assert.equal(proxied.topics[0].errorCode, 0);
  // The guard is on once a keyless record is refused through kcompact as Kafka refuses it.
  const keyless = await batch([null]);
  for (const name of [DIRECT, PROXIED]) {
    const address = name === DIRECT ? kafka.bootstrap : proxy.bootstrap;
    await pollUntil(`${name} to refuse keyless records`, 30_000, async () => {
      const res = await askOnce(address, ApiKey.Produce, 9, produceBody(name, keyless));
      return res.responses[0].partitionResponses[0].errorCode === 87 || undefined;
    });
  }
});

after(async () => {
  if (previousSink) setLogSink(previousSink);
  await proxy?.stop();
  await kafka?.stop();
});

function batch(keys: (string | null)[], codec = 0): Promise<Buffer> {
  const now = BigInt(Date.now());
  return encodeBatch(
    {
      baseOffset: 0n,
      partitionLeaderEpoch: -1,
      attributes: 0,
      lastOffsetDelta: keys.length - 1,
      baseTimestamp: now,
      maxTimestamp: now,
      producerId: -1n,
      producerEpoch: -1,
      baseSequence: -1,
    },
    keys.map((k, i) => ({ timestampDelta: i, offsetDelta: i, key: k === null ? null : Buffer.from(k), value: Buffer.from(`value-${i}`) })),
    codec,
  );
}

function produceBody(topic: string, records: Buffer) {
  return { transactionalId: null, acks: -1, timeoutMs: 10_000, topicData: [{ name: topic, partitionData: [{ index: 0, records }] }] };
}

/** A request frame with any api key and version: header v1, then `body` as raw bytes. */
function rawRequest(apiKey: number, apiVersion: number, body = Buffer.alloc(16)): Buffer {
  const clientId = Buffer.from('bad-input');
  const frame = Buffer.alloc(4 + 10 + clientId.length + body.length);
  frame.writeInt32BE(frame.length - 4, 0);
  frame.writeInt16BE(apiKey, 4);
  frame.writeInt16BE(apiVersion, 6);
  frame.writeInt32BE(77, 8);
  frame.writeInt16BE(clientId.length, 12);
  clientId.copy(frame, 14);
  body.copy(frame, 14 + clientId.length);
  return frame;
}

/** What a peer does with the bytes: answers (the frame) or closes the connection. */
async function outcome(address: string, bytes: Buffer): Promise<'closed' | Buffer> {
  const conn = await RawConnection.open(address);
  try {
    conn.send(bytes);
    return await conn.nextFrame(15_000);
  } catch (err) {
    if (conn.isClosed) return 'closed';
    throw err;
  } finally {
    conn.close();
  }
}

function closedLines(since: number) {
  return lines.slice(since).filter((l) => l.msg === 'connection closed');
}

async function stillServes(): Promise<void> {
  const body = await askOnce(proxy.bootstrap, ApiKey.Metadata, 12, { topics: [] });
  assert.equal(body.brokers.length, 1, 'other connections are still served');
}

test('an unknown api key: Kafka closes the connection, and so does kcompact, logging it', { skip, timeout: 60_000 }, async () => {
  for (const apiKey of [999, 0x7fff, -1]) {
    assert.equal(await outcome(kafka.bootstrap, rawRequest(apiKey, 0)), 'closed', `Kafka closes on api key ${apiKey}`);
    const mark = lines.length;
    assert.equal(await outcome(proxy.bootstrap, rawRequest(apiKey, 0)), 'closed', `kcompact closes on api key ${apiKey}`);
    await pollUntil('the close to be logged', 10_000, async () => closedLines(mark).length > 0 || undefined);
  }
  await stillServes();
});

test('an unsupported version of a known api: both close the connection, except ApiVersions, which both answer', { skip, timeout: 60_000 }, async () => {
  // Decoded by kcompact (Metadata, Produce, Fetch, CreateTopics) and passed through (ListGroups);
  // past the newest version, and versions Kafka 4 removed.
  const cases: [number, number][] = [
    [ApiKey.Metadata, 999],
    [ApiKey.Produce, 999],
    [ApiKey.Produce, 1],
    [ApiKey.Fetch, 999],
    [ApiKey.Fetch, 1],
    [ApiKey.CreateTopics, 999],
    [ApiKey.ListGroups, 999],
  ];
  for (const [apiKey, version] of cases) {
    const label = `api ${apiKey} v${version}`;
    assert.equal(await outcome(kafka.bootstrap, rawRequest(apiKey, version)), 'closed', `Kafka closes on ${label}`);
    const mark = lines.length;
    assert.equal(await outcome(proxy.bootstrap, rawRequest(apiKey, version)), 'closed', `kcompact closes on ${label}`);
    await pollUntil(`the close on ${label} to be logged`, 10_000, async () => closedLines(mark).length > 0 || undefined);
  }
  // ApiVersions past the newest (header v2 layout: no tagged fields): a v0 answer with
  // UNSUPPORTED_VERSION naming the versions spoken.
  const max = apiSchema(ApiKey.ApiVersions)!.maxVersion;
  for (const address of [kafka.bootstrap, proxy.bootstrap]) {
    const answer = await outcome(address, rawRequest(ApiKey.ApiVersions, 999, Buffer.from([0])));
    assert.ok(Buffer.isBuffer(answer), `${address} answers a too-new ApiVersions`);
    assert.equal(answer.readInt32BE(4), 77, 'with the correlation id');
    assert.equal(answer.readInt16BE(8), 35, 'UNSUPPORTED_VERSION');
    const ranges = new Map<number, number>();
    for (let i = 0, n = answer.readInt32BE(10); i < n; i++) ranges.set(answer.readInt16BE(14 + i * 6), answer.readInt16BE(18 + i * 6));
    assert.ok((ranges.get(ApiKey.ApiVersions) ?? -1) >= Math.min(max, 3), `${address} names the ApiVersions versions it speaks`);
  }
  await stillServes();
});

test('an oversized or negative frame size: both close the connection; kcompact logs why', { skip, timeout: 60_000 }, async () => {
  // socket.request.max.bytes and kcompact's maxFrameBytes are both 100 MiB by default.
  for (const size of [100 * 1024 * 1024 + 1, 0x7fffffff, -16]) {
    const prefix = Buffer.alloc(4);
    prefix.writeInt32BE(size, 0);
    assert.equal(await outcome(kafka.bootstrap, prefix), 'closed', `Kafka closes on a frame of ${size} bytes`);
    const mark = lines.length;
    assert.equal(await outcome(proxy.bootstrap, prefix), 'closed', `kcompact closes on a frame of ${size} bytes`);
    await pollUntil('the close to be logged', 10_000, async () => {
      const line = closedLines(mark).find((l) => l.reason === 'bad request frame from client');
      return line && (line.err as { name?: string }).name === 'FrameTooLargeError' && line.level === 'warn' ? line : undefined;
    });
  }
  await stillServes();
});

test('a malformed request header for a decoded api: both close the connection; kcompact logs why', { skip, timeout: 60_000 }, async () => {
  // Produce v9 (flexible header v2): a client id length past the frame's end.
  const frame = rawRequest(ApiKey.Produce, 9, Buffer.alloc(0));
  frame.writeInt16BE(500, 12);
  assert.equal(await outcome(kafka.bootstrap, frame), 'closed', 'Kafka closes');
  const mark = lines.length;
  assert.equal(await outcome(proxy.bootstrap, frame), 'closed', 'kcompact closes');
  await pollUntil('the close to be logged', 10_000, async () => {
    const line = closedLines(mark).find((l) => l.reason === 'bad request frame from client');
    return line && (line.err as { name?: string }).name === 'ProtocolError' ? line : undefined;
  });
  await stillServes();
});

/** The partition answer with the topic name made neutral, so the two topics compare. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
function partitionAnswer(body: any): string {
  const p = body.responses[0].partitionResponses[0];
  return JSON.stringify({ errorCode: p.errorCode, errorMessage: p.errorMessage, recordErrors: p.recordErrors, top: body.errorMessage ?? null });
}

test('corrupt record batches in a Produce to a compacted topic get the answer Kafka gives', { skip, timeout: 120_000 }, async () => {
  for (const codec of [0, 1, 2, 3, 4]) {
    for (const keys of [
      ['a', 'b', 'c'],
      ['a', null, 'c'],
    ]) {
      const good = await batch(keys, codec);
      const badCrc = Buffer.from(good);
      badCrc[badCrc.length - 1]! ^= 0x01;
      const cut = good.subarray(0, good.length - 3);
      const longer = Buffer.from(good);
      longer.writeInt32BE(longer.readInt32BE(8) + 50, 8);
      const shorter = Buffer.from(good);
      shorter.writeInt32BE(shorter.readInt32BE(8) - 2, 8);
      const cases: [string, Buffer][] = [
        ['a wrong CRC', badCrc],
        ['a truncated batch', cut],
        ['a length past the data', longer],
        ['a length short of the data', shorter],
      ];
      for (const [what, records] of cases) {
        const label = `codec ${codec}, keys ${JSON.stringify(keys)}, ${what}`;
        const direct = await askOnce(kafka.bootstrap, ApiKey.Produce, 9, produceBody(DIRECT, records));
        const proxied = await askOnce(proxy.bootstrap, ApiKey.Produce, 9, produceBody(PROXIED, records));
        assert.notEqual(direct.responses[0].partitionResponses[0].errorCode, 0, `Kafka refuses ${label}`);
        assert.equal(partitionAnswer(proxied), partitionAnswer(direct), label);
        if (what === 'a wrong CRC') assert.equal(direct.responses[0].partitionResponses[0].errorCode, 2, 'CORRUPT_MESSAGE');
      }
    }
  }
  await stillServes();
});
