import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Health } from '../../../src/ops/health/health.js';
import { Reply, type Route } from '../../../src/ops/management-server.js';
import type { Reachability } from '../../../src/ops/health/upstream-reachability.js';

interface ProbeAnswer {
  status: number;
  body: { status: string; checks?: Record<string, { ok: boolean; detail: string }> };
}

async function probe(routes: Map<string, Route>, path: string): Promise<ProbeAnswer> {
  const reply = (await routes.get(`GET ${path}`)!(new URL(`http://x${path}`))) as Reply;
  assert.ok(reply instanceof Reply);
  return { status: reply.status, body: JSON.parse(reply.body) };
}

test('startup, readiness and shutdown as Kubernetes probes see them', async () => {
  let listening = true;
  let upstream: Reachability = { ok: true, detail: 'connected 5 ms ago' };
  let upstreamChecks = 0;
  const health = new Health({
    listening: () => listening,
    upstream: {
      check: async () => {
        upstreamChecks++;
        return upstream;
      },
    },
  });
  const routes = new Map(health.routes());

  assert.equal((await probe(routes, '/livez')).status, 200);
  assert.equal((await probe(routes, '/startupz')).status, 503, 'starting: index recovery not done');
  const starting = await probe(routes, '/readyz');
  assert.equal(starting.status, 503);
  assert.equal(starting.body.checks!.started!.ok, false);
  assert.equal(upstreamChecks, 0, 'the upstream is not probed while another check fails');

  health.markStarted();
  assert.equal((await probe(routes, '/startupz')).status, 200);
  const ready = await probe(routes, '/readyz');
  assert.deepEqual([ready.status, ready.body.status], [200, 'ready']);
  assert.equal(ready.body.checks!.upstream!.detail, 'connected 5 ms ago');

  upstream = { ok: false, detail: 'no upstream bootstrap address accepts connections' };
  const unreachable = await probe(routes, '/readyz');
  assert.deepEqual([unreachable.status, unreachable.body.checks!.upstream!.ok], [503, false]);
  upstream = { ok: true, detail: 'back' };

  listening = false;
  assert.equal((await probe(routes, '/readyz')).body.checks!.listeners!.ok, false);
  listening = true;

  health.markStopping();
  const stopping = await probe(routes, '/readyz');
  assert.deepEqual([stopping.status, stopping.body.status, stopping.body.checks!.shutdown!.ok], [503, 'not ready', false]);
  assert.equal((await probe(routes, '/livez')).status, 200, 'shutting down is no reason to restart');
  assert.equal((await probe(routes, '/startupz')).status, 200);
});
