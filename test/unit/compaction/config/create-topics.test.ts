import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTopicsFilter } from '../../../../src/compaction/config/create-topics.js';
import { ErrorCode } from '../../../../src/protocol/errors.js';
import { ApiKey, type BodyInit, type CreateTopicsRequest, type CreateTopicsResponseCreatableTopicResult } from '../../../../src/protocol/messages.js';
import { ZERO_UUID } from '../../../../src/proxy/topic-ids.js';
import { FilterHarness, type RequestRun } from '../../../support/filter-harness.js';
import { configFixture, type FixtureOptions } from './config-fixture.js';

type CreateTopics = typeof ApiKey.CreateTopics;

const ID = 'AAAAAAAAAAAAAAAAAAAAAQ';

const topic = (name: string, configs: Record<string, string | null> = {}) => ({
  name,
  numPartitions: 1,
  replicationFactor: 1,
  assignments: [],
  configs: Object.entries(configs).map(([n, value]) => ({ name: n, value })),
});

function setup(opts: FixtureOptions = {}) {
  const fixture = configFixture(opts);
  return { ...fixture, harness: new FilterHarness(createTopicsFilter(fixture.ctx)) };
}

async function create(harness: FilterHarness, topics: ReturnType<typeof topic>[], opts: { version?: number; validateOnly?: boolean } = {}) {
  const body: BodyInit<CreateTopicsRequest> = { topics, timeoutMs: 30_000, validateOnly: opts.validateOnly ?? false };
  return harness.request(ApiKey.CreateTopics, opts.version ?? 7, body);
}

function forwarded(run: RequestRun<CreateTopics>): Extract<RequestRun<CreateTopics>, { kind: 'forward' }> {
  assert.equal(run.kind, 'forward');
  return run as Extract<RequestRun<CreateTopics>, { kind: 'forward' }>;
}

const created = (name: string, extra: Partial<CreateTopicsResponseCreatableTopicResult> = {}): BodyInit<CreateTopicsResponseCreatableTopicResult> => ({
  name,
  topicId: ID,
  errorCode: ErrorCode.NONE,
  errorMessage: null,
  numPartitions: 1,
  replicationFactor: 1,
  configs: [],
  ...extra,
});

const configsOf = (run: { body: { configs: { name: string; value: string | null }[] }[] }) => run.body.map((t) => t.configs.map((c) => `${c.name}=${c.value}`));

test('owned configs stay out of the upstream, which gets retention -1 when the policy lacks delete; they are stored once created', async () => {
  const { harness, writes, admin, settled } = setup();
  const run = forwarded(
    await create(harness, [topic('orders', { 'cleanup.policy': 'compact', 'compression.type': 'gzip', 'min.cleanable.dirty.ratio': '0.25' })]),
  );
  assert.equal(run.awaitsResponse, true);
  assert.deepEqual(
    configsOf({ body: run.body.topics }),
    [['compression.type=gzip', 'retention.bytes=-1', 'retention.ms=-1']],
    'no segment configs either: the store gets those in a request of its own (store-segments.ts)',
  );
  assert.equal(writes.length, 0, 'nothing is stored before the upstream created the topic');

  const answer = await run.respond({
    throttleTimeMs: 3,
    topics: [
      created('orders', {
        configs: [
          { name: 'compression.type', value: 'gzip', readOnly: false, configSource: 1, isSensitive: false },
          { name: 'retention.ms', value: '-1', readOnly: false, configSource: 1, isSensitive: false },
        ],
      }),
    ],
  });
  assert.equal(answer.kind, 'forward');
  if (answer.kind !== 'forward') return;
  assert.deepEqual(writes, [{ topic: 'orders', stored: { topicId: ID, configs: { 'cleanup.policy': 'compact', 'min.cleanable.dirty.ratio': '0.25' } } }]);
  assert.deepEqual(settled, ['orders'], "the store's segments are set before the client hears of the topic");
  assert.ok(
    admin.some((a) => a.apiKey === ApiKey.DescribeConfigs),
    'the retention the upstream really gave is checked',
  );
  assert.equal(answer.body.throttleTimeMs, 3);
  const [result] = answer.body.topics;
  assert.equal(result!.errorCode, ErrorCode.NONE);
  const entries = new Map(result!.configs!.map((c) => [c.name, `${c.value}/${c.configSource}`]));
  assert.deepEqual([...entries.keys()], [...entries.keys()].sort(), 'sorted by name, as Kafka lists them');
  assert.equal(entries.get('compression.type'), 'gzip/1');
  assert.equal(entries.get('cleanup.policy'), 'compact/1');
  assert.equal(entries.get('min.cleanable.dirty.ratio'), '0.25/1');
  assert.equal(entries.get('retention.ms'), '604800000/5', "the upstream's -1 is kcompact's doing and stays hidden");
  assert.equal(entries.size, 1 + 9);
});

