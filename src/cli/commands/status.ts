/**
 * `kcompact status`: the proxy at a glance (upstream, listeners, compacted topics, cleaner), from
 * its management endpoint, or from its data directory when it is not running.
 */
import type { Command } from 'commander';
import type { StatusReport } from '../../ops/admin-reports.js';
import { CAPACITY_WARNING_RATIO, topicCapacities } from '../../engine/api/carry-capacity.js';
import { adminOptions, adminTarget, fromProxyOrDataDir, type AdminOptions } from './admin-target.js';
import { statusFromDataDir } from './data-dir.js';
import { ago, count, duration, plural, printJson, ratio, table } from './render.js';

/** The replica's part in carrying: its group, generation and the partitions it carries. */
function carrying(s: StatusReport): string {
  const g = s.carrierGroup;
  if (!g) return 'off (carrier group none: this replica never carries)';
  const role = g.leader ? ', leader' : '';
  if (g.state !== 'stable') {
    const why = g.lastError ? `; last error: ${g.lastError}` : '';
    return `group ${g.groupId}: joining (generation ${g.generation}${role})${why}`;
  }
  const carried = g.carried.length > 0 ? g.carried.map((p) => `${p.topic}-${p.partition}`).join(', ') : 'none';
  return `group ${g.groupId}, generation ${g.generation}${role}, member ${g.memberId}; carries ${count(g.carried.length)}: ${carried}`;
}

/** Which partitions this replica indexes, and why: it carries them, or its clients use them. */
function indexed(s: StatusReport): string {
  const carried = s.partitions.filter((p) => p.carried).length;
  const used = s.partitions.filter((p) => !p.carried).map((p) => `${p.topic}-${p.partition}`);
  const onDemand = used.length > 0 ? `: ${used.slice(0, 20).join(', ')}${used.length > 20 ? ', ...' : ''}` : '';
  return `${count(s.partitions.length)} partitions: ${count(carried)} carried here, ${count(used.length)} on demand of its clients${onDemand}`;
}

function size(bytes: number): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'];
  let n = bytes;
  let u = 0;
  for (; n >= 1024 && u < units.length - 1; u++) n /= 1024;
  return u === 0 ? `${count(n)} bytes` : `${n.toFixed(1)} ${units[u]}`;
}

/** Topics listed by name in the warning; the rest are counted. */
const WARNED_TOPICS = 10;

/**
 * Where carryBytesPerSecond cannot rewrite, or barely can, what this replica carries within the
 * carry ages (engine/api/carry-capacity.ts): the replica's figure, then each topic with its live
 * bytes, carry age and how long the rate takes to rewrite it.
 */
export function capacityWarnings(s: StatusReport): string[] {
  const c = s.carryCapacity;
  if (!c || c.ratio <= CAPACITY_WARNING_RATIO) return [];
  const verdict = c.ratio > 1 ? 'cannot rewrite' : 'have little room left to rewrite';
  const rate = `carryBytesPerSecond=${c.bytesPerSecond} (${size(c.bytesPerSecond)}/s)`;
  const lines = [
    `warning: at ${rate} this replica's carry passes ${verdict} the live bytes of the partitions it carries within their carry ages ` +
      `(capacity ratio ${ratio(c.ratio)}): a store that caps retention lets go the keys not rewritten in time (docs/operating.md, "When carrying cannot keep up")`,
  ];
  const topics = topicCapacities(c);
  for (const t of topics.slice(0, WARNED_TOPICS)) {
    lines.push(
      `warning: topic ${t.topic}: ${size(t.liveBytes)} live in ${plural(t.partitions, 'partition')} carried here, carry age ${duration(t.carryAfterMs)}; ` +
        `at ${rate} rewriting it takes ${duration((t.liveBytes * 1000) / c.bytesPerSecond)} (${ratio(t.ratio)} of the carry age)`,
    );
  }
  if (topics.length > WARNED_TOPICS) lines.push(`warning: and ${plural(topics.length - WARNED_TOPICS, 'more topic')} carried here`);
  return lines;
}

export function renderStatus(s: StatusReport, now: number): string {
  const out: string[] = [];
  const facts: [string, string][] = [];
  if (s.source === 'proxy') {
    facts.push(['upstream', (s.upstream ?? []).join(', ')]);
    if (s.listeners) {
      const l = s.listeners;
      facts.push(['bootstrap', `${l.bootstrap} (clients are told ${l.advertisedHost}), ${count(l.connections)} client connections`]);
      facts.push(['brokers', l.brokers.length > 0 ? l.brokers.map((b) => `${b.nodeId}: ${b.advertised} -> ${b.upstream}`).join(', ') : 'none discovered yet']);
      facts.push(['metrics', `${l.management} (probes, /metrics)`]);
      if (l.admin) facts.push(['admin', `${l.admin.address} (${l.admin.token ? 'bearer token required' : 'loopback, no token'})`]);
    }
    if (s.dataDir) facts.push(['data dir', s.dataDir]);
    if (s.cleaner) {
      const c = s.cleaner;
      const uncleanable = c.uncleanable.length > 0 ? c.uncleanable.map((u) => `${u.topic}-${u.partition}`).join(', ') : 'none';
      facts.push([
        'cleaner',
        `every ${count(c.backoffMs)} ms, last round ${ago(c.lastRunMs, now)}; ${count(c.cleansTotal)} cleans, ${count(c.reapedTotal)} records reaped; ` +
          `max dirty ratio ${ratio(c.maxDirtyRatio)}; uncleanable: ${uncleanable}`,
      ]);
    }
    facts.push(['carrying', carrying(s)]);
    facts.push(['indexed', indexed(s)]);
  } else {
    facts.push(['data dir', `${s.dataDir} (read-only: the proxy is not running; topics are those with an index)`]);
  }
  const width = Math.max(...facts.map(([k]) => k.length));
  for (const [k, v] of facts) out.push(`${k.padEnd(width)}  ${v}`);
  const warnings = capacityWarnings(s);
  if (warnings.length > 0) out.push('', ...warnings);
  out.push('');
  if (s.compactedTopics.length === 0) {
    out.push('no compacted topics');
  } else {
    out.push(
      table(
        ['TOPIC', 'PARTITIONS', 'INDEXED RECORDS', 'INDEX LAG', 'MAX DIRTY RATIO', 'TOMBSTONES PENDING', 'UNCLEANABLE', 'LAST CLEAN'],
        s.compactedTopics.map((t) => [
          t.topic,
          String(t.partitions),
          count(t.indexedRecords),
          count(t.indexLag),
          ratio(t.maxDirtyRatio),
          count(t.tombstonesPending),
          String(t.uncleanablePartitions),
          ago(t.lastCleanMs, now),
        ]),
      ).trimEnd(),
    );
  }
  return out.join('\n') + '\n';
}

export function addStatusCommand(program: Command): void {
  const command = program
    .command('status')
    .description('show the proxy: upstream, listeners, compacted topics and where indexing and cleaning stand')
    .addHelpText('after', '\nAsks the running proxy; when it does not answer and --data-dir is given, reads that directory read-only instead.');
  adminOptions(command, { dataDir: true }).action(async (opts: AdminOptions) => {
    const target = adminTarget(opts);
    const report = await fromProxyOrDataDir(
      target,
      () => target.endpoint.get<StatusReport>('/status'),
      (dataDir) => statusFromDataDir(dataDir),
    );
    if (target.json) printJson(report);
    else process.stdout.write(renderStatus(report, Date.now()));
  });
}
