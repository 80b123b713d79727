import assert from 'node:assert/strict';
import { SYSTEM_CLOCK } from '../../../../src/common/clock.js';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import type { Logger } from '../../../../src/common/log.js';
import { engineOptions } from '../../../../src/engine/api/engine-options.js';
import type { EngineStatus } from '../../../../src/engine/api/engine-reports.js';
import type { FromWorker, WorkerConfig } from '../../../../src/engine/api/engine-protocol.js';
import { StoreRegistry } from '../../../../src/engine/store/store-registry.js';
import { createEngine } from '../../../../src/engine/worker/engine-factory.js';
import { DEFAULT_POLICY } from '../../../support/default-policy.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-engine-factory-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));

const errors: string[] = [];
const quiet: Logger = {
  debug: () => {},
  info: () => {},
  warn: () => {},
  error: (msg) => void errors.push(msg),
  child: () => quiet,
  enabled: () => false,
};

/** A loopback port nothing listens on: every connect is refused at once. */
async function refusedPort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen({ host: '127.0.0.1', port: 0 }, resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

type Reply = Extract<FromWorker, { type: 'reply' }>;

async function replyTo(sent: readonly FromWorker[], id: number): Promise<Reply> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const reply = sent.find((m): m is Reply => m.type === 'reply' && m.id === id);
    if (reply) return reply;
    if (Date.now() > deadline) throw new Error(`no reply to request ${id}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('createEngine', () => {
  it('runs in-process: publishes what is on disk, answers requests through send, and closes cleanly', async (t) => {
    const dataDir = path.join(dir, 'data');
    // An index a previous run left: the engine must publish it before it resolves.
    const seed = new StoreRegistry(dataDir, quiet, () => {});
    seed.ensure('orders', 0);
    seed.closeAll();

    const NOW = 1_700_000_000_000;
    const config: WorkerConfig = {
      ...engineOptions({
        connection: { upstream: [{ host: '127.0.0.1', port: await refusedPort() }], requestTimeoutMs: 1_000 },
        dataDir,
        indexer: { maxWaitMs: 20, metadataIntervalMs: 50, maxBackoffMs: 50 },
      }),
      logLevel: 'error',
    };
    const sent: FromWorker[] = [];
    const engine = await createEngine(config, { log: quiet, send: (m) => void sent.push(m), clock: { now: () => NOW, sleep: SYSTEM_CLOCK.sleep } });
    // A failed assertion must not leave the engine's loops holding the test process open.
    t.after(() => engine.close());
    assert.ok(
      sent.some((m) => m.type === 'snapshot' && m.topic === 'orders' && m.partition === 0),
      'the index on disk was published before the engine was handed over',
    );

    engine.handle({ type: 'policies', policies: [['orders', DEFAULT_POLICY]] });
    engine.handle({ type: 'status', id: 1 });
    const status = await replyTo(sent, 1);
    assert.ok(status.ok, 'status answered');
    const { partitions, carrierGroup } = status.value as EngineStatus;
    assert.deepEqual(
      partitions.map((p) => [p.topic, p.partition, p.leader, p.usedMs]),
      [['orders', 0, -1, NOW]],
      'the partition found on disk, no leader known, used as of the engine clock',
    );
    assert.equal(carrierGroup, undefined, 'no election was configured: the engine does not carry');

    engine.handle({ type: 'rebuild', id: 2, topic: 'payments' });
    const refused = await replyTo(sent, 2);
    assert.ok(!refused.ok);
    assert.match(refused.error.message, /topic payments is not compacted/);

    engine.handle({ type: 'close', id: 3 });
    const closed = await replyTo(sent, 3);
    assert.ok(closed.ok, 'close answered');
    await engine.close();
    assert.deepEqual(errors, []);

    // Every index was checkpointed and closed: another registry opens it as it was left.
    const published: string[] = [];
    const reopened = new StoreRegistry(dataDir, quiet, (id) => published.push(`${id.topic}-${id.partition}`));
    reopened.openExisting();
    assert.deepEqual(published, ['orders-0']);
    reopened.closeAll();
  });

  it('joins the carrier group it is given, and leaves it on close while the store cannot be reached', async (t) => {
    const config: WorkerConfig = {
      ...engineOptions({
        connection: { upstream: [{ host: '127.0.0.1', port: await refusedPort() }], requestTimeoutMs: 1_000 },
        dataDir: path.join(dir, 'carrier'),
        election: { groupId: 'kcompact-test-carriers', sessionTimeoutMs: 6_000 },
      }),
      logLevel: 'error',
    };
    const sent: FromWorker[] = [];
    const engine = await createEngine(config, { log: quiet, send: (m) => void sent.push(m) });
    t.after(() => engine.close());
    engine.handle({ type: 'status', id: 1 });
    const status = await replyTo(sent, 1);
    assert.ok(status.ok);
    const { carrierGroup, cleaner } = status.value as EngineStatus;
    assert.equal(carrierGroup?.groupId, 'kcompact-test-carriers');
    assert.ok(cleaner.carry?.pacing, 'a replica in a carrier group carries, its passes paced');
    engine.handle({ type: 'close', id: 2 });
    assert.ok((await replyTo(sent, 2)).ok);
    assert.deepEqual(errors, []);
  });
});
