import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { UpstreamReachability } from '../../../src/ops/health/upstream-reachability.js';

async function listening(): Promise<net.Server> {
  const server = net.createServer((s) => s.destroy());
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  return server;
}

/** A port nothing listens on: one that was just closed. */
async function closedPort(): Promise<number> {
  const server = await listening();
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

test('without recent traffic, a TCP connect to a bootstrap address decides', async () => {
  const up = await listening();
  const down = await closedPort();
  try {
    const upPort = (up.address() as net.AddressInfo).port;
    const reachable = new UpstreamReachability({
      upstream: [
        { host: '127.0.0.1', port: down },
        { host: '127.0.0.1', port: upPort },
      ],
      lastConnectMs: () => 0,
    });
    const ok = await reachable.check();
    assert.equal(ok.ok, true);
    assert.match(ok.detail, new RegExp(`127\\.0\\.0\\.1:${upPort} accepted`));

    const unreachable = new UpstreamReachability({ upstream: [{ host: '127.0.0.1', port: down }], lastConnectMs: () => 0 });
    const failed = await unreachable.check();
    assert.equal(failed.ok, false);
    assert.match(failed.detail, new RegExp(`127\\.0\\.0\\.1:${down}: .*ECONNREFUSED`));
  } finally {
    up.close();
  }
});

test('a connection made by client traffic lately counts without probing; an old one does not', async (t) => {
  const down = await closedPort();
  // The wall clock stands still: how long ago is what the test says.
  const now = 1_700_000_000_000;
  t.mock.timers.enable({ apis: ['Date'], now });
  let last = now - 3_000;
  const r = new UpstreamReachability({ upstream: [{ host: '127.0.0.1', port: down }], lastConnectMs: () => last, recentMs: 10_000 });
  const recent = await r.check();
  assert.equal(recent.ok, true);
  assert.equal(recent.detail, 'connected 3000 ms ago');
  last = now - 10_000;
  assert.equal((await r.check()).ok, false, 'as old as recentMs: the probe runs and fails');
});
