/**
 * The carrier's fence (docs/carrying.md, "Who carries"), step by step, on kfake: the carrier of
 * a cleaned partition is told, at each step of a pass, that the group no longer counts it as the
 * carrier, and stops there. Whatever it wrote before changes nothing (no pass is whole, or the
 * whole one's range is not let go); the same pass with the mandate held runs whole and releases.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import kafkajs from 'kafkajs';
import { Carrier, type CarryMandate } from '../../src/engine/carry/carrier.js';
import { Cleaner } from '../../src/engine/cleaner/cleaner.js';
import { StoreRegistry } from '../../src/engine/store/store-registry.js';
import { Indexer } from '../../src/engine/indexer/indexer.js';
import type { TopicPolicy } from '../../src/engine/api/topic-policy.js';
import { parseHostPortList } from '../../src/common/host-port.js';
import { createLogger, setLogLevel } from '../../src/common/log.js';
import { ApiKey } from '../../src/protocol/messages.js';
import type { UpstreamClient } from '../../src/upstream/client.js';
import { UpstreamClusterClient } from '../../src/upstream/upstream-cluster-client.js';
import { DEFAULT_POLICY } from '../support/default-policy.js';
import { makeTempDir, requirePeers, startKfake } from '../support/index.js';

const TOPIC = 'fenced';
const KEYS = 2_000;
const SEGMENT_MS = 200;

/** The group's answers, as a test scripts them: `holding` is the replica's own view, `confirms` the coordinator's answers in turn (true once they run out). */
class ScriptedMandate implements CarryMandate {
  holding = true;
  confirms: boolean[] = [];
  asked = 0;
  holds(): boolean {
    return this.holding;
  }
  confirm(): Promise<boolean> {
    return Promise.resolve(this.confirms[this.asked++] ?? true);
  }
}

