/**
 * Every client family through kcompact gets exactly what it gets going direct: the same scenario
 * (produce, consumer groups, transactions, admin, Java tools) runs straight against the upstream
 * and through the proxy, on both upstreams (Kafka 4.4 without compaction, kfake with 3 brokers),
 * and the observations must be identical.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { clientScenario, type ScenarioUpstream } from '../support/scenarios.js';
import { startProxy } from '../support/kcompact.js';
import { requirePeers, startKafka, startKfake } from '../support/index.js';

async function directVersusProxy(t: TestContext, bootstrap: string, up: ScenarioUpstream): Promise<void> {
  const proxy = await startProxy(bootstrap);
  try {
    const direct = await clientScenario(bootstrap, up, 'direct-');
    const proxied = await clientScenario(proxy.bootstrap, up, 'proxied-');
    assert.deepEqual(proxied, direct);
    t.diagnostic(`compared ${Object.keys(direct).length} observation groups`);
  } finally {
    await proxy.stop();
  }
}

test('clients through kcompact in front of Kafka 4.4 see what they see direct', { timeout: 300_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const kafka = await startKafka({ compaction: 'off' });
  try {
    await directVersusProxy(t, kafka.bootstrap, { brokers: 1, javaCreatesTopics: true });
  } finally {
    await kafka.stop();
  }
});

test('clients through kcompact in front of kfake (3 brokers) see what they see direct', { timeout: 300_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const kfake = await startKfake({ brokers: 3 });
  try {
    await directVersusProxy(t, kfake.bootstrap, { brokers: 3, javaCreatesTopics: false });
  } finally {
    await kfake.stop();
  }
});
