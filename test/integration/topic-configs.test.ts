/**
 * The topic-config layer through the proxy, in front of stores without compaction (Kafka 4.4 with
 * its cleaner off, and kfake), compared with a Kafka 4.4 that compacts ('reference') answering
 * the same requests directly. The proxies get the reference broker's cleaner settings as their
 * broker defaults, so every owned config must describe exactly as the reference describes it.
 */
import { OWNED_TOPIC_CONFIGS, referenceBrokerDefaults } from '../support/differential.js';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import kafkajs from 'kafkajs';
import { configLayerOptions, createTopicConfigs, CONFIGS_TOPIC, type StaticTopic, type TopicConfigs } from '../../src/compaction/config/topic-configs.js';
import { connectionOptions } from '../../src/upstream/connection-options.js';
import { parseHostPortList } from '../../src/common/host-port.js';
import { createLogger, isLogLevel, setLogLevel, type Logger } from '../../src/common/log.js';
import { ApiKey } from '../../src/protocol/messages.js';
import { ProxyServer } from '../../src/proxy/server.js';
import { TopicIds, ZERO_UUID } from '../../src/proxy/topic-ids.js';
import { freePortRun } from '../support/kcompact.js';
import { askOnce as ask } from '../support/raw-client.js';
import {
  javaTool,
  makeTempDir,
  pollUntil,
  requirePeers,
  startKafka,
  startKfake,
  type RunningKafka,
  type RunningKfake,
  type TempDir,
} from '../support/index.js';

const skip = requirePeers();

/** The reference broker's cleaner settings that are synonyms of owned configs (see test/support/kafka.ts). */
const REFERENCE_BROKER_CONFIGS = referenceBrokerDefaults();
const OWNED: readonly string[] = OWNED_TOPIC_CONFIGS;
const { SET, DELETE, APPEND, SUBTRACT } = { SET: 0, DELETE: 1, APPEND: 2, SUBTRACT: 3 };

interface ConfigProxy {
  bootstrap: string;
  configs: TopicConfigs;
  dataDir: TempDir;
  stop(): Promise<void>;
}

async function startConfigProxy(upstream: string, opts: { dataDir?: TempDir; staticTopics?: StaticTopic[] } = {}): Promise<ConfigProxy> {
  const level = process.env.KCOMPACT_TEST_LOG_LEVEL ?? 'warn';
  setLogLevel(isLogLevel(level) ? level : 'warn');
  const log = createLogger({ component: 'topic-configs-test' });
  const port = await freePortRun(5);
  const topics = new TopicIds();
  const dataDir = opts.dataDir ?? makeTempDir('kcompact-topic-configs-');
  const configs = await createTopicConfigs({
    layer: configLayerOptions({ brokerConfigs: REFERENCE_BROKER_CONFIGS, staticTopics: opts.staticTopics, pollIntervalMs: 100 }),
    connection: connectionOptions({ upstream: parseHostPortList(upstream) }),
    dataDir: dataDir.path,
    topicIds: topics,
    log,
  });
  const server = new ProxyServer({
    listen: { host: '127.0.0.1', port },
    upstream: parseHostPortList(upstream),
    advertisedHost: '127.0.0.1',
    brokerPortBase: port + 1,
    maxFrameBytes: 100 * 1024 * 1024,
    requestTimeoutMs: 30_000,
    log,
    topics,
    filters: configs.filters,
  });
  await server.start();
  return {
    bootstrap: `127.0.0.1:${port}`,
    configs,
    dataDir,
    stop: async () => {
      await server.stop();
      await configs.close();
    },
  };
}

type Configs = Record<string, string | null>;

const topicSpec = (name: string, configs: Configs) => ({
  name,
  numPartitions: 1,
  replicationFactor: 1,
  assignments: [],
  configs: Object.entries(configs).map(([n, value]) => ({ name: n, value })),
});

/**
 * The controller's address as `address` (the proxy or a broker) advertises it: kfake, like
 * ZooKeeper-era Kafka, refuses CreateTopics and DeleteTopics anywhere else.
 */
