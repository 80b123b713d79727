import { test } from 'node:test';
import assert from 'node:assert/strict';
import { renderInspect } from '../../../src/cli/commands/inspect.js';
import { renderStatus } from '../../../src/cli/commands/status.js';
import { ago, table } from '../../../src/cli/commands/render.js';
import type { PartitionDetail } from '../../../src/engine/api/engine-reports.js';
import { summarizeTopics } from '../../../src/ops/admin-reports.js';

const partition: PartitionDetail = {
  topic: 'table',
  partition: 0,
  topicId: '',
  leader: 0,
  nextOffset: 101,
  highWatermark: 101,
  lastStableOffset: 101,
  logStartOffset: 0,
  cleanedUpTo: 100,
  indexedRecords: 11,
  dirtyRatio: 0.25,
  tombstonesPending: 2,
  lastCleanMs: 9_000,
  lastPass: -1,
  lastPassMs: -1,
  carried: false,
  usedMs: -1,
  uncleanable: true,
  survivors: 10,
  firstUncleanable: 100,
  cleanBytes: 500,
  cleanableBytes: 0,
  segments: 2,
  keyIdentity: 'bytes',
};

test('tables align their columns', () => {
  assert.equal(
    table(
      ['A', 'LONG'],
      [
        ['xxx', '1'],
        ['y', '22'],
      ],
    ),
    'A    LONG\nxxx  1\ny    22\n',
  );
  assert.equal(ago(0, 10_000), 'never');
  assert.equal(ago(8_500, 10_000), '1.5 s ago');
});

test('status text shows the upstream, listeners, cleaner and a line per compacted topic', () => {
  const text = renderStatus(
    {
      source: 'proxy',
      dataDir: '/data',
      upstream: ['u:9092'],
      listeners: {
        bootstrap: '127.0.0.1:9092',
        advertisedHost: '127.0.0.1',
        brokers: [{ nodeId: 0, listen: '127.0.0.1:9093', advertised: '127.0.0.1:9093', upstream: 'u:9092' }],
        management: '127.0.0.1:9644',
        admin: { address: '127.0.0.1:9645', token: false },
        connections: 3,
      },
      cleaner: {
        lastRunMs: 0,
        maxDirtyRatio: 0.25,
        maxCompactionDelayMs: 0,
        maxCleanTimeMs: 0,
        cleansTotal: 4,
        reapedTotal: 90,
        uncleanable: [{ topic: 'table', partition: 0 }],
        backoffMs: 15000,
      },
      compactedTopics: summarizeTopics(['table', 'empty'], [partition]),
      partitions: [partition],
    },
    10_000,
  );
  for (const expected of ['0: 127.0.0.1:9093 -> u:9092', 'uncleanable: table-0', 'every 15,000 ms']) assert.ok(text.includes(expected), expected);
  for (const line of [/^upstream\s+u:9092$/m, /^metrics\s+127\.0\.0\.1:9644 \(probes, \/metrics\)$/m, /^admin\s+127\.0\.0\.1:9645 \(loopback, no token\)$/m])
    assert.match(text, line);
  assert.match(text, /^carrying\s+off \(carrier group none/m);
  const rows = text.trimEnd().split('\n').slice(-2);
  assert.match(rows[0]!, /^empty\s+0\s+0\s+0\s+0\.00\s+0\s+0\s+never$/);
  assert.match(rows[1]!, /^table\s+1\s+11\s+0\s+0\.25\s+2\s+1\s+1\.0 s ago$/);

  const group = { groupId: 'kcompact-carriers', memberId: 'm-1', generation: 4, leader: true };
  const stable = renderStatus(
    { source: 'proxy', carrierGroup: { ...group, state: 'stable', carried: [{ topic: 'table', partition: 0 }] }, compactedTopics: [], partitions: [] },
    0,
  );
  assert.match(stable, /^carrying\s+group kcompact-carriers, generation 4, leader, member m-1; carries 1: table-0$/m);
  const joining = renderStatus(
    {
      source: 'proxy',
      carrierGroup: { ...group, leader: false, state: 'joining', carried: [], lastError: 'JoinGroup of the carrier group answered GROUP_AUTHORIZATION_FAILED' },
      compactedTopics: [],
      partitions: [],
    },
    0,
  );
  assert.match(joining, /^carrying\s+group kcompact-carriers: joining \(generation 4\); last error: JoinGroup .*GROUP_AUTHORIZATION_FAILED$/m);
});

test('inspect text shows configs and each partition, and says when it read a data directory', () => {
  const text = renderInspect({ source: 'proxy', topic: 'table', configs: { 'cleanup.policy': 'compact' }, partitions: [partition] }, 10_000);
  assert.match(text, /cleanup\.policy {2}compact/);
  assert.match(text, /\n0\s+0\s+100\s+101\s+101\s+10\s+11\s+2\s+0\.25\s+2\s+1\.0 s ago\n/);
  assert.match(text, /partition 0: uncleanable/);
  assert.match(text, /keys compared by: bytes /);
  assert.match(renderInspect({ source: 'data-dir', topic: 'table', partitions: [partition] }, 10_000), /from the data directory, read-only/);
});
