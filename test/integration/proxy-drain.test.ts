/**
 * Draining for shutdown, against a broker that answers when the test says so: a drained
 * connection gets the answers to the requests it had sent, reads nothing more and closes; the
 * listeners stop accepting at once; past the deadline the connection is closed and its
 * unanswered request counted as an error. The traffic figures are read from the exposition.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { ApiKey } from '../../src/protocol/messages.js';
import { ProxyServer } from '../../src/proxy/server.js';
import { ProxyMeter } from '../../src/proxy/proxy-meter.js';
import { createLogger } from '../../src/common/log.js';
import { startFakeBroker, type FakeBroker } from '../support/fake-broker.js';
import { holdNext } from '../support/held-request.js';
import { freePortRun } from '../support/kcompact.js';
import { parseExposition } from '../support/prometheus.js';
import { refused } from '../support/refused.js';
import { RawConnection } from '../support/raw-client.js';
import { pollUntil } from '../support/index.js';

const VERSION = 4;
const LIST_GROUPS_ANSWER = { throttleTimeMs: 0, errorCode: 0, groups: [] };

interface Bed {
  broker: FakeBroker;
  server: ProxyServer;
  registry: Registry;
  bootstrap: string;
  close(): Promise<void>;
}

async function bed(): Promise<Bed> {
  const broker = await startFakeBroker();
  const port = await freePortRun(2);
  const registry = new Registry();
  const server = new ProxyServer({
    listen: { host: '127.0.0.1', port },
    upstream: [{ host: '127.0.0.1', port: broker.port }],
    advertisedHost: '127.0.0.1',
    brokerPortBase: port + 1,
    maxFrameBytes: 1 << 20,
    requestTimeoutMs: 10_000,
    log: createLogger({ component: 'drain-test' }),
    meter: new ProxyMeter(registry),
  });
  await server.start();
  return {
    broker,
    server,
    registry,
    bootstrap: `127.0.0.1:${port}`,
    close: async () => {
      await server.stop();
      await broker.close();
    },
  };
}

test('a drained connection gets the answers it was waiting for, reads no new request, then closes', async () => {
  const b = await bed();
  const conn = await RawConnection.open(b.bootstrap);
  try {
    const hold = holdNext(b.broker, ApiKey.ListGroups);
    conn.request(ApiKey.ListGroups, VERSION, { statesFilter: [] }, 11);
    await pollUntil('the broker holds the request', 10_000, async () => (hold.held() ? true : undefined));

    let drained: number | undefined;
    const draining = b.server.drain(30_000).then((n) => (drained = n));
    assert.ok(await refused(b.bootstrap), 'the listener stops accepting as the drain starts');
    conn.request(ApiKey.ListGroups, VERSION, { statesFilter: [] }, 12);
    assert.equal(conn.isClosed, false, 'the connection waits for its answer');
    assert.equal(drained, undefined);

    hold.answer(LIST_GROUPS_ANSWER);
    const res = await conn.response(ApiKey.ListGroups, VERSION);
    assert.equal(res.correlationId, 11);
    assert.equal(await draining, 0, 'every connection drained');
    assert.ok(await conn.closesWithin(5_000), 'the connection closes once answered');
    assert.equal(conn.pendingFrames(), 0, 'the request sent during the drain was not read, so not answered');

    const exposition = parseExposition(await b.registry.metrics());
    assert.equal(exposition.value('kcompact_requests_total', { api: 'ListGroups' }), 1);
    assert.equal(exposition.value('kcompact_request_errors_total', { api: 'ListGroups' }), undefined);
    assert.equal(exposition.value('kcompact_request_duration_seconds_count', { api: 'ListGroups' }), 1);
    assert.equal(exposition.value('kcompact_connections'), 0);
    assert.equal(exposition.value('kcompact_connections_total'), 1);
  } finally {
    conn.close();
    await b.close();
  }
});

test('past the drain deadline the connection is closed and its unanswered request counted as an error', async () => {
  const b = await bed();
  const conn = await RawConnection.open(b.bootstrap);
  try {
    const hold = holdNext(b.broker, ApiKey.ListGroups);
    conn.request(ApiKey.ListGroups, VERSION, { statesFilter: [] }, 21);
    await pollUntil('the broker holds the request', 10_000, async () => (hold.held() ? true : undefined));
    const before = parseExposition(await b.registry.metrics());
    assert.equal(before.value('kcompact_connections'), 1);
    assert.ok(before.value('kcompact_bytes_received_total', { peer: 'client' })! > 0);
    assert.ok(before.value('kcompact_bytes_sent_total', { peer: 'upstream' })! > 0);

    assert.equal(await b.server.drain(200), 1, 'one connection still waits when the deadline passes');
    await b.server.stop();
    assert.ok(await conn.closesWithin(5_000));
    const after = parseExposition(await b.registry.metrics());
    assert.equal(after.value('kcompact_request_errors_total', { api: 'ListGroups' }), 1);
    assert.equal(after.value('kcompact_request_duration_seconds_count', { api: 'ListGroups' }) ?? 0, 0, 'a request without a response has no duration');
    assert.equal(after.value('kcompact_connections'), 0);
  } finally {
    conn.close();
    await b.close();
  }
});

test('an upstream that drops a connection counts as an upstream error and fails the requests in flight', async () => {
  const b = await bed();
  const conn = await RawConnection.open(b.bootstrap);
  try {
    b.broker.misbehave(ApiKey.ListGroups, 'close');
    conn.request(ApiKey.ListGroups, VERSION, { statesFilter: [] }, 31);
    assert.ok(await conn.closesWithin(5_000));
    const exposition = parseExposition(await b.registry.metrics());
    assert.equal(exposition.value('kcompact_upstream_errors_total', { kind: 'disconnect' }), 1);
    assert.equal(exposition.value('kcompact_upstream_errors_total', { kind: 'connect' }), 0);
    assert.equal(exposition.value('kcompact_request_errors_total', { api: 'ListGroups' }), 1);
  } finally {
    conn.close();
    await b.close();
  }
});
