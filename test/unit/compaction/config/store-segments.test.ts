import assert from 'node:assert/strict';
import { test } from 'node:test';
import { BrokerDefaults } from '../../../../src/compaction/config/broker-defaults.js';
import { mergeOwned } from '../../../../src/compaction/config/describe-configs.js';
import {
  planStoreSegments,
  STORE_SEGMENT_MS_FLOOR,
  StoreSegments,
  storeSegmentConfigs,
  type StoreSegmentConfigs,
} from '../../../../src/compaction/config/store-segments.js';
import { TopicConfigState } from '../../../../src/compaction/config/topic-config-state.js';
import { createLogger } from '../../../../src/common/log.js';
import { ErrorCode, ProtocolError } from '../../../../src/protocol/errors.js';
import {
  ApiKey,
  type DescribeConfigsRequest,
  type IncrementalAlterConfigsRequest,
  type IncrementalAlterConfigsRequestAlterableConfig as Op,
} from '../../../../src/protocol/messages.js';
import { TopicIds } from '../../../../src/proxy/topic-ids.js';
import type { UpstreamClusterClient } from '../../../../src/upstream/upstream-cluster-client.js';
import { capturingLogger } from '../../../support/capturing-logger.js';

const defaults = new BrokerDefaults();
const SET = 0;
const GIB = '1073741824';
const WEEK = '604800000';

const derive = (configs: Record<string, string>, brokerConfigs?: Record<string, string>) =>
  storeSegmentConfigs(configs, brokerConfigs ? new BrokerDefaults(brokerConfigs) : defaults);

test("a compact-only topic's store segments roll as its virtual ones: segment.ms, or max.compaction.lag.ms when shorter, and segment.bytes", () => {
  assert.deepEqual(derive({ 'cleanup.policy': 'compact' }), { 'segment.ms': WEEK, 'segment.bytes': GIB }, "Kafka's defaults");
  assert.deepEqual(derive({ 'cleanup.policy': 'compact', 'segment.ms': '2000' }), { 'segment.ms': '2000', 'segment.bytes': GIB });
  assert.deepEqual(derive({ 'cleanup.policy': 'compact', 'max.compaction.lag.ms': '60000', 'segment.ms': '120000' })?.['segment.ms'], '60000');
  assert.deepEqual(derive({ 'cleanup.policy': 'compact', 'segment.bytes': '2097152' })?.['segment.bytes'], '2097152');
  assert.deepEqual(derive({ 'cleanup.policy': 'compact' }, { 'log.roll.hours': '1', 'log.segment.bytes': '16777216' }), {
    'segment.ms': '3600000',
    'segment.bytes': '16777216',
  });
});

test('store segments are never shorter than a second, whatever segment.ms a topic takes for its virtual ones', () => {
  assert.equal(STORE_SEGMENT_MS_FLOOR, 1000);
  for (const ms of ['1', '100', '999']) assert.equal(derive({ 'cleanup.policy': 'compact', 'segment.ms': ms })?.['segment.ms'], '1000', ms);
  assert.equal(derive({ 'cleanup.policy': 'compact', 'max.compaction.lag.ms': '1' })?.['segment.ms'], '1000');
  assert.equal(derive({ 'cleanup.policy': 'compact', 'segment.ms': '1001' })?.['segment.ms'], '1001');
  assert.equal(derive({ 'cleanup.policy': 'compact', 'segment.bytes': '1048576' })?.['segment.bytes'], '1048576', "Kafka's least, kept");
});

test('only a compact-only topic has store segments of kcompact: compact,delete keeps its own, other topics none', () => {
  assert.equal(derive({ 'cleanup.policy': 'compact,delete', 'segment.ms': '2000' }), null);
  assert.equal(derive({ 'cleanup.policy': 'delete', 'segment.ms': '2000' }), null);
  assert.equal(derive({ 'cleanup.policy': '', 'segment.ms': '2000' }), null, 'the empty policy keeps everything and is not carried');
  assert.equal(derive({}), null);
  assert.deepEqual(derive({}, { 'log.cleanup.policy': 'compact' })?.['segment.ms'], WEEK, 'compacted by the broker default');
});