test('a carrier that loses its mandate at any step of a pass stops there, and nothing is let go', { timeout: 180_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const kfake = await startKfake();
  const dir = makeTempDir('kcompact-fencing-');
  setLogLevel('warn');
  const log = createLogger({ component: 'carrier-fencing-test' });
  const cluster = new UpstreamClusterClient({
    bootstrap: parseHostPortList(kfake.bootstrap),
    clientId: 'carrier-fencing-test',
    maxFrameBytes: 1 << 26,
    requestTimeoutMs: 10_000,
    log,
  });
  const registry = new StoreRegistry(dir.path, log, () => undefined);
  const indexer = new Indexer(cluster, registry, log, { maxWaitMs: 100, minBytes: 1 });
  const policy: TopicPolicy = { ...DEFAULT_POLICY, minCleanableDirtyRatio: 0.01, segmentMs: SEGMENT_MS };
  const policies = new Map([[TOPIC, policy]]);
  const cleaner = new Cleaner({ registry, policies: () => policies, deleteRecords: () => Promise.resolve(false), log, backoffMs: 3_600_000 });
  const mandate = new ScriptedMandate();
  // Produce requests the carrier sends; `afterProduce` runs once each is answered.
  let produced = 0;
  let afterProduce: (() => void) | undefined;
  const watched = (client: UpstreamClient): UpstreamClient =>
    new Proxy(client, {
      get(target, prop, receiver) {
        if (prop !== 'request') return Reflect.get(target, prop, receiver) as unknown;
        return async (...args: Parameters<UpstreamClient['request']>) => {
          const answer = await target.request(...args);
          if (args[0] === ApiKey.Produce) {
            produced++;
            afterProduce?.();
          }
          return answer;
        };
      },
    });
  const carrier = new Carrier({
    registry,
    leader: async (topic, partition) => watched(await indexer.leader(topic, partition)),
    log,
    mandate,
    readBackMs: 30_000,
  });
  const kafka = new kafkajs.Kafka({ clientId: 'carrier-fencing-test', brokers: [kfake.bootstrap], logLevel: kafkajs.logLevel.NOTHING });
  const admin = kafka.admin();
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  try {
    await Promise.all([admin.connect(), producer.connect()]);
    await admin.createTopics({ waitForLeaders: true, topics: [{ topic: TOPIC, numPartitions: 1 }] });
    indexer.setPolicies(new Map(policies));
    indexer.start();
    // A round of updates of every key, the virtual segment rolled after it, read and cleaned.
    const writeRound = async (round: number) => {
      const messages = Array.from({ length: KEYS }, (_, k) => ({ key: `key-${k}`, value: `${'v'.repeat(100)}-${k}-${round}` }));
      for (let i = 0; i < messages.length; i += 500) await producer.send({ topic: TOPIC, acks: -1, messages: messages.slice(i, i + 500) });
      await new Promise((resolve) => setTimeout(resolve, SEGMENT_MS * 2));
      await producer.send({ topic: TOPIC, acks: -1, messages: [{ key: 'roll', value: `roll-${round}` }] });
      await indexer.catchUp(TOPIC, 30_000);
      const report = await cleaner.compactNow(TOPIC);
      assert.deepEqual(report.failed, [], 'the partition was cleaned');
    };
    for (let round = 0; round < 3; round++) await writeRound(round);
    const store = registry.get(TOPIC, 0)!;
    const logStart = async () => Number((await admin.fetchTopicOffsetsByTimestamp(TOPIC, -2))[0]!.offset);
    const logEnd = async () => Number((await admin.fetchTopicOffsets(TOPIC))[0]!.high);
    assert.ok(carrier.due(store, policy), 'a pass is due');

    // 1. The coordinator says no before the start marker: nothing is written.
    const end0 = await logEnd();
    mandate.confirms = [false];
    mandate.asked = 0;
    assert.equal(await carrier.carry(store, policy), undefined);
    assert.equal(await logEnd(), end0, 'nothing written');
    assert.equal(carrier.stats.fencedTotal, 1);

    // 2. The assignment is lost once the first copy batch is in: the next batch is not written, nor the end marker.
    mandate.confirms = [];
    mandate.asked = 0;
    produced = 0;
    afterProduce = () => {
      if (produced === 2) mandate.holding = false;
    };
    assert.equal(await carrier.carry(store, policy), undefined);
    afterProduce = undefined;
    mandate.holding = true;
    assert.equal(produced, 2, 'the start marker and one copy batch');
    assert.equal(await logEnd(), end0 + 2);
    await indexer.catchUp(TOPIC, 30_000);
    assert.equal(store.carry.pass, -1, 'no pass is whole');
    assert.equal(await logStart(), 0, 'nothing let go');
    assert.equal(carrier.stats.fencedTotal, 2);

    // 3. The coordinator says no before the range is let go: the pass is whole, its range stays.
    mandate.confirms = [true, true, false];
    mandate.asked = 0;
    assert.equal(await carrier.carry(store, policy), undefined);
    assert.equal(mandate.asked, 3, 'asked before the start marker, the end marker and the release');
    assert.ok(store.carry.pass > end0, 'the pass was read back whole');
    assert.equal(await logStart(), 0, 'nothing let go');
    assert.equal(carrier.stats.fencedTotal, 3);
    assert.equal(carrier.stats.passesTotal, 0);

    // 4. With the mandate held, the next pass (due once a clean reaches past the last one) runs whole and the store lets the range go.
    await writeRound(3);
    assert.ok(carrier.due(store, policy), 'a pass is due again');
    mandate.confirms = [];
    mandate.asked = 0;
    const outcome = await carrier.carry(store, policy);
    assert.ok(outcome?.released, 'the range was let go');
    assert.equal(await logStart(), outcome.releaseEnd);
    assert.equal(carrier.stats.passesTotal, 1);
    assert.equal(carrier.stats.failuresTotal, 0, 'a fenced pass is no failure');
  } finally {
    await Promise.all([admin.disconnect(), producer.disconnect()]).catch(() => undefined);
    await indexer.close();
    cluster.close();
    registry.closeAll();
    await kfake.stop();
    dir.remove();
  }
});
