/**
 * The client scenarios every upstream is exercised with: produce, consumer groups, transactions
 * and admin from each client family. Each run asserts what must hold in absolute terms and
 * returns its observations free of topic and group names, so a run through kcompact can be
 * compared with a direct run of the same scenario with deepEqual.
 */
import assert from 'node:assert/strict';
import kafkajs from 'kafkajs';
import { javaToolOk } from './java.js';
import { ckConsume, ckProduce, ckTxn, franzConsume, franzProduce, kcatConsume, kcatMetadata } from './runners.js';
import { kafkajsConsume, kafkajsProduce } from './kafkajs-client.js';
import { requirePeers } from './peers.js';
import { comparable, genRecord, type ConsumeSummary, type ProduceSpec } from './summary.js';

export interface ScenarioUpstream {
  brokers: number;
  /** kfake's CreateTopics v5+ answer breaks Java's admin client (null configs / source -1). */
  javaCreatesTopics: boolean;
}

const SPEC = { count: 300, keys: 40, valueSize: 64, tombstoneEvery: 9, createPartitions: 3 } satisfies Omit<ProduceSpec, 'topic'>;

function expectedPairs(): string[] {
  const pairs: string[] = [];
  for (let i = 0; i < SPEC.count; i++) {
    const { key, value } = genRecord(i, SPEC.keys, SPEC.valueSize, SPEC.tombstoneEvery);
    pairs.push(JSON.stringify([key?.toString() ?? null, value?.toString() ?? null]));
  }
  return pairs.sort();
}

function pairsOf(s: ConsumeSummary): string[] {
  return (s.records ?? []).map((r) => JSON.stringify([r.key, r.value])).sort();
}

export type Observations = Record<string, unknown>;

/** Runs every client family against `bootstrap`, naming its topics and groups with `prefix`. */
export async function clientScenario(bootstrap: string, up: ScenarioUpstream, prefix: string): Promise<Observations> {
  const b = bootstrap;
  const name = (s: string) => `${prefix}${s}`;
  const obs: Observations = {};

  // Produce: franz-go, librdkafka and kafkajs write the same records, each with another codec.
  const franz = await franzProduce(b, { ...SPEC, topic: name('by-franz'), compression: 'zstd' });
  const ck = await ckProduce(b, { ...SPEC, topic: name('by-ck'), compression: 'lz4' });
  const kjs = await kafkajsProduce(b, { ...SPEC, topic: name('by-kafkajs'), compression: 'snappy' });
  assert.equal(franz.count, SPEC.count);
  assert.equal(Object.keys(franz.partitions).length, SPEC.createPartitions);
  assert.deepEqual(ck.partitions, franz.partitions, 'librdkafka produced like franz-go');
  assert.deepEqual(kjs.partitions, franz.partitions, 'kafkajs produced like franz-go');
  obs.produced = franz.partitions;

  // Consume, with consumer groups: every reader sees the same records, offsets and digests.
  const reference = await franzConsume(b, { topic: name('by-franz'), count: SPEC.count, group: name('franz-readers'), records: true });
  assert.equal(reference.client.crcValidation, true, 'franz-go must validate CRCs');
  assert.deepEqual(pairsOf(reference), expectedPairs());
  obs.franzReadsFranz = comparable(reference);
  const reads: [string, () => Promise<ConsumeSummary>][] = [
    ['franz-go reads by-ck', () => franzConsume(b, { topic: name('by-ck'), count: SPEC.count, records: true })],
    ['franz-go reads by-kafkajs', () => franzConsume(b, { topic: name('by-kafkajs'), count: SPEC.count, records: true })],
    ['librdkafka reads by-franz', () => ckConsume(b, { topic: name('by-franz'), count: SPEC.count, group: name('ck-readers'), records: true })],
    ['kafkajs reads by-franz', () => kafkajsConsume(b, { topic: name('by-franz'), count: SPEC.count, group: name('kjs-readers'), records: true })],
  ];
  for (const [what, read] of reads) {
    const got = comparable(await read());
    assert.deepEqual(got, obs.franzReadsFranz, what);
    obs[what] = got;
  }

  // kcat when installed; under CI, where it must be, requirePeers throws without it.
  if (!requirePeers(['kcat'])) {
    const meta = await kcatMetadata(b);
    assert.equal(meta.brokers.length, up.brokers);
    obs.kcatPartitions = meta.topics.find((x) => x.topic === name('by-franz'))?.partitions.length;
    obs.kcatReads = comparable(await kcatConsume(b, { topic: name('by-franz'), count: SPEC.count }));
    const { records: _records, ...withoutRecords } = comparable(reference);
    assert.deepEqual(obs.kcatReads, withoutRecords, 'kcat reads like franz-go');
  }

  // librdkafka transactions: read_committed sees only the committed records.
  const txn = await ckTxn(b, { topic: name('txn'), transactions: 4, perTxn: 10, createPartitions: 2, records: true });
  assert.deepEqual(txn.transactions, { committed: 20, aborted: 20 });
  assert.equal(txn.count, 20);
  assert.ok(txn.records!.every((r) => !r.value!.startsWith('aborted-')));
  const franzCommitted = await franzConsume(b, { topic: name('txn'), count: 20, isolation: 'read_committed', records: true });
  assert.deepEqual(comparable(franzCommitted), comparable(txn));
  const all = await franzConsume(b, { topic: name('txn'), count: 40, records: true });
  assert.equal(all.records!.filter((r) => r.value!.startsWith('aborted-')).length, 20, 'aborted records are in the log');
  obs.txnCommitted = comparable(txn);
  obs.txnAll = comparable(all);

  obs.kafkajsAdmin = await kafkajsAdmin(b, name);
  obs.java = await javaTools(b, up, name);
  return obs;
}