test('a topic that expires data gets its segment and retention overrides upstream, and no -1', async () => {
  const { harness } = setup();
  const run = forwarded(await create(harness, [topic('logs', { 'cleanup.policy': 'compact,delete', 'segment.ms': '60000', 'retention.ms': '1000' })]));
  assert.deepEqual(configsOf({ body: run.body.topics }), [['segment.ms=60000', 'retention.ms=1000']]);
});

test('a topic without owned configs goes on as the client asked it', async () => {
  const { harness, writes } = setup();
  const run = forwarded(await create(harness, [topic('plain', { 'compression.type': 'lz4' })]));
  assert.deepEqual(configsOf({ body: run.body.topics }), [['compression.type=lz4']]);
  const answer = await run.respond({ throttleTimeMs: 0, topics: [created('plain')] });
  assert.ok(answer.kind === 'forward' && answer.body.topics[0]!.errorCode === ErrorCode.NONE);
  assert.deepEqual(writes, [], 'nothing to store');
});

test('a name given twice is refused INVALID_REQUEST once; the other topics go on', async () => {
  const { harness } = setup();
  const run = forwarded(await create(harness, [topic('dup'), topic('ok'), topic('dup', { 'cleanup.policy': 'compact' })]));
  assert.deepEqual(
    run.body.topics.map((t) => t.name),
    ['ok'],
  );
  const answer = await run.respond({ throttleTimeMs: 0, topics: [created('ok')] });
  assert.equal(answer.kind, 'forward');
  if (answer.kind !== 'forward') return;
  assert.deepEqual(
    answer.body.topics.map((t) => [t.name, t.errorCode, t.errorMessage]),
    [
      ['dup', ErrorCode.INVALID_REQUEST, 'Duplicate topic name.'],
      ['ok', ErrorCode.NONE, null],
    ],
  );

  const alone = await create(harness, [topic('dup'), topic('dup')]);
  assert.equal(alone.kind, 'respond', 'nothing left for the upstream: answered without it');
  if (alone.kind !== 'respond') return;
  assert.deepEqual(
    alone.body.topics.map((t) => [t.name, t.errorCode, t.topicId, t.numPartitions]),
    [['dup', ErrorCode.INVALID_REQUEST, ZERO_UUID, -1]],
  );
});

test('an invalid owned config refuses its topic alone, while the valid ones are created', async () => {
  const { harness, admin, writes } = setup();
  const run = forwarded(
    await create(harness, [
      topic('bad', { 'min.cleanable.dirty.ratio': '2' }),
      topic('nullish', { 'cleanup.policy': null }),
      topic('good', { 'cleanup.policy': 'compact' }),
    ]),
  );
  assert.deepEqual(
    run.body.topics.map((t) => t.name),
    ['good'],
  );
  const asked = admin.find((a) => a.apiKey === ApiKey.CreateTopics);
  assert.ok(asked, 'the upstream is asked about errors Kafka checks before configs');
  assert.deepEqual(asked.body, { topics: [topic('bad'), topic('nullish')], timeoutMs: 1000, validateOnly: true });

  const answer = await run.respond({ throttleTimeMs: 0, topics: [created('good')] });
  assert.equal(answer.kind, 'forward');
  if (answer.kind !== 'forward') return;
  const byName = new Map(answer.body.topics.map((t) => [t.name, t]));
  assert.deepEqual([...byName.keys()], ['bad', 'nullish', 'good'], 'in request order');
  assert.equal(byName.get('bad')!.errorCode, ErrorCode.INVALID_CONFIG);
  assert.match(byName.get('bad')!.errorMessage!, /min\.cleanable\.dirty\.ratio/);
  assert.equal(byName.get('nullish')!.errorCode, ErrorCode.INVALID_CONFIG);
  assert.equal(byName.get('nullish')!.errorMessage, 'Null value not supported for topic configs: cleanup.policy');
  assert.equal(byName.get('good')!.errorCode, ErrorCode.NONE);
  assert.deepEqual(
    writes.map((w) => w.topic),
    ['good'],
  );
});

