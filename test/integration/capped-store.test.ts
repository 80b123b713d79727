/**
 * The test bed's 'capped' store (test/support/kafka.ts): Kafka 4.4 refusing, through
 * RetentionCapPolicy, any topic that asks to keep records longer than the cap, and deleting
 * records once the cap has passed, as OCI Streaming and Event Hubs do. Tests of physical
 * compaction rely on both halves, so both are checked here against the real broker.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
// kafkajs is CommonJS: Node's ESM loader sees only its default export as a value.
import kafkajs from 'kafkajs';
import { ErrorCode } from '../../src/protocol/errors.js';
import { ApiKey } from '../../src/protocol/messages.js';
import { ZERO_UUID } from '../../src/proxy/topic-ids.js';
import { askOnce as ask } from '../support/raw-client.js';
import { kafkajsProduce, pollUntil, requirePeers, startKafka, type RunningKafka } from '../support/index.js';

const skip = requirePeers();

/** Short, so the file can watch records expire; the broker starts once for all of it. */
const CAP_MS = 3000;
const TOPIC = 2;
const BROKER = 4;
const { SET, DELETE } = { SET: 0, DELETE: 1 };
const { LATEST, EARLIEST } = { LATEST: -1n, EARLIEST: -2n };

type Configs = Record<string, string>;

const topicSpec = (name: string, configs: Configs) => ({
  name,
  numPartitions: 1,
  replicationFactor: 1,
  assignments: [],
  configs: Object.entries(configs).map(([n, value]) => ({ name: n, value })),
});

interface Outcome {
  errorCode: number;
  errorMessage: string | null;
}

async function createTopics(b: string, topics: [string, Configs][], validateOnly = false): Promise<Map<string, Outcome>> {
  const body = await ask(b, ApiKey.CreateTopics, 7, { topics: topics.map(([n, c]) => topicSpec(n, c)), timeoutMs: 30_000, validateOnly });
  return new Map(body.topics.map((t: Outcome & { name: string }) => [t.name, { errorCode: t.errorCode, errorMessage: t.errorMessage }]));
}

async function incrementalAlter(b: string, resourceType: number, name: string, ops: [string, number, string | null][], validateOnly = false): Promise<Outcome> {
  const body = await ask(b, ApiKey.IncrementalAlterConfigs, 1, {
    resources: [{ resourceType, resourceName: name, configs: ops.map(([n, configOperation, value]) => ({ name: n, configOperation, value })) }],
    validateOnly,
  });
  return body.responses[0];
}

/**
 * retention.ms as DescribeConfigs gives it: value and source (1 topic override, 4 static broker
 * config). A topic just created may not be in the broker's metadata yet (UNKNOWN_TOPIC_OR_PARTITION
 * for a moment): asked again until it is, within a deadline.
 */
async function retentionOf(b: string, topic: string): Promise<[string, number]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const body = await ask(b, ApiKey.DescribeConfigs, 4, {
      resources: [{ resourceType: TOPIC, resourceName: topic, configurationKeys: ['retention.ms'] }],
      includeSynonyms: false,
      includeDocumentation: false,
    });
    const r = body.results[0];
    if (r.errorCode === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      continue;
    }
    assert.equal(r.errorCode, 0, `describe ${topic}: ${r.errorMessage}`);
    return [r.configs[0].value, r.configs[0].configSource];
  }
}

async function topicExists(b: string, topic: string): Promise<boolean> {
  const body = await ask(b, ApiKey.Metadata, 12, { topics: [{ name: topic, topicId: ZERO_UUID }], allowAutoTopicCreation: false });
  return body.topics[0].errorCode === ErrorCode.NONE;
}

async function offset(b: string, topic: string, timestamp: bigint): Promise<bigint> {
  const body = await ask(b, ApiKey.ListOffsets, 7, {
    replicaId: -1,
    isolationLevel: 0,
    topics: [{ name: topic, partitions: [{ partitionIndex: 0, currentLeaderEpoch: -1, timestamp }] }],
  });
  const p = body.topics[0].partitions[0];
  assert.equal(p.errorCode, 0, `ListOffsets ${topic}`);
  return p.offset;
}

/** A refusal as the policy words it: the topic, the config and value asked, and the cap. */
function assertRefused(o: Outcome | undefined, topic: string, asked: string): void {
  assert.equal(o?.errorCode, ErrorCode.POLICY_VIOLATION, `${topic}: ${o?.errorMessage}`);
  assert.match(o?.errorMessage ?? '', new RegExp(`^topic ${topic}: retention\\.ms=${asked}\\b.* caps retention at ${CAP_MS} ms$`));
}

function assertAccepted(o: Outcome | undefined, what: string): void {
  assert.deepEqual([o?.errorCode, o?.errorMessage], [ErrorCode.NONE, null], what);
}