const store = (entries: Record<string, [string, boolean]>) => new Map(Object.entries(entries).map(([name, [value, override]]) => [name, { value, override }]));
const wants = (ms: string, bytes = GIB): StoreSegmentConfigs => ({ 'segment.ms': ms, 'segment.bytes': bytes });
const show = (ops: Op[]) => ops.map((o) => `${o.name}${o.configOperation === SET ? `=${o.value}` : ' deleted'}`);

test("from the store's default, only what is shorter is set", () => {
  const atDefault = store({ 'segment.ms': [WEEK, false], 'segment.bytes': [GIB, false] });
  assert.deepEqual(show(planStoreSegments(atDefault, wants('2000'), undefined, {}).ops), ['segment.ms=2000']);
  assert.deepEqual(show(planStoreSegments(atDefault, wants(WEEK), undefined, {}).ops), [], "the store's default is as short already");
  const shortDefaults = store({ 'segment.ms': ['5000', false], 'segment.bytes': ['4194304', false] });
  assert.deepEqual(show(planStoreSegments(shortDefaults, wants('60000', '2097152'), undefined, {}).ops), ['segment.bytes=2097152']);
  assert.deepEqual(show(planStoreSegments(store({}), wants('2000'), undefined, {}).ops), [], 'a store without segment configs gets none');
});

test("a store override stands unless it is kcompact's own value, which follows the topic's configs", () => {
  const operators = store({ 'segment.ms': ['30000', true], 'segment.bytes': ['8388608', true] });
  assert.deepEqual(
    show(planStoreSegments(operators, wants('2000', '2097152'), undefined, {}).ops),
    [],
    "an operator's values, or kcompact's from before a restart",
  );
  assert.deepEqual(show(planStoreSegments(operators, wants('2000', '2097152'), wants('1000', '4194304'), {}).ops), [], 'not what kcompact derived');

  const ours = store({ 'segment.ms': ['2000', true], 'segment.bytes': [GIB, false] });
  assert.deepEqual(planStoreSegments(ours, wants('2000'), wants('2000'), {}), { ops: [], again: false }, 'in line already');
  assert.deepEqual(show(planStoreSegments(ours, wants('1000'), wants('2000'), {}).ops), ['segment.ms=1000'], 'shorter: set');
  const longer = planStoreSegments(ours, wants('60000'), wants('2000'), {});
  assert.deepEqual(show(longer.ops), ['segment.ms deleted'], "longer: back to the store's default first");
  assert.equal(longer.again, true, 'then looked at again, from the default');
});

test("a topic no longer compact-only loses kcompact's values, not its own", () => {
  const ours = store({ 'segment.ms': ['2000', true], 'segment.bytes': ['2097152', true] });
  assert.deepEqual(show(planStoreSegments(ours, null, wants('2000', '2097152'), {}).ops), ['segment.ms deleted', 'segment.bytes deleted']);
  assert.deepEqual(
    show(planStoreSegments(ours, null, wants('2000', '2097152'), { 'segment.ms': '2000' }).ops),
    ['segment.bytes deleted'],
    'compact,delete forwards its own segment.ms, which is the same value',
  );
  assert.deepEqual(show(planStoreSegments(ours, null, undefined, {}).ops), [], 'never derived here: not known to be ours');
});

test("DescribeConfigs shows a compact-only topic's own segment configs, never the store's derived ones", () => {
  const state = new TopicConfigState(defaults, new TopicIds(), [], createLogger());
  state.apply(1, 'table', { configs: { 'cleanup.policy': 'compact', 'segment.ms': '100' } });
  const entry = (name: string, value: string) => ({
    name,
    value,
    readOnly: false,
    configSource: 1,
    isSensitive: false,
    synonyms: [],
    configType: 5,
    documentation: null,
  });
  const merged = mergeOwned({ state, defaults }, 'table', [entry('segment.ms', '1000'), entry('segment.bytes', '2097152')], ['segment.ms', 'segment.bytes'], {
    includeSynonyms: true,
    includeDocumentation: false,
  });
  assert.deepEqual(
    merged.map((e) => [e.name, e.value, e.configSource, e.synonyms.map((s) => `${s.name}=${s.value}`)]),
    [
      ['segment.ms', '100', 1, ['segment.ms=100']],
      ['segment.bytes', GIB, 5, ['log.segment.bytes=1073741824']],
    ],
  );
});

