/**
 * How the proxy fails when the upstream misbehaves, with a hand-written broker for faults a real
 * one cannot produce on cue: the client's connection is closed (so it reconnects), the process and
 * every other connection live on.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ApiKey } from '../../src/protocol/messages.js';
import { startProxy } from '../support/kcompact.js';
import { RawConnection } from '../support/raw-client.js';
import { startFakeBroker, type Misbehaviour } from '../support/fake-broker.js';
import { freePort, pollUntil } from '../support/index.js';

async function metadataThrough(address: string): Promise<number> {
  const conn = await RawConnection.open(address);
  try {
    conn.request(ApiKey.Metadata, 12, { topics: [] }, 1);
    return (await conn.response(ApiKey.Metadata, 12)).body.brokers.length;
  } finally {
    conn.close();
  }
}

for (const how of ['close', 'garbage-body', 'wrong-correlation-id', 'huge-frame'] as Misbehaviour[]) {
  test(`upstream fault "${how}" closes the client connection and nothing else`, async () => {
    const broker = await startFakeBroker();
    const proxy = await startProxy(broker.address, { maxFrameBytes: 1 << 20 });
    try {
      const bystander = await RawConnection.open(proxy.bootstrap);
      bystander.request(ApiKey.ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' }, 5);
      await bystander.response(ApiKey.ApiVersions, 3);

      const victim = await RawConnection.open(proxy.bootstrap);
      broker.misbehave(ApiKey.Metadata, how);
      victim.request(ApiKey.Metadata, 12, { topics: [] }, 9);
      assert.ok(await victim.closesWithin(5000), 'the client connection is closed');
      await assert.rejects(victim.nextFrame(100), 'and no response was forwarded');

      assert.equal(bystander.isClosed, false, 'other connections stay open');
      bystander.request(ApiKey.Metadata, 12, { topics: [] }, 6);
      assert.equal((await bystander.response(ApiKey.Metadata, 12)).correlationId, 6);
      assert.equal(await metadataThrough(proxy.bootstrap), 1, 'new connections are served');
      bystander.close();
    } finally {
      await proxy.stop();
      await broker.close();
    }
  });
}

test('a client disconnect closes its upstream connection', async () => {
  const broker = await startFakeBroker();
  const proxy = await startProxy(broker.address);
  try {
    // The proxy's own connection (broker discovery's) stays open; the client's comes and goes.
    const own = broker.connections();
    const conn = await RawConnection.open(proxy.bootstrap);
    conn.request(ApiKey.ApiVersions, 3, { clientSoftwareName: 't', clientSoftwareVersion: '1' }, 1);
    await conn.response(ApiKey.ApiVersions, 3);
    assert.equal(broker.connections(), own + 1);
    conn.close();
    await pollUntil('upstream connection closed', 5000, async () => (broker.connections() === own ? true : undefined));
    assert.equal(proxy.server.connectionCount, 0);
  } finally {
    await proxy.stop();
    await broker.close();
  }
});

test('an upstream that comes up after the proxy is discovered and served', async () => {
  const port = await freePort();
  const proxy = await startProxy(`127.0.0.1:${port}`);
  let broker: Awaited<ReturnType<typeof startFakeBroker>> | undefined;
  try {
    const early = await RawConnection.open(proxy.bootstrap);
    assert.ok(await early.closesWithin(5000), 'with no upstream the client is closed, so it retries');
    broker = await startFakeBroker(port);
    await pollUntil('broker listener opened', 10_000, async () => (proxy.server.brokers.upstreamOf(0) ? true : undefined));
    assert.equal(await metadataThrough(proxy.bootstrap), 1);
    assert.equal(await metadataThrough(`127.0.0.1:${proxy.brokerPortBase}`), 1, 'the broker port reaches node 0');
  } finally {
    await proxy.stop();
    await broker?.close();
  }
});