/** kafkajs admin: topics, configs (AlterConfigs, the only kind kafkajs has) and group offsets. */
async function kafkajsAdmin(b: string, name: (s: string) => string): Promise<Observations> {
  const admin = new kafkajs.Kafka({ clientId: 'kcompact-admin', brokers: [b], logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  try {
    const topic = name('admin');
    assert.equal(
      await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: 2, configEntries: [{ name: 'retention.ms', value: '86400000' }] }] }),
      true,
    );
    const meta = await admin.fetchTopicMetadata({ topics: [topic] });
    const listed = (await admin.listTopics()).includes(topic);
    const describe = async () => {
      const res = await admin.describeConfigs({
        includeSynonyms: false,
        resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: topic, configNames: ['retention.ms'] }],
      });
      return res.resources[0]!.configEntries.map((e) => ({ name: e.configName, value: e.configValue }));
    };
    const before = await describe();
    await admin.alterConfigs({
      validateOnly: false,
      resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: topic, configEntries: [{ name: 'retention.ms', value: '3600000' }] }],
    });
    const afterAlter = await describe();
    const offsets = await admin.fetchOffsets({ groupId: name('kjs-readers'), topics: [name('by-franz')] });
    const groups = await admin.describeGroups([name('kjs-readers')]);
    await admin.deleteTopics({ topics: [topic] });
    return {
      partitions: meta.topics[0]!.partitions.map((p) => p.partitionId).sort(),
      listed,
      before,
      afterAlter,
      committed: offsets[0]!.partitions.map((p) => [p.partition, p.offset]).sort(),
      groupState: groups.groups.map((g) => ({ state: g.state, protocolType: g.protocolType })),
    };
  } finally {
    await admin.disconnect();
  }
}

/** Java's console producer and consumer, kafka-topics, kafka-configs and kafka-consumer-groups. */
async function javaTools(b: string, up: ScenarioUpstream, name: (s: string) => string): Promise<Observations> {
  const topic = name('by-java');
  if (up.javaCreatesTopics) {
    await javaToolOk('topics', ['--bootstrap-server', b, '--create', '--topic', topic, '--partitions', '2', '--replication-factor', '1']);
  } else {
    await franzProduce(b, { topic, count: 0, createPartitions: 2 });
  }
  const described = await javaToolOk('topics', ['--bootstrap-server', b, '--describe', '--topic', topic]);
  assert.match(described.stdout, /PartitionCount:\s*2/);
  const lines = Array.from({ length: 50 }, (_, i) => `key-${i % 7}:value-${i}`);
  await javaToolOk(
    'console-producer',
    ['--bootstrap-server', b, '--topic', topic, '--reader-property', 'parse.key=true', '--reader-property', 'key.separator=:'],
    {
      input: lines.join('\n') + '\n',
    },
  );
  const group = name('java-readers');
  const consumed = await javaToolOk('console-consumer', [
    '--bootstrap-server',
    b,
    '--topic',
    topic,
    '--group',
    group,
    '--from-beginning',
    '--max-messages',
    String(lines.length),
    '--timeout-ms',
    '20000',
    '--formatter-property',
    'print.key=true',
    '--formatter-property',
    'key.separator=:',
  ]);
  assert.deepEqual(consumed.stdout.trimEnd().split('\n').sort(), [...lines].sort());

  await javaToolOk('configs', ['--bootstrap-server', b, '--alter', '--entity-type', 'topics', '--entity-name', topic, '--add-config', 'retention.ms=7200000']);
  const configs = await javaToolOk('configs', ['--bootstrap-server', b, '--describe', '--entity-type', 'topics', '--entity-name', topic]);
  const groups = await javaToolOk('consumer-groups', ['--bootstrap-server', b, '--describe', '--group', group]);
  return {
    // Which broker leads a partition depends on the upstream's placement history, not the proxy.
    describe: described.stdout
      .replaceAll(topic, 'TOPIC')
      .replace(/TopicId:\s*\S+/, 'TopicId: ID')
      .replace(/Leader: \d+\tReplicas: [\d,]+\tIsr: [\d,]+/g, (m) => m.replace(/\d+/g, 'N')),
    consumed: consumed.stdout.trimEnd().split('\n').length,
    configs: configs.stdout.replaceAll(topic, 'TOPIC').trim(),
    groupOffsets: groupRows(groups.stdout, topic),
  };
}

/** PARTITION, CURRENT-OFFSET and LOG-END-OFFSET of kafka-consumer-groups --describe. */
function groupRows(stdout: string, topic: string): string[] {
  return stdout
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((cols) => cols[1] === topic)
    .map((cols) => `${cols[2]} ${cols[3]} ${cols[4]} ${cols[5]}`)
    .sort();
}