/** A store answering DescribeConfigs and IncrementalAlterConfigs from its own segment configs per topic, recording what it is asked. */
function fakeStore(opts: {
  topics: Record<string, Record<string, [string, boolean]>>;
  refuse?: { errorCode: number; errorMessage: string };
  noApis?: boolean;
}) {
  const asked: { apiKey: number; body: unknown }[] = [];
  const topics = new Map(Object.entries(opts.topics).map(([t, c]) => [t, new Map(Object.entries(c))]));
  const client = {
    version: (apiKey: number) => {
      if (opts.noApis && apiKey === ApiKey.IncrementalAlterConfigs) throw new ProtocolError('upstream 127.0.0.1:9 does not support API 44');
      return 1;
    },
    request: async (apiKey: number, _v: number, body: DescribeConfigsRequest | IncrementalAlterConfigsRequest) => {
      asked.push({ apiKey, body: structuredClone(body) });
      if (apiKey === ApiKey.DescribeConfigs) {
        return {
          throttleTimeMs: 0,
          results: (body as DescribeConfigsRequest).resources.map((r) => {
            const configs = topics.get(r.resourceName);
            if (!configs)
              return { errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: null, resourceType: 2, resourceName: r.resourceName, configs: [] };
            return {
              errorCode: ErrorCode.NONE,
              errorMessage: null,
              resourceType: 2,
              resourceName: r.resourceName,
              configs: [...configs].map(([name, [value, override]]) => ({
                name,
                value,
                readOnly: false,
                configSource: override ? 1 : 5,
                isSensitive: false,
                synonyms: [],
              })),
            };
          }),
        };
      }
      return {
        throttleTimeMs: 0,
        responses: (body as IncrementalAlterConfigsRequest).resources.map((r) => {
          if (opts.refuse) return { errorCode: opts.refuse.errorCode, errorMessage: opts.refuse.errorMessage, resourceType: 2, resourceName: r.resourceName };
          const configs = topics.get(r.resourceName)!;
          for (const c of r.configs) configs.set(c.name, c.configOperation === SET ? [c.value!, true] : [c.name === 'segment.ms' ? WEEK : GIB, false]);
          return { errorCode: ErrorCode.NONE, errorMessage: null, resourceType: 2, resourceName: r.resourceName };
        }),
      };
    },
  };
  const links = { any: async () => client } as unknown as UpstreamClusterClient;
  const alters = () => asked.filter((a) => a.apiKey === ApiKey.IncrementalAlterConfigs).map((a) => a.body as IncrementalAlterConfigsRequest);
  return { links, asked, topics, alters };
}

const atDefaults = (): Record<string, [string, boolean]> => ({ 'segment.ms': [WEEK, false], 'segment.bytes': [GIB, false] });

function keeper(links: UpstreamClusterClient, lines: string[] = []) {
  const state = new TopicConfigState(defaults, new TopicIds(), [], createLogger());
  const segments = new StoreSegments({ configs: state, defaults, links, log: capturingLogger(lines), caughtUp: Promise.resolve() });
  return { state, segments };
}

async function until(what: string, check: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 5));
  assert.ok(check(), what);
}

