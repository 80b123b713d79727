import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import os from 'node:os';
import { createLogger } from '../../../src/common/log.js';
import { startManagementServer } from '../../../src/ops/management-server.js';
import { DEFAULT_ADMIN_LISTEN, DEFAULT_METRICS_LISTEN, resolveConfig } from '../../../src/config/settings.js';

function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.setTimeout(2_000, () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

test('unless configured, the management listeners (and the Kafka listener) bind to loopback only', async () => {
  const config = resolveConfig({ upstream: 'a:1' }, {}, {});
  assert.deepEqual(config.metricsListen, { host: '127.0.0.1', port: 9644 });
  assert.deepEqual(config.adminListen, { host: '127.0.0.1', port: 9645 });
  assert.equal(config.listen.host, '127.0.0.1');
  assert.deepEqual(DEFAULT_METRICS_LISTEN, config.metricsListen);
  assert.deepEqual(DEFAULT_ADMIN_LISTEN, config.adminListen, 'the admin verbs look for the proxy at the same default');

  // The default host as the proxy binds it (the port left to the system: 9644 may be taken here).
  const server = await startManagementServer({ ...config.metricsListen, port: 0 }, new Map(), createLogger());
  try {
    const { host, port } = server.address;
    assert.equal(host, '127.0.0.1');
    assert.equal(await accepts('127.0.0.1', port), true);
    // Another loopback address, and every address of the machine's other interfaces, are refused.
    const elsewhere = [
      '127.0.0.2',
      ...Object.values(os.networkInterfaces()).flatMap((list) => (list ?? []).filter((i) => !i.internal && i.family === 'IPv4').map((i) => i.address)),
    ];
    for (const address of elsewhere) assert.equal(await accepts(address, port), false, `reachable on ${address}`);
  } finally {
    await server.close();
  }
});
