/**
 * The test bed's own check: Kafka 4.4 in 'reference' mode really compacts, so later differential
 * tests compare against a working cleaner. (Every client against each upstream, direct and
 * through the proxy, is clients-through-proxy.test.ts.)
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { franzConsume, franzProduce, pollUntil, requirePeers, startKafka } from '../support/index.js';

test("Kafka 4.4 'reference' mode compacts once the dirty segment rolls", { timeout: 120_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const kafka = await startKafka({ compaction: 'reference' });
  try {
    const b = kafka.bootstrap;
    const topicConfigs = { 'cleanup.policy': 'compact', 'segment.ms': '300', 'min.cleanable.dirty.ratio': '0.01' };
    await franzProduce(b, { topic: 'table', count: 300, keys: 40, createPartitions: 1, topicConfigs });
    // The active segment is never cleaned and rolls only on an append past segment.ms.
    await new Promise((r) => setTimeout(r, 400));
    await franzProduce(b, { topic: 'table', count: 1, start: 300, keys: 40 });
    // Until the cleaner has run, the consume sees more than 41 records and throws.
    const compacted = await pollUntil('compaction', 60_000, () => franzConsume(b, { topic: 'table', count: 41, timeoutMs: 5_000 }));
    // The latest offset of each of the 40 keys in the rolled segment, then the active segment's record.
    assert.deepEqual(
      compacted.partitions['0']!.offsets,
      Array.from({ length: 41 }, (_, i) => 260 + i),
    );
  } finally {
    await kafka.stop();
  }
});