describe('the capped store', { skip }, () => {
  let kafka: RunningKafka;
  let b: string;

  before(async () => {
    kafka = await startKafka({ compaction: 'capped', retentionCapMs: CAP_MS });
    b = kafka.bootstrap;
  });
  after(async () => {
    await kafka?.stop();
  });

  test('CreateTopics refuses retention.ms=-1 and retention.ms above the cap, naming the cap', { timeout: 60_000 }, async () => {
    const asked: [string, Configs][] = [
      ['kept-forever', { 'retention.ms': '-1' }],
      ['kept-too-long', { 'retention.ms': String(CAP_MS + 1) }],
    ];
    const created = await createTopics(b, asked);
    assertRefused(created.get('kept-forever'), 'kept-forever', '-1');
    assertRefused(created.get('kept-too-long'), 'kept-too-long', String(CAP_MS + 1));
    for (const [name] of asked) assert.equal(await topicExists(b, name), false, `${name} was not created`);
    // validateOnly runs the policy too, so a client's dry run sees the refusal it would get.
    assertRefused((await createTopics(b, [['dry-run', { 'retention.ms': '-1' }]], true)).get('dry-run'), 'dry-run', '-1');
  });

  test('CreateTopics accepts retention.ms at or below the cap, or none (the broker default is the cap)', { timeout: 60_000 }, async () => {
    const created = await createTopics(b, [
      ['at-cap', { 'retention.ms': String(CAP_MS) }],
      ['below-cap', { 'retention.ms': '1000' }],
      ['broker-default', {}],
    ]);
    for (const name of ['at-cap', 'below-cap', 'broker-default']) assertAccepted(created.get(name), name);
    assert.deepEqual(await retentionOf(b, 'at-cap'), [String(CAP_MS), 1]);
    assert.deepEqual(await retentionOf(b, 'broker-default'), [String(CAP_MS), 4]);
  });

  test("Kafka's internal topics pass: the share coordinator creates __share_group_state with retention.ms=-1", { timeout: 60_000 }, async () => {
    // validateOnly: the policy still runs (see above), and the real one stays Kafka's to create.
    const created = await createTopics(b, [['__share_group_state', { 'retention.ms': '-1' }]], true);
    assertAccepted(created.get('__share_group_state'), '__share_group_state');
  });

  test('IncrementalAlterConfigs refuses raising retention.ms past the cap and accepts lowering or deleting it', { timeout: 60_000 }, async () => {
    const name = 'altered';
    assertAccepted((await createTopics(b, [[name, { 'retention.ms': '2000' }]])).get(name), name);
    assertRefused(await incrementalAlter(b, TOPIC, name, [['retention.ms', SET, String(CAP_MS + 1)]]), name, String(CAP_MS + 1));
    assertRefused(await incrementalAlter(b, TOPIC, name, [['retention.ms', SET, '-1']]), name, '-1');
    assert.deepEqual(await retentionOf(b, name), ['2000', 1], 'a refused change leaves the topic as it was');

    assertAccepted(await incrementalAlter(b, TOPIC, name, [['retention.ms', SET, '1000']]), 'lowering');
    assert.deepEqual(await retentionOf(b, name), ['1000', 1]);
    assertAccepted(await incrementalAlter(b, TOPIC, name, [['retention.ms', DELETE, null]]), 'deleting (back to the broker default)');
    assert.deepEqual(await retentionOf(b, name), [String(CAP_MS), 4]);

    // The legacy AlterConfigs (kafkajs's alterConfigs) reaches the same policy.
    const legacy = await ask(b, ApiKey.AlterConfigs, 2, {
      resources: [{ resourceType: TOPIC, resourceName: name, configs: [{ name: 'retention.ms', value: '-1' }] }],
      validateOnly: false,
    });
    assertRefused(legacy.responses[0], name, '-1');

    // Broker-level changes are not the policy's to judge, even the cluster default's retention.
    assertAccepted(await incrementalAlter(b, BROKER, '', [['log.retention.ms', SET, '-1']], true), 'cluster default, validateOnly');
  });

  test('records are deleted by retention once the cap has passed', { timeout: 120_000 }, async () => {
    const name = 'expiring';
    const produced = await kafkajsProduce(b, { topic: name, count: 20, keys: 5, createPartitions: 1 });
    assert.deepEqual(produced.errors, []);
    assert.equal(await offset(b, name, LATEST), 20n);
    // The log stays idle: retention must roll the active segment itself to delete these.
    const earliest = await pollUntil('retention to delete every record', 60_000, async () => {
      const o = await offset(b, name, EARLIEST);
      return o === 20n ? o : undefined;
    });
    assert.equal(earliest, 20n);
    assert.equal(await offset(b, name, LATEST), 20n, 'deletion keeps the offsets');
  });

  test('records expire while writes go on: the active segment rolls, so new records shelter no old ones', { timeout: 120_000 }, async () => {
    const name = 'busy';
    assertAccepted((await createTopics(b, [[name, {}]])).get(name), name);
    const client = new kafkajs.Kafka({ clientId: 'capped-store-test', brokers: [b], logLevel: kafkajs.logLevel.NOTHING });
    const producer = client.producer({ allowAutoTopicCreation: false });
    await producer.connect();
    let writing = true;
    let sent = 0;
    const writer = (async () => {
      while (writing) {
        await producer.send({ topic: name, acks: -1, messages: [{ key: `k${sent % 3}`, value: `v${sent}` }] });
        sent++;
        await new Promise((r) => setTimeout(r, 200));
      }
    })();
    try {
      // Without rolling, the one segment's newest record would always be fresh and nothing would go.
      await pollUntil('old records to expire under a steady write', 60_000, async () => {
        const [earliest, latest] = [await offset(b, name, EARLIEST), await offset(b, name, LATEST)];
        return earliest > 0n && latest > earliest ? true : undefined;
      });
    } finally {
      writing = false;
      await writer;
      await producer.disconnect();
    }
  });
});
