/**
 * Closing the connections while one is being opened to a broker that accepts and never answers
 * (a hung broker): whoever waits for it is let go at once, not after the ApiVersions timeout.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { BrokerConnections } from '../../../src/upstream/broker-connections.js';

test('close() ends the waits for a connection being opened', { timeout: 10_000 }, async () => {
  const accepted = new Set<net.Socket>();
  const server = net.createServer((socket) => accepted.add(socket.on('error', () => {})));
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  const address = { host: '127.0.0.1', port: (server.address() as net.AddressInfo).port };
  const connections = new BrokerConnections({ clientId: 'test', maxFrameBytes: 1 << 20, requestTimeoutMs: 60_000 });
  try {
    const first = connections.get(address);
    const second = connections.get(address);
    const other = connections.get(address, 'admin');
    while (accepted.size < 2) await new Promise((resolve) => setTimeout(resolve, 10));
    const waits = [first, second, other];
    const ended = waits.map(() => false);
    for (const [i, w] of waits.entries()) void w.catch(() => undefined).finally(() => (ended[i] = true));
    connections.close();
    // close() lets each wait go itself: by the next turn of the event loop, with no timer run and
    // long before the 60 s timeouts, each has its answer, and the answer says close() gave it.
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(ended, [true, true, true], 'at once');
    for (const waiting of waits) await assert.rejects(waiting, /closed while connecting/);
    await assert.rejects(connections.get(address), /closed; no new connections/);
  } finally {
    for (const socket of accepted) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  }
});
