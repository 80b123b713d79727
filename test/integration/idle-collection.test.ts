/**
 * The `kcompact proxy` process, started with the node flags it ships with, has the idle
 * collection (ops/idle-collection.ts) on in both threads, and once a burst of compacted reads is
 * over, the quiet main thread, holding more Buffers than the collection's growth (the view
 * cache's alone are), is collected and left with little more than the view cache. Whether the
 * collection itself frees much depends on what V8 collected on its own during the burst, and a
 * little may be allocated in the second before the collection's result is read (CI has seen more
 * after than before): the scale benchmark shows what it gives back (bench/scale.ts).
 * kfake upstream.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kafkajsConsume, kafkajsProduce, pollUntil, requirePeers, startKfake } from '../support/index.js';
import { startCliProxy, type LogLine } from '../support/kcompact-cli.js';
import { IDLE_BUSY_SHARE } from '../../src/common/idle-collection.js';
import { DEFAULT_VIEW_CACHE_BYTES } from '../../src/compaction/fetch-view/view-cache.js';

const skip = requirePeers();

const KEYS = 24_000;
const LIVE_SLACK_BYTES = 4 << 20;

test('after a burst of compacted reads, the quiet proxy is collected', { skip, timeout: 180_000 }, async (t) => {
  const kfake = await startKfake({ brokers: 1 });
  const cli = await startCliProxy({ upstream: kfake.bootstrap, args: ['--log-level', 'debug'] });
  try {
    // 72 MB over 24,000 keys, then a record past segment.ms so that a clean covers them: the
    // reads below go through the fetch view, whose cache (16 MiB by default) fills with what survives.
    const spec = { topic: 'burst', keys: KEYS, valueSize: 1_500, createPartitions: 1, topicConfigs: { 'cleanup.policy': 'compact', 'segment.ms': '100' } };
    assert.deepEqual((await kafkajsProduce(cli.bootstrap, { ...spec, count: 2 * KEYS })).errors, []);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.deepEqual((await kafkajsProduce(cli.bootstrap, { ...spec, count: 1, start: 2 * KEYS })).errors, []);
    const clean = await cli.http('/compact?topic=burst', 'POST');
    assert.equal(clean.status, 200, clean.body);
    // The second write of each key survives, and the roll record in the active segment.
    for (const group of ['first', 'second']) {
      const read = await kafkajsConsume(cli.bootstrap, { topic: 'burst', count: KEYS + 1, group, timeoutMs: 60_000 });
      assert.deepEqual(read.errors, []);
    }

    const logs = cli.logs();
    assert.ok(!logs.some((l) => l.msg.startsWith('idle collection off')), 'both threads have gc() with the shipped node flags');
    const collected = await pollUntil('an idle collection in the main thread', 60_000, async () =>
      cli.logs().find((l: LogLine) => l.msg === 'idle: collected garbage' && l.component === 'kcompact'),
    );
    t.diagnostic(`main thread collected: ${JSON.stringify(collected)}`);
    // What stays is what is live: the full view cache, and the odd socket or request buffer.
    assert.ok((collected.buffersAfter as number) <= DEFAULT_VIEW_CACHE_BYTES + LIVE_SLACK_BYTES, JSON.stringify(collected));
    assert.ok((collected.busyShare as number) <= IDLE_BUSY_SHARE, 'only a quiet thread is collected');
  } finally {
    await cli.stop();
    await kfake.stop();
  }
});
