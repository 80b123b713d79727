import assert from 'node:assert/strict';
import { test } from 'node:test';
import { decodeRequestHeader } from '../../../../src/protocol/headers.js';
import { ApiKey, decodeRequest, encodeRequestFrame, encodeResponseFrame, type MetadataResponse } from '../../../../src/protocol/messages.js';
import { Closing, FilterChain, FilterError } from '../../../../src/proxy/filter/filter-chain.js';
import type { Filter } from '../../../../src/proxy/filter/filter.js';
import { FilterHarness } from '../../../support/filter-harness.js';

const metadataRequest = (topics: string[]) => ({ topics: topics.map((name) => ({ name })), allowAutoTopicCreation: false });

function run(chain: FilterChain, topics: string[]) {
  const frame = encodeRequestFrame({ apiKey: ApiKey.Metadata, apiVersion: 12, correlationId: 5, clientId: 'c' }, metadataRequest(topics));
  return { frame, routed: chain.request(frame, decodeRequestHeader(frame.subarray(4)), true) };
}

test('two filters hook the same API: requests pass first to last, responses last to first', async () => {
  const seen: string[] = [];
  const tag = (name: string): Filter => ({
    name,
    apis: {
      [ApiKey.Metadata]: {
        onRequest: (req, ctx) => {
          seen.push(`${name} request ${req.body.topics!.map((t) => t.name).join(',')}`);
          req.body.topics!.push({ name, topicId: 'AAAAAAAAAAAAAAAAAAAAAA' });
          return ctx.forward({ body: req.body });
        },
        onResponse: (_res, ctx) => {
          seen.push(`${name} response`);
          return ctx.forward();
        },
      },
    },
  });
  const chain = new FilterChain([tag('a'), tag('b')]);
  const { routed } = run(chain, ['t']);
  const r = await routed;
  assert.equal(r.kind, 'forward');
  if (r.kind !== 'forward') return;
  const sent = decodeRequest(ApiKey.Metadata, 12, r.frame, 4 + decodeRequestHeader(r.frame.subarray(4)).bodyOffset!);
  assert.deepEqual(
    sent.topics!.map((t) => t.name),
    ['t', 'a', 'b'],
    'each filter saw the one before it and the change was encoded once',
  );
  await chain.response(ApiKey.Metadata, 12, 5, encodeResponseFrame(ApiKey.Metadata, 12, 5, { brokers: [], topics: [] }), null);
  assert.deepEqual(seen, ['a request t', 'b request t,a', 'b response', 'a response']);
});

test('an unchanged request and response go on as the very bytes that came', async () => {
  const passive: Filter = {
    name: 'passive',
    apis: { [ApiKey.Metadata]: { onRequest: (req, ctx) => (req.body.topics, ctx.forward()), onResponse: (res, ctx) => (res.body.brokers, ctx.forward()) } },
  };
  const { frame, routed } = run(new FilterChain([passive]), ['t']);
  const r = await routed;
  assert.ok(r.kind === 'forward' && r.frame === frame);
  const harness = new FilterHarness(passive);
  const res = await harness.response(ApiKey.Metadata, 12, { brokers: [{ nodeId: 1, host: 'h', port: 1, rack: null }], topics: [] });
  assert.ok(res.kind === 'forward' && !res.changed);
});

test('a filter that answers skips the filters after it and the upstream; the ones before see the answer', async () => {
  const seen: string[] = [];
  const before: Filter = {
    name: 'before',
    apis: {
      [ApiKey.Metadata]: {
        onResponse: (res, ctx) => {
          seen.push(`before saw local=${res.local} brokers=${res.body.brokers.length}`);
          const body: MetadataResponse = { ...res.body, clusterId: 'rewritten' };
          return ctx.forward(body);
        },
      },
    },
  };
  const answering: Filter = {
    name: 'answering',
    apis: { [ApiKey.Metadata]: { onRequest: (_req, ctx) => ctx.respond({ brokers: [{ nodeId: 1, host: 'h', port: 9, rack: null }], topics: [] }) } },
  };
  const after: Filter = {
    name: 'after',
    apis: {
      [ApiKey.Metadata]: {
        onRequest: (_req, ctx) => {
          seen.push('after ran');
          return ctx.forward();
        },
      },
    },
  };
  const r = await run(new FilterChain([before, answering, after]), []).routed;
  assert.equal(r.kind, 'respond');
  assert.deepEqual(seen, ['before saw local=true brokers=1']);
  if (r.kind === 'respond') assert.match(r.frame.toString('latin1'), /rewritten/);
});