test("the upstream's earlier error (an existing topic) wins over kcompact's config refusal", async () => {
  const { harness } = setup({ beforeConfigErrors: { taken: { errorCode: ErrorCode.TOPIC_ALREADY_EXISTS, errorMessage: "Topic 'taken' already exists." } } });
  const run = await create(harness, [topic('taken', { 'segment.ms': 'soon' })]);
  assert.equal(run.kind, 'respond');
  if (run.kind !== 'respond') return;
  assert.deepEqual(
    run.body.topics.map((t) => [t.errorCode, t.errorMessage]),
    [[ErrorCode.TOPIC_ALREADY_EXISTS, "Topic 'taken' already exists."]],
  );
});

test('validateOnly: forwarded as such, and nothing is stored', async () => {
  const { harness, writes, admin, settled } = setup();
  const run = forwarded(await create(harness, [topic('dry', { 'cleanup.policy': 'compact' })], { validateOnly: true }));
  assert.equal(run.body.validateOnly, true);
  const answer = await run.respond({ throttleTimeMs: 0, topics: [created('dry', { topicId: ZERO_UUID })] });
  assert.ok(answer.kind === 'forward' && answer.body.topics[0]!.errorCode === ErrorCode.NONE);
  assert.deepEqual(writes, []);
  assert.deepEqual(admin, []);
  assert.deepEqual(settled, []);
});

test('an upstream refusing the -1 retention, and the topic without it, is told why kcompact asked for it', async () => {
  const refusal = { errorCode: ErrorCode.INVALID_CONFIG, errorMessage: 'retention.ms must be positive' };
  const { harness, admin } = setup({ beforeConfigErrors: { strict: refusal } });
  const run = forwarded(await create(harness, [topic('strict', { 'cleanup.policy': 'compact' })]));
  const answer = await run.respond({ throttleTimeMs: 0, topics: [created('strict', { topicId: ZERO_UUID, ...refusal })] });
  assert.equal(answer.kind, 'forward');
  if (answer.kind !== 'forward') return;
  assert.equal(answer.body.topics[0]!.errorCode, ErrorCode.INVALID_CONFIG);
  assert.match(
    answer.body.topics[0]!.errorMessage!,
    /^kcompact gives topic strict retention\.ms=-1 and retention\.bytes=-1 upstream because its cleanup\.policy lacks delete.*the upstream refused: retention\.ms must be positive$/,
  );
  assert.equal(admin.filter((a) => a.apiKey === ApiKey.CreateTopics).length, 1, 'the topic was asked for again without retention');
});

test('a store that refuses -1 gets a compact-only topic with its own retention, which carrying keeps', async () => {
  const { harness, admin, writes } = setup({ upstreamRetention: { ms: '604800000', bytes: '-1' } });
  const run = forwarded(await create(harness, [topic('capped', { 'cleanup.policy': 'compact', 'min.cleanable.dirty.ratio': '0.1' })]));
  const answer = await run.respond({
    throttleTimeMs: 0,
    topics: [
      created('capped', {
        topicId: ZERO_UUID,
        errorCode: ErrorCode.POLICY_VIOLATION,
        errorMessage: 'topic capped: retention.ms=-1 caps retention at 604800000 ms',
      }),
    ],
  });
  assert.equal(answer.kind, 'forward');
  if (answer.kind !== 'forward') return;
  assert.equal(answer.body.topics[0]!.errorCode, ErrorCode.NONE);
  const again = admin
    .filter((a) => a.apiKey === ApiKey.CreateTopics)
    .map((a) => (a.body as { topics: { configs: { name: string }[] }[] }).topics[0]!.configs.map((c) => c.name));
  assert.deepEqual(again, [[]], 'asked again without retention.ms and retention.bytes');
  assert.equal(writes.length, 1, 'its configs are stored');
  assert.equal(admin.filter((a) => a.apiKey === ApiKey.DeleteTopics).length, 0);
});