test('existing compact-only topics get their store segments once, at start; the others are not asked about', async () => {
  const s = fakeStore({ topics: { table: atDefaults(), plain: atDefaults(), tuned: { 'segment.ms': ['30000', true], 'segment.bytes': [GIB, false] } } });
  const { state, segments } = keeper(s.links);
  state.apply(1, 'table', { configs: { 'cleanup.policy': 'compact', 'segment.ms': '2000', 'segment.bytes': '2097152' } });
  state.apply(2, 'plain', { configs: { 'cleanup.policy': 'delete', 'segment.ms': '2000' } });
  state.apply(3, 'tuned', { configs: { 'cleanup.policy': 'compact', 'segment.ms': '2000' } });
  segments.start();
  try {
    await until('the store was altered', () => s.alters().length === 1);
    const [alter] = s.alters();
    assert.deepEqual(
      alter!.resources.map((r) => [r.resourceName, show(r.configs)]),
      [['table', ['segment.ms=2000', 'segment.bytes=2097152']]],
      "the operator's override on tuned stands",
    );
    const described = s.asked
      .filter((a) => a.apiKey === ApiKey.DescribeConfigs)
      .map((a) => (a.body as DescribeConfigsRequest).resources.map((r) => r.resourceName));
    assert.deepEqual(described, [['table', 'tuned']]);

    // A change of segment.ms (through any replica) follows; the store then holds the new value.
    state.apply(4, 'table', { configs: { 'cleanup.policy': 'compact', 'segment.ms': '100', 'segment.bytes': '2097152' } });
    await segments.settle('table');
    assert.deepEqual(s.topics.get('table')!.get('segment.ms'), ['1000', true]);
    // Leaving compact-only takes kcompact's values away.
    state.apply(5, 'table', { configs: { 'cleanup.policy': 'compact,delete' } });
    await segments.settle('table');
    assert.deepEqual(Object.fromEntries(s.topics.get('table')!), atDefaults());
  } finally {
    segments.close();
  }
});

test('a store that refuses segment configs is logged once and not asked again for the same values; settle never fails', async () => {
  const lines: string[] = [];
  const s = fakeStore({
    topics: { a: atDefaults(), b: atDefaults() },
    refuse: { errorCode: ErrorCode.POLICY_VIOLATION, errorMessage: 'segment.ms is not allowed' },
  });
  const { state, segments } = keeper(s.links, lines);
  segments.start();
  try {
    state.apply(1, 'a', { configs: { 'cleanup.policy': 'compact', 'segment.ms': '2000' } });
    await segments.settle('a');
    state.apply(2, 'b', { configs: { 'cleanup.policy': 'compact', 'segment.ms': '2000' } });
    await segments.settle('b');
    await segments.settle('a');
    assert.equal(s.alters().length, 2, 'a and b once each');
    const warned = lines.filter((l) => l.startsWith('warn'));
    assert.equal(warned.length, 1, lines.join('\n'));
    assert.match(warned[0]!, /refused segment configs for a compacted topic.*"topic":"a".*segment\.ms is not allowed/);
    // Other values are asked for again.
    state.apply(3, 'a', { configs: { 'cleanup.policy': 'compact', 'segment.ms': '5000' } });
    await segments.settle('a');
    assert.equal(s.alters().length, 3);
  } finally {
    segments.close();
  }
});

test('a store without IncrementalAlterConfigs is told once, and left alone after', async () => {
  const lines: string[] = [];
  const s = fakeStore({ topics: { a: atDefaults() }, noApis: true });
  const { state, segments } = keeper(s.links, lines);
  segments.start();
  try {
    state.apply(1, 'a', { configs: { 'cleanup.policy': 'compact', 'segment.ms': '2000' } });
    await segments.settle('a');
    await segments.settle('a');
    assert.equal(s.asked.length, 0);
    assert.equal(lines.filter((l) => l.includes('cannot describe or alter topic configs')).length, 1, lines.join('\n'));
  } finally {
    segments.close();
  }
});

test('a topic the store does not have yet is left for later, not failed', async () => {
  const s = fakeStore({ topics: {} });
  const { state, segments } = keeper(s.links);
  segments.start();
  try {
    state.apply(1, 'later', { configs: { 'cleanup.policy': 'compact', 'segment.ms': '2000' } });
    await segments.settle('later');
    assert.equal(s.alters().length, 0);
    s.topics.set('later', new Map(Object.entries(atDefaults())));
    await segments.settle('later');
    assert.deepEqual(s.topics.get('later')!.get('segment.ms'), ['2000', true]);
  } finally {
    segments.close();
  }
});