test('a continuation sees its own request’s response and keeps the client’s version', async () => {
  const downgrade: Filter = { name: 'down', apis: { [ApiKey.Metadata]: { passThroughVersion: () => 9 } } };
  const watching: Filter = {
    name: 'watching',
    apis: {
      [ApiKey.Metadata]: {
        onRequest: (req, ctx) => {
          const asked = req.body.topics!.length;
          return ctx.forward({ response: (res, rctx) => rctx.forward({ ...res.body, clusterId: `asked ${asked}` }) });
        },
      },
    },
  };
  const plain = await run(new FilterChain([downgrade]), ['a']).routed;
  assert.ok(plain.kind === 'forward' && plain.upstreamVersion === 9 && plain.frame.readInt16BE(6) === 9, 'nobody reads the response: the pass-through version');
  const harness = new FilterHarness(watching);
  const chain = new FilterChain([downgrade, watching]);
  const r = await run(chain, ['a', 'b']).routed;
  assert.ok(r.kind === 'forward' && r.upstreamVersion === 12 && r.continuations?.length === 1);
  const req = await harness.request(ApiKey.Metadata, 12, metadataRequest(['a', 'b']));
  assert.ok(req.kind === 'forward' && req.awaitsResponse);
  if (req.kind !== 'forward') return;
  const res = await req.respond({ brokers: [], topics: [] });
  assert.ok(res.kind === 'forward' && res.changed && res.body.clusterId === 'asked 2');
});

test('asynchronous hooks keep their order; a failing one is named in the error', async () => {
  const slow: Filter = {
    name: 'slow',
    apis: {
      [ApiKey.Metadata]: {
        onRequest: async (req, ctx) => {
          await new Promise((r) => setTimeout(r, 5));
          return ctx.forward({ body: { ...req.body, allowAutoTopicCreation: true } });
        },
      },
    },
  };
  const failing: Filter = {
    name: 'failing',
    apis: {
      [ApiKey.Metadata]: {
        onRequest: (req) => {
          if (req.body.allowAutoTopicCreation) throw new Error('boom');
          throw new Error('ran before slow finished');
        },
      },
    },
  };
  await assert.rejects(
    run(new FilterChain([slow, failing]), ['t']).routed as Promise<unknown>,
    (err: unknown) => err instanceof FilterError && /filter failing failed on a Metadata request: boom/.test(err.message),
  );
});

test('close and closeAfter reach the connection; decoding is derived from the hooks and their versions', async () => {
  const closer: Filter = { name: 'closer', apis: { [ApiKey.Metadata]: { minVersion: 10, onRequest: (_r, ctx) => ctx.close('no', new Error('why')) } } };
  const chain = new FilterChain([closer]);
  const r = await run(chain, []).routed;
  assert.ok(r instanceof Closing && r.reason === 'no' && r.error?.message === 'why');
  assert.equal(chain.decodesRequest(ApiKey.Metadata, 9), false);
  assert.equal(chain.decodesRequest(ApiKey.Metadata, 10), true);
  assert.equal(chain.decodesResponse(ApiKey.Metadata, 12), false, 'a request hook alone does not decode responses');
  assert.deepEqual([...chain.decodedApis], [ApiKey.Metadata]);
  const after: Filter = { name: 'after', apis: { [ApiKey.Metadata]: { onRequest: (_r, ctx) => ctx.forward({ closeAfter: 'done' }) } } };
  const r2 = await run(new FilterChain([after]), []).routed;
  assert.ok(r2.kind === 'forward' && r2.closeAfter === 'done');
});