async function controller(address: string): Promise<string> {
  const body = await ask(address, ApiKey.Metadata, 12, { topics: [], allowAutoTopicCreation: false });
  const node = body.brokers.find((b: { nodeId: number }) => b.nodeId === body.controllerId) ?? body.brokers[0];
  return `${node.host}:${node.port}`;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function createTopics(address: string, topics: [string, Configs][], opts: { version?: number; validateOnly?: boolean } = {}): Promise<any[]> {
  const body = await ask(await controller(address), ApiKey.CreateTopics, opts.version ?? 7, {
    topics: topics.map(([n, c]) => topicSpec(n, c)),
    timeoutMs: 30_000,
    validateOnly: opts.validateOnly ?? false,
  });
  return body.topics;
}

/** Per topic, the owned configs' entries as DescribeConfigs gives them, by name. */
async function describeOwned(
  address: string,
  topics: string[],
  opts: { synonyms: boolean; documentation: boolean; keys?: string[] | null; version?: number },
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
): Promise<Record<string, Record<string, any>>> {
  const body = await ask(address, ApiKey.DescribeConfigs, opts.version ?? 4, {
    resources: topics.map((t) => ({ resourceType: 2, resourceName: t, configurationKeys: opts.keys ?? null })),
    includeSynonyms: opts.synonyms,
    includeDocumentation: opts.documentation,
  });
  const out: Record<string, Record<string, unknown>> = {};
  for (const r of body.results) {
    assert.equal(r.errorCode, 0, `describe ${r.resourceName} at ${address}: ${r.errorMessage}`);
    out[r.resourceName] = Object.fromEntries(r.configs.filter((c: { name: string }) => OWNED.includes(c.name)).map((c: { name: string }) => [c.name, c]));
  }
  return out;
}

async function describeValues(address: string, topic: string, keys: string[]): Promise<Record<string, string>> {
  const body = await ask(address, ApiKey.DescribeConfigs, 4, {
    resources: [{ resourceType: 2, resourceName: topic, configurationKeys: keys }],
    includeSynonyms: false,
    includeDocumentation: false,
  });
  assert.equal(body.results[0].errorCode, 0, `describe ${topic} at ${address}: ${body.results[0].errorMessage}`);
  return Object.fromEntries(
    body.results[0].configs.map((c: { name: string; value: string; configSource: number }) => [c.name, `${c.value}/${c.configSource}`]),
  );
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function incrementalAlter(address: string, topic: string, ops: [string, number, string | null][], validateOnly = false): Promise<any> {
  const body = await ask(address, ApiKey.IncrementalAlterConfigs, 1, {
    resources: [{ resourceType: 2, resourceName: topic, configs: ops.map(([name, configOperation, value]) => ({ name, configOperation, value })) }],
    validateOnly,
  });
  return body.responses[0];
}

async function topicExists(address: string, topic: string): Promise<boolean> {
  const body = await ask(address, ApiKey.Metadata, 12, { topics: [{ name: topic, topicId: ZERO_UUID }], allowAutoTopicCreation: false });
  return body.topics[0].errorCode === 0;
}

/**
 * Retries an assertion until it holds: a Kafka broker answers DescribeConfigs from metadata that
 * can trail an alter its controller has just acknowledged.
 */
async function eventually(check: () => Promise<void>, deadlineMs = 10_000): Promise<void> {
  const end = Date.now() + deadlineMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > end) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** The owned configs of a topic through the proxy equal the reference's, once both have settled. */
function sameAsReference(
  proxyAddress: string,
  referenceAddress: string,
  topic: string,
  opts: { synonyms: boolean; documentation: boolean },
  what?: string,
): Promise<void> {
  return eventually(async () => assert.deepEqual(await describeOwned(proxyAddress, [topic], opts), await describeOwned(referenceAddress, [topic], opts), what));
}

function admin(address: string) {
  return new kafkajs.Kafka({ clientId: 'topic-configs-test', brokers: [address], logLevel: kafkajs.logLevel.NOTHING, retry: { retries: 2 } }).admin();
}

function kafkaConfigs(address: string, args: string[]) {
  return javaTool('configs', ['--bootstrap-server', address, '--entity-type', 'topics', ...args]);
}

let reference: RunningKafka;
const upstreams: { name: string; bootstrap: () => string }[] = [];
let kafkaOff: RunningKafka;
let kfake: RunningKfake;

before(async () => {
  if (skip) return;
  reference = await startKafka({ compaction: 'reference' });
  kafkaOff = await startKafka({ compaction: 'off' });
  kfake = await startKfake();
});

after(async () => {
  await kfake?.stop();
  await kafkaOff?.stop();
  await reference?.stop();
});

upstreams.push({ name: 'kafka-off', bootstrap: () => kafkaOff.bootstrap }, { name: 'kfake', bootstrap: () => kfake.bootstrap });

for (const upstream of upstreams) {
  describe(`through kcompact in front of ${upstream.name}`, { skip }, () => {
    let proxy: ConfigProxy;
    const ref = () => reference.bootstrap;
    const t = (name: string) => `${upstream.name}-${name}`;

    before(async () => {
      proxy = await startConfigProxy(upstream.bootstrap());
    });

    after(async () => {
      await proxy?.stop();
      proxy?.dataDir.remove();
    });

    test("CreateTopics refuses invalid configs per topic with Kafka's errors and creates the valid ones", async () => {
      const request: [string, Configs][] = [
        [t('c-compact'), { 'cleanup.policy': 'compact', 'min.cleanable.dirty.ratio': ' .25 ' }],
        [t('c-foo'), { 'cleanup.policy': 'foo' }],
        [t('c-compact-foo'), { 'cleanup.policy': 'compact,foo' }],
        [t('c-capital'), { 'cleanup.policy': 'Compact' }],
        [t('c-lag'), { 'min.compaction.lag.ms': '100', 'max.compaction.lag.ms': '10' }],
        [t('c-null'), { 'cleanup.policy': null }],
        [t('c-empty-item'), { 'cleanup.policy': 'compact,' }],
        [t('c-plain'), { 'compression.type': 'gzip' }],
      ];
      const [ours, theirs] = [await createTopics(proxy.bootstrap, request), await createTopics(ref(), request)];
      assert.equal(ours.length, theirs.length);
      for (let i = 0; i < ours.length; i++) {
        const [o, r] = [ours[i], theirs[i]];
        assert.deepEqual(
          [o.name, o.errorCode, o.errorMessage, o.numPartitions, o.replicationFactor],
          [r.name, r.errorCode, r.errorMessage, r.numPartitions, r.replicationFactor],
          o.name,
        );
        assert.ok(Array.isArray(o.configs), `${o.name}: configs is a list, never null`);
        for (const c of o.configs) assert.ok(c.configSource >= 0, `${o.name} ${c.name}: a source Java's admin client can read`);
        if (o.errorCode !== 0) continue;
        const owned = (list: { name: string }[]) => list.filter((c) => OWNED.includes(c.name));
        assert.deepEqual(owned(o.configs), owned(r.configs), `${o.name}: owned configs in the CreateTopics answer`);
      }
      assert.equal(await topicExists(upstream.bootstrap(), t('c-compact')), true);
      assert.equal(await topicExists(upstream.bootstrap(), t('c-plain')), true);
      for (const refused of ['c-foo', 'c-compact-foo', 'c-capital', 'c-lag', 'c-null', 'c-empty-item']) {
        assert.equal(await topicExists(upstream.bootstrap(), t(refused)), false, `${refused} must not exist upstream`);
      }
      assert.equal(proxy.configs.view.compacted(t('c-compact'))?.minCleanableDirtyRatio, 0.25);
      assert.equal(proxy.configs.view.compacted(t('c-plain')), undefined);

      // kafkajs creates topics with v3; an existing topic is refused as such before its configs are looked at.
      const v3 = [
        [t('c-foo-v3'), { 'cleanup.policy': 'foo' }],
        [t('c-compact'), { 'cleanup.policy': 'foo' }],
      ] as [string, Configs][];
      const [o3, r3] = [await createTopics(proxy.bootstrap, v3, { version: 3 }), await createTopics(ref(), v3, { version: 3 })];
      assert.deepEqual([o3[0].errorCode, o3[0].errorMessage], [r3[0].errorCode, r3[0].errorMessage]);
      // The message for an existing topic is the upstream's own (kfake sends none).
      assert.deepEqual([o3[1].errorCode, r3[1].errorCode], [36, 36]);
    });

    test('validateOnly validates and creates nothing', async () => {
      const request: [string, Configs][] = [
        [t('v-compact'), { 'cleanup.policy': 'compact' }],
        [t('v-foo'), { 'cleanup.policy': 'foo' }],
      ];
      const [ours, theirs] = [await createTopics(proxy.bootstrap, request, { validateOnly: true }), await createTopics(ref(), request, { validateOnly: true })];
      assert.deepEqual(
        ours.map((x) => [x.errorCode, x.errorMessage]),
        theirs.map((x) => [x.errorCode, x.errorMessage]),
      );
      assert.equal(await topicExists(upstream.bootstrap(), t('v-compact')), false);
      assert.equal(proxy.configs.view.compacted(t('v-compact')), undefined);
    });

    test('DescribeConfigs shows the owned configs exactly as Kafka does: values, sources, types, synonyms, documentation', async () => {
      const topics: [string, Configs][] = [
        [t('d-compact'), { 'cleanup.policy': 'compact' }],
        [
          t('d-full'),
          {
            'cleanup.policy': 'delete, compact,delete',
            'retention.ms': '1000',
            'retention.bytes': '2000000',
            'delete.retention.ms': '0500',
            'min.compaction.lag.ms': '10',
            'max.compaction.lag.ms': '60000',
            'min.cleanable.dirty.ratio': '1e-5',
            'segment.ms': '60000',
            'segment.bytes': '2097152',
          },
        ],
        [t('d-default'), {}],
        [t('d-empty-policy'), { 'cleanup.policy': '' }],
      ];
      await createTopics(proxy.bootstrap, topics);
      await createTopics(ref(), topics);
      const names = topics.map(([n]) => n);
      await eventually(async () => {
        for (const address of [proxy.bootstrap, ref()]) await describeOwned(address, names, { synonyms: false, documentation: false });
      });
      for (const version of [1, 4]) {
        for (const [synonyms, documentation] of [
          [false, false],
          [true, false],
          [true, true],
        ] as const) {
          for (const keys of [null, ['cleanup.policy', 'retention.ms', 'compression.type']]) {
            const what = `v${version} synonyms=${synonyms} documentation=${documentation} keys=${keys}`;
            const [ours, theirs] = [
              await describeOwned(proxy.bootstrap, names, { synonyms, documentation, keys, version }),
              await describeOwned(ref(), names, { synonyms, documentation, keys, version }),
            ];
            for (const name of names) {
              assert.deepEqual(Object.keys(ours[name]!).sort(), Object.keys(theirs[name]!).sort(), `${name} ${what}`);
              for (const config of Object.keys(theirs[name]!)) assert.deepEqual(ours[name]![config], theirs[name]![config], `${name} ${config} ${what}`);
            }
          }
        }
      }
    });

    test("a topic without delete in its policy keeps everything upstream in the store's own segments; compact,delete keeps its own retention and segments", async () => {
      await createTopics(proxy.bootstrap, [
        [t('r-compact'), { 'cleanup.policy': 'compact', 'retention.ms': '1000', 'segment.ms': '60000' }],
        [t('r-both'), { 'cleanup.policy': 'compact,delete', 'retention.ms': '1000', 'segment.ms': '60000' }],
      ]);
      const direct = (topic: string, keys = ['retention.ms', 'retention.bytes']) => describeValues(upstream.bootstrap(), topic, keys);
      const overridden = async (topic: string, name: string) => (await direct(topic, [name]))[name]?.endsWith('/1') === true;
      await eventually(async () => assert.deepEqual(await direct(t('r-compact')), { 'retention.ms': '-1/1', 'retention.bytes': '-1/1' }));
      assert.equal(await overridden(t('r-compact'), 'segment.ms'), false, 'no segment override upstream for a topic kept forever');
      await eventually(async () => assert.equal((await direct(t('r-both')))['retention.ms'], '1000/1'));
      assert.equal((await direct(t('r-both'), ['segment.ms']))['segment.ms'], '60000/1');
      await eventually(async () =>
        assert.equal(
          (await describeValues(proxy.bootstrap, t('r-compact'), ['retention.ms']))['retention.ms'],
          '1000/1',
          'the proxy shows what the client set',
        ),
      );
      assert.equal((await describeValues(proxy.bootstrap, t('r-compact'), ['segment.ms']))['segment.ms'], '60000/1');
      assert.deepEqual(await direct(CONFIGS_TOPIC), { 'retention.ms': '-1/1', 'retention.bytes': '-1/1' });

      // The store's segment override follows the policy both ways.
      assert.equal((await incrementalAlter(proxy.bootstrap, t('r-both'), [['cleanup.policy', SUBTRACT, 'delete']])).errorCode, 0);
      await eventually(async () => assert.equal(await overridden(t('r-both'), 'segment.ms'), false));
      assert.equal((await incrementalAlter(proxy.bootstrap, t('r-both'), [['cleanup.policy', APPEND, 'delete']])).errorCode, 0);
      await eventually(async () => assert.equal((await direct(t('r-both'), ['segment.ms']))['segment.ms'], '60000/1'));
      assert.equal((await describeValues(proxy.bootstrap, t('r-both'), ['segment.ms']))['segment.ms'], '60000/1');
    });

    test('kafkajs AlterConfigs (whole state) and its refusals match Kafka', async () => {
      const topic = t('a-kafkajs');
      await createTopics(proxy.bootstrap, [[topic, {}]]);
      await createTopics(ref(), [[topic, {}]]);
      const alter = async (address: string, entries: { name: string; value: string }[]) => {
        const a = admin(address);
        await a.connect();
        try {
          await a.alterConfigs({ validateOnly: false, resources: [{ type: kafkajs.ConfigResourceTypes.TOPIC, name: topic, configEntries: entries }] });
        } finally {
          await a.disconnect();
        }
      };
      const compare = () => sameAsReference(proxy.bootstrap, ref(), topic, { synonyms: true, documentation: false });
      for (const entries of [
        [
          { name: 'cleanup.policy', value: 'compact' },
          { name: 'retention.ms', value: '5000' },
          { name: 'compression.type', value: 'gzip' },
        ],
        [{ name: 'retention.ms', value: '5000' }],
      ]) {
        await alter(proxy.bootstrap, entries);
        await alter(ref(), entries);
        await compare();
      }
      assert.equal(proxy.configs.view.compacted(topic), undefined, 'the whole-state alter dropped cleanup.policy');
      await eventually(async () => assert.equal((await describeValues(upstream.bootstrap(), topic, ['retention.ms']))['retention.ms'], '5000/1'));
      const refused = { resources: [{ resourceType: 2, resourceName: topic, configs: [{ name: 'cleanup.policy', value: 'foo' }] }], validateOnly: false };
      const [o, r] = [await ask(proxy.bootstrap, ApiKey.AlterConfigs, 1, refused), await ask(ref(), ApiKey.AlterConfigs, 1, refused)];
      assert.deepEqual(o.responses, r.responses);
    });

    test('kafka-topics --create and kafka-configs --alter --add-config / --delete-config behave as on Kafka', async () => {
      const topic = t('k-java');
      for (const address of [proxy.bootstrap, ref()]) {
        const created = await javaTool('topics', [
          '--bootstrap-server',
          address,
          '--create',
          '--topic',
          topic,
          '--partitions',
          '1',
          '--replication-factor',
          '1',
          '--config',
          'cleanup.policy=compact',
        ]);
        assert.equal(created.code, 0, `kafka-topics --create at ${address}: ${created.stderr}`);
      }
      assert.ok(proxy.configs.view.compacted(topic));
      const steps: string[][] = [
        ['--alter', '--entity-name', topic, '--add-config', 'cleanup.policy=[compact,delete],min.compaction.lag.ms=100'],
        ['--alter', '--entity-name', topic, '--delete-config', 'cleanup.policy'],
      ];
      for (const args of steps) {
        for (const address of [proxy.bootstrap, ref()]) {
          const r = await kafkaConfigs(address, args);
          assert.equal(r.code, 0, `kafka-configs ${args.join(' ')} at ${address}: ${r.stderr}`);
        }
        await sameAsReference(proxy.bootstrap, ref(), topic, { synonyms: true, documentation: true });
      }
      assert.equal(proxy.configs.view.compacted(topic), undefined);
      const bad = ['--alter', '--entity-name', topic, '--add-config', 'cleanup.policy=foo'];
      const [o, r] = [await kafkaConfigs(proxy.bootstrap, bad), await kafkaConfigs(ref(), bad)];
      assert.notEqual(o.code, 0);
      assert.match(o.stdout + o.stderr, /Invalid value foo for configuration cleanup\.policy: String must be one of: compact, delete/);
      assert.match(r.stdout + r.stderr, /Invalid value foo for configuration cleanup\.policy: String must be one of: compact, delete/);
    });

    test('IncrementalAlterConfigs APPEND, SUBTRACT, SET and DELETE on cleanup.policy match Kafka, and the upstream retention follows', async () => {
      const topic = t('i-ops');
      await createTopics(proxy.bootstrap, [[topic, { 'retention.ms': '7000' }]]);
      await createTopics(ref(), [[topic, { 'retention.ms': '7000' }]]);
      const steps: { ops: [string, number, string | null][]; validateOnly?: boolean; upstreamRetention?: string; kafkaOnly?: boolean }[] = [
        { ops: [['cleanup.policy', APPEND, 'compact']], upstreamRetention: '7000/1' },
        { ops: [['cleanup.policy', SUBTRACT, 'delete']], upstreamRetention: '-1/1' },
        { ops: [['cleanup.policy', APPEND, 'delete']], upstreamRetention: '7000/1' },
        { ops: [['cleanup.policy', SUBTRACT, 'compact,delete']], upstreamRetention: '-1/1' },
        { ops: [['cleanup.policy', DELETE, null]], upstreamRetention: '7000/1' },
        { ops: [['cleanup.policy', SET, 'compact']], validateOnly: true, upstreamRetention: '7000/1' },
        { ops: [['cleanup.policy', APPEND, 'foo']] },
        { ops: [['delete.retention.ms', APPEND, '5']] },
        {
          ops: [
            ['max.compaction.lag.ms', SET, '10'],
            ['min.compaction.lag.ms', SET, '100'],
          ],
        },
        { ops: [['cleanup.policy', SET, null]] },
        {
          ops: [
            ['cleanup.policy', SET, 'compact'],
            ['cleanup.policy', DELETE, null],
          ],
        },
        // The upstream validates its own configs (kfake takes any compression.type): nothing is stored when it refuses.
        {
          ops: [
            ['cleanup.policy', SET, 'compact'],
            ['compression.type', SET, 'bogus'],
          ],
          upstreamRetention: '7000/1',
          kafkaOnly: true,
        },
        {
          ops: [
            ['cleanup.policy', SET, 'compact'],
            ['retention.ms', SET, '9000'],
          ],
          upstreamRetention: '-1/1',
        },
        { ops: [['cleanup.policy', SET, 'delete']], upstreamRetention: '9000/1' },
      ];
      for (const step of steps) {
        if (step.kafkaOnly && upstream.name === 'kfake') continue;
        const what = JSON.stringify(step.ops) + (step.validateOnly ? ' validateOnly' : '');
        const [o, r] = [
          await incrementalAlter(proxy.bootstrap, topic, step.ops, step.validateOnly),
          await incrementalAlter(ref(), topic, step.ops, step.validateOnly),
        ];
        assert.deepEqual([o.errorCode, o.errorMessage], [r.errorCode, r.errorMessage], what);
        await sameAsReference(proxy.bootstrap, ref(), topic, { synonyms: true, documentation: false }, what);
        const retention = step.upstreamRetention;
        if (retention)
          await eventually(async () => assert.equal((await describeValues(upstream.bootstrap(), topic, ['retention.ms']))['retention.ms'], retention, what));
      }
    });

    test('a second proxy with an empty data dir sees the same compacted topics, and changes flow between the two', async () => {
      const topic = t('s-shared');
      await createTopics(proxy.bootstrap, [[topic, { 'cleanup.policy': 'compact' }]]);
      const second = await startConfigProxy(upstream.bootstrap());
      try {
        assert.ok(second.configs.view.compacted(topic), 'known as soon as the second proxy is up');
        await eventually(async () => assert.equal((await describeValues(second.bootstrap, topic, ['cleanup.policy']))['cleanup.policy'], 'compact/1'));
        const changes: string[] = [];
        const off = proxy.configs.view.onChange((changed) => changes.push(changed));
        assert.equal((await incrementalAlter(second.bootstrap, topic, [['cleanup.policy', SET, 'delete']])).errorCode, 0);
        await pollUntil('the first proxy sees the change', 10_000, async () => (proxy.configs.view.compacted(topic) === undefined ? true : undefined));
        off();
        assert.ok(changes.includes(topic));
      } finally {
        await second.stop();
        second.dataDir.remove();
      }
    });

    test('a restarted proxy serves the configs in its data dir before it reaches the upstream', async () => {
      const topic = t('cache');
      await createTopics(proxy.bootstrap, [[topic, { 'cleanup.policy': 'compact' }]]);
      const dataDir = makeTempDir('kcompact-topic-configs-');
      try {
        const first = await startConfigProxy(upstream.bootstrap(), { dataDir });
        assert.ok(first.configs.view.compacted(topic));
        await first.stop();
        const quiet: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => quiet, enabled: () => false };
        const restarted = await createTopicConfigs({
          layer: configLayerOptions({ brokerConfigs: REFERENCE_BROKER_CONFIGS }),
          connection: connectionOptions({ upstream: [{ host: '127.0.0.1', port: await freePortRun(1) }] }),
          dataDir: dataDir.path,
          topicIds: new TopicIds(),
          log: quiet,
        });
        try {
          assert.ok(restarted.view.compacted(topic), 'served from the cache with no upstream at all');
        } finally {
          await restarted.close();
        }
      } finally {
        dataDir.remove();
      }
    });

    test('DeleteTopics drops the configs: a re-created topic (by name or after deletion by id) starts with the default policy', async () => {
      const byName = t('e-name');
      await createTopics(proxy.bootstrap, [[byName, { 'cleanup.policy': 'compact' }]]);
      const deleted = await ask(await controller(proxy.bootstrap), ApiKey.DeleteTopics, 4, { topicNames: [byName], timeoutMs: 30_000 });
      assert.equal(deleted.responses[0].errorCode, 0);
      assert.equal(proxy.configs.view.compacted(byName), undefined);
      await pollUntil('the topic is gone upstream', 10_000, async () =>
        (await createTopics(proxy.bootstrap, [[byName, {}]]))[0].errorCode === 0 ? true : undefined,
      );
      await eventually(async () => assert.equal((await describeValues(proxy.bootstrap, byName, ['cleanup.policy']))['cleanup.policy'], 'delete/5'));
      await eventually(async () => assert.notEqual((await describeValues(upstream.bootstrap(), byName, ['retention.ms']))['retention.ms'], '-1/1'));

      const byId = t('e-id');
      const [created] = await createTopics(proxy.bootstrap, [[byId, { 'cleanup.policy': 'compact' }]]);
      assert.notEqual(created.topicId, ZERO_UUID);
      const gone = await ask(await controller(proxy.bootstrap), ApiKey.DeleteTopics, 6, {
        topics: [{ name: null, topicId: created.topicId }],
        timeoutMs: 30_000,
      });
      assert.equal(gone.responses[0].errorCode, 0);
      assert.equal(proxy.configs.view.compacted(byId), undefined);
    });

    test('DeleteTopics refuses the configs topic, by name or by id, and deletes the other topics it names', async () => {
      const other = t('e-beside');
      await createTopics(proxy.bootstrap, [[other, { 'cleanup.policy': 'compact' }]]);
      const byName = await ask(await controller(proxy.bootstrap), ApiKey.DeleteTopics, 5, { topicNames: [CONFIGS_TOPIC, other], timeoutMs: 30_000 });
      const result = (name: string) => byName.responses.find((r: { name: string }) => r.name === name);
      assert.equal(byName.responses.length, 2);
      assert.equal(result(other).errorCode, 0);
      assert.equal(result(CONFIGS_TOPIC).errorCode, 44, 'POLICY_VIOLATION');
      assert.match(result(CONFIGS_TOPIC).errorMessage, /holds kcompact's topic configs.*delete it on the upstream directly/);
      assert.equal(proxy.configs.view.compacted(other), undefined);

      const meta = await ask(proxy.bootstrap, ApiKey.Metadata, 12, { topics: [{ name: CONFIGS_TOPIC, topicId: ZERO_UUID }], allowAutoTopicCreation: false });
      const id = meta.topics[0].topicId;
      const alone = await ask(await controller(proxy.bootstrap), ApiKey.DeleteTopics, 6, { topics: [{ name: null, topicId: id }], timeoutMs: 30_000 });
      assert.deepEqual(
        alone.responses.map((r: { name: string; topicId: string; errorCode: number }) => [r.name, r.topicId, r.errorCode]),
        [[CONFIGS_TOPIC, id, 44]],
      );
      const kafkajsAdmin = admin(proxy.bootstrap);
      await kafkajsAdmin.connect();
      try {
        await assert.rejects(kafkajsAdmin.deleteTopics({ topics: [CONFIGS_TOPIC], timeout: 5_000 }), /policy/i);
      } finally {
        await kafkajsAdmin.disconnect();
      }
      assert.ok(await topicExists(upstream.bootstrap(), CONFIGS_TOPIC));
      await eventually(async () => assert.equal(await topicExists(upstream.bootstrap(), other), false));
    });

    test('a topic deleted and re-created behind the proxy does not inherit its configs once its new id is seen', async () => {
      const topic = t('o-oob');
      await createTopics(proxy.bootstrap, [[topic, { 'cleanup.policy': 'compact' }]]);
      await ask(proxy.bootstrap, ApiKey.Metadata, 12, { topics: [{ name: topic, topicId: ZERO_UUID }], allowAutoTopicCreation: false });
      assert.ok(proxy.configs.view.compacted(topic));
      await ask(await controller(upstream.bootstrap()), ApiKey.DeleteTopics, 4, { topicNames: [topic], timeoutMs: 30_000 });
      await pollUntil('re-created directly upstream', 10_000, async () =>
        (await createTopics(upstream.bootstrap(), [[topic, {}]]))[0].errorCode === 0 ? true : undefined,
      );
      await eventually(async () => {
        await ask(proxy.bootstrap, ApiKey.Metadata, 12, { topics: [{ name: topic, topicId: ZERO_UUID }], allowAutoTopicCreation: false });
        assert.equal(proxy.configs.view.compacted(topic), undefined);
      });
      await eventually(async () => assert.equal((await describeValues(proxy.bootstrap, topic, ['cleanup.policy']))['cleanup.policy'], 'delete/5'));
    });

    test('static topics are compacted without writing to the upstream and refuse changes through the API', async () => {
      const topic = t('static');
      const endOffset = async () => {
        const body = await ask(upstream.bootstrap(), ApiKey.Metadata, 12, {
          topics: [{ name: CONFIGS_TOPIC, topicId: ZERO_UUID }],
          allowAutoTopicCreation: false,
        });
        const leader = body.topics[0].partitions[0].leaderId;
        const broker = body.brokers.find((b: { nodeId: number }) => b.nodeId === leader);
        const offsets = await ask(`${broker.host}:${broker.port}`, ApiKey.ListOffsets, 7, {
          replicaId: -1,
          isolationLevel: 0,
          topics: [{ name: CONFIGS_TOPIC, partitions: [{ partitionIndex: 0, timestamp: -1n }] }],
        });
        return offsets.topics[0].partitions[0].offset as bigint;
      };
      const fixed = await startConfigProxy(upstream.bootstrap(), {
        staticTopics: [{ topic, configs: { 'cleanup.policy': 'compact', 'segment.ms': '60000' } }],
      });
      try {
        assert.equal(fixed.configs.view.compacted(topic)?.segmentMs, 60000, 'compacted before the topic even exists');
        const before = await endOffset();
        assert.equal((await createTopics(fixed.bootstrap, [[topic, { 'cleanup.policy': 'compact' }]]))[0].errorCode, 0);
        assert.equal(await endOffset(), before, 'nothing written to the configs topic');
        await eventually(async () =>
          assert.deepEqual(await describeValues(upstream.bootstrap(), topic, ['retention.ms', 'retention.bytes']), {
            'retention.ms': '-1/1',
            'retention.bytes': '-1/1',
          }),
        );
        await eventually(async () => assert.equal((await describeValues(fixed.bootstrap, topic, ['cleanup.policy']))['cleanup.policy'], 'compact/1'));
        const refused = await incrementalAlter(fixed.bootstrap, topic, [['cleanup.policy', SET, 'delete']]);
        assert.equal(refused.errorCode, 44);
        assert.match(refused.errorMessage, /static topic configuration/);
      } finally {
        await fixed.stop();
        fixed.dataDir.remove();
      }
    });
  });
}
