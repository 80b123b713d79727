/**
 * The carrier group on real coordinators (kfake, Kafka 4.4): replicas join, the leader gives
 * every partition one carrier, a replica that leaves hands its partitions to the others.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CarriedPartition } from '../../src/engine/election/carrier-assignment.js';
import { CarrierGroup } from '../../src/engine/election/carrier-group.js';
import { parseHostPortList } from '../../src/common/host-port.js';
import { createLogger } from '../../src/common/log.js';
import { UpstreamClusterClient } from '../../src/upstream/upstream-cluster-client.js';
import { pollUntil, requirePeers, startKafka, startKfake } from '../support/index.js';

const PARTITIONS: CarriedPartition[] = Array.from({ length: 7 }, (_, p) => ({ topic: 't', partition: p }));

interface Replica {
  group: CarrierGroup;
  client: UpstreamClusterClient;
  carried: CarriedPartition[] | null;
}

function replica(bootstrap: string, groupId: string): Replica {
  const client = new UpstreamClusterClient({
    bootstrap: parseHostPortList(bootstrap),
    clientId: 'carrier-group-test',
    maxFrameBytes: 1 << 24,
    requestTimeoutMs: 10_000,
  });
  const r: Replica = { client, carried: null, group: undefined as unknown as CarrierGroup };
  r.group = new CarrierGroup({
    upstream: client,
    groupId,
    sessionTimeoutMs: 6_000,
    rebalanceTimeoutMs: 3_000,
    partitions: () => PARTITIONS,
    onAssigned: (_generation, carried) => (r.carried = carried),
    onRevoked: () => (r.carried = null),
    log: createLogger({ component: 'carrier-group-test' }),
    backoffMs: 200,
  });
  r.group.start();
  return r;
}

const key = (p: CarriedPartition) => `${p.topic}-${p.partition}`;

/** Every partition carried by exactly one of `replicas`, counts within one, all in one generation. */
async function settled(replicas: Replica[]): Promise<void> {
  await pollUntil('one carrier per partition', 60_000, async () => {
    if (replicas.some((r) => r.carried === null)) return undefined;
    const generations = new Set(replicas.map((r) => r.group.status().generation));
    if (generations.size !== 1) return undefined;
    const all = replicas.flatMap((r) => r.carried!.map(key)).sort();
    if (all.join() !== PARTITIONS.map(key).sort().join()) return undefined;
    const sizes = replicas.map((r) => r.carried!.length);
    return Math.max(...sizes) - Math.min(...sizes) <= 1 ? true : undefined;
  });
}

async function suite(bootstrap: string): Promise<void> {
  const groupId = `carriers-${Date.now()}`;
  const replicas = [replica(bootstrap, groupId), replica(bootstrap, groupId), replica(bootstrap, groupId)];
  try {
    await settled(replicas);
    assert.equal(replicas.filter((r) => r.group.status().leader).length, 1, 'one leader');
    assert.ok(await replicas[0]!.group.confirm(), 'a member of the current generation is confirmed');
    const before = new Map(replicas.slice(0, 2).map((r) => [r, r.carried!.map(key)]));
    await replicas[2]!.group.stop();
    await settled(replicas.slice(0, 2));
    for (const [r, had] of before) for (const k of had) assert.ok(r.carried!.map(key).includes(k), 'the remaining carriers keep what they had');

    // A newcomer makes the group rebalance: until they joined again, the others are no longer confirmed.
    const generation = replicas[0]!.group.status().generation;
    const newcomer = replica(bootstrap, groupId);
    replicas.push(newcomer);
    await pollUntil('a rebalance', 30_000, async () => ((await replicas[0]!.group.confirm()) ? undefined : true));
    await settled([replicas[0]!, replicas[1]!, newcomer]);
    assert.ok(replicas[0]!.group.status().generation > generation);
    assert.ok(await replicas[0]!.group.confirm());
  } finally {
    for (const r of replicas) await r.group.stop();
    for (const r of replicas) r.client.close();
  }
}

test('carrier group on kfake', { timeout: 120_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const kfake = await startKfake();
  try {
    await suite(kfake.bootstrap);
  } finally {
    await kfake.stop();
  }
});

test('carrier group on Kafka 4.4', { timeout: 180_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const kafka = await startKafka({ compaction: 'off' });
  try {
    await suite(kafka.bootstrap);
  } finally {
    await kafka.stop();
  }
});