for (const [what, retention, message] of [
  ['by size', { ms: '-1', bytes: '1000000' }, /set retention\.bytes=1000000 on topic shrunk: a store that drops records by size .*deleted again/],
  [
    'too briefly to carry',
    { ms: '20000', bytes: '-1' },
    /retention\.ms=20000; kcompact carries them at 0\.5 of that \(10000 ms\), leaving 10000 ms before they expire where a carry needs 60000 ms.*deleted again/,
  ],
] as const) {
  test(`an upstream that keeps a compact-only topic ${what} gets the topic deleted again`, async () => {
    const { harness, admin, writes } = setup({ upstreamRetention: retention });
    const run = forwarded(await create(harness, [topic('shrunk', { 'cleanup.policy': 'compact' })]));
    const answer = await run.respond({ throttleTimeMs: 0, topics: [created('shrunk')] });
    assert.equal(answer.kind, 'forward');
    if (answer.kind !== 'forward') return;
    const [r] = answer.body.topics;
    assert.equal(r!.errorCode, ErrorCode.INVALID_CONFIG);
    assert.match(r!.errorMessage!, message);
    assert.deepEqual(
      admin.filter((a) => a.apiKey === ApiKey.DeleteTopics).map((a) => a.body),
      [{ topics: [{ name: 'shrunk', topicId: ZERO_UUID }], timeoutMs: 1000 }],
    );
    assert.deepEqual(writes, []);
  });
}

test('a compact-only topic at whose carry age carryBytesPerSecond cannot write even the smallest pass is deleted again, with the numbers', async () => {
  // The store keeps it 300 s: carried at 150 s, in which 1 byte a second writes 150 bytes.
  const { ctx, harness, admin, writes } = setup({ upstreamRetention: { ms: '300000', bytes: '-1' } });
  ctx.carrying.bytesPerSecond = 1;
  const run = forwarded(await create(harness, [topic('slow', { 'cleanup.policy': 'compact' })]));
  const answer = await run.respond({ throttleTimeMs: 0, topics: [created('slow')] });
  assert.equal(answer.kind, 'forward');
  if (answer.kind !== 'forward') return;
  const [r] = answer.body.topics;
  assert.equal(r!.errorCode, ErrorCode.INVALID_CONFIG);
  assert.equal(
    r!.errorMessage,
    'the store keeps the records of topic slow for retention.ms=300000 and kcompact carries them at 0.5 of that (150000 ms), ' +
      'within which carryBytesPerSecond=1 lets a pass write 150 bytes, less than the 183 bytes of the smallest pass ' +
      "(a start marker, one copy, an end marker): not one record of the topic could be kept; raise carryBytesPerSecond or the store's retention; " +
      'the topic was deleted again',
  );
  assert.equal(admin.filter((a) => a.apiKey === ApiKey.DeleteTopics).length, 1);
  assert.deepEqual(writes, []);
});

test('any rate that fits the smallest pass in the carry age keeps the topic: its size is not known when it is created', async () => {
  const { ctx, harness, admin, writes } = setup({ upstreamRetention: { ms: '300000', bytes: '-1' } });
  ctx.carrying.bytesPerSecond = 2;
  const run = forwarded(await create(harness, [topic('slow', { 'cleanup.policy': 'compact', 'segment.bytes': '1073741824' })]));
  const answer = await run.respond({ throttleTimeMs: 0, topics: [created('slow')] });
  assert.equal(answer.kind, 'forward');
  if (answer.kind !== 'forward') return;
  assert.equal(answer.body.topics[0]!.errorCode, ErrorCode.NONE);
  assert.equal(admin.filter((a) => a.apiKey === ApiKey.DeleteTopics).length, 0);
  assert.equal(writes.length, 1);
});

test('a topic whose configs cannot be stored is deleted again and refused', async () => {
  const { harness, admin } = setup({ failWrites: new Error('not the leader') });
  const run = forwarded(await create(harness, [topic('lost', { 'cleanup.policy': 'compact' })]));
  const answer = await run.respond({ throttleTimeMs: 0, topics: [created('lost')] });
  assert.equal(answer.kind, 'forward');
  if (answer.kind !== 'forward') return;
  const [r] = answer.body.topics;
  assert.equal(r!.errorCode, ErrorCode.UNKNOWN_SERVER_ERROR);
  assert.match(r!.errorMessage!, /could not store the configs of topic lost .*not the leader.*the topic was deleted again/);
  assert.equal(r!.topicId, ZERO_UUID);
  assert.ok(admin.some((a) => a.apiKey === ApiKey.DeleteTopics));
});

test('without a usable configs topic, topics with owned configs are refused and the rest go on', async () => {
  const { harness } = setup({ unavailable: 'the upstream has no such topic' });
  const run = forwarded(await create(harness, [topic('wants', { 'cleanup.policy': 'compact' }), topic('plain')]));
  assert.deepEqual(
    run.body.topics.map((t) => t.name),
    ['plain'],
  );
  const answer = await run.respond({ throttleTimeMs: 0, topics: [created('plain')] });
  assert.equal(answer.kind, 'forward');
  if (answer.kind !== 'forward') return;
  assert.equal(answer.body.topics[0]!.errorCode, ErrorCode.POLICY_VIOLATION);
  assert.match(answer.body.topics[0]!.errorMessage!, /cannot keep topic configs in the upstream \(the upstream has no such topic\); list wants among/);
});

test("a static topic is created with its configured policy's upstream configs and nothing stored", async () => {
  const { harness, writes } = setup({ staticTopics: [{ topic: 'fixed', configs: { 'cleanup.policy': 'compact' } }] });
  const run = forwarded(await create(harness, [topic('fixed', { 'cleanup.policy': 'delete' })]));
  assert.deepEqual(configsOf({ body: run.body.topics }), [['retention.bytes=-1', 'retention.ms=-1']]);
  const answer = await run.respond({ throttleTimeMs: 0, topics: [created('fixed')] });
  assert.equal(answer.kind, 'forward');
  if (answer.kind !== 'forward') return;
  assert.equal(answer.body.topics[0]!.configs!.find((c) => c.name === 'cleanup.policy')!.value, 'compact');
  assert.deepEqual(writes, []);
});

test('configs left from an earlier topic of the name are dropped when it is created without owned configs', async () => {
  const { harness, writes, store } = setup();
  store('again', { 'cleanup.policy': 'compact' }, 'AAAAAAAAAAAAAAAAAAAAAg');
  const run = forwarded(await create(harness, [topic('again')]));
  await run.respond({ throttleTimeMs: 0, topics: [created('again')] });
  assert.deepEqual(writes, [{ topic: 'again', stored: null }]);
});

test('before v5 the answer carries no configs; a topic the upstream left out is reported', async () => {
  const { harness } = setup();
  const run = forwarded(await create(harness, [topic('old', { 'cleanup.policy': 'compact' }), topic('missing')], { version: 4 }));
  const answer = await run.respond({ throttleTimeMs: 0, topics: [{ name: 'old', errorCode: ErrorCode.NONE, errorMessage: null }] });
  assert.equal(answer.kind, 'forward');
  if (answer.kind !== 'forward') return;
  assert.deepEqual(
    answer.body.topics.map((t) => [t.name, t.errorCode, t.configs]),
    [
      ['old', ErrorCode.NONE, undefined],
      ['missing', ErrorCode.UNKNOWN_SERVER_ERROR, undefined],
    ],
  );
});
