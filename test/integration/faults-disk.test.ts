/**
 * The key index's storage fails: a rebuild or a wait, never a wrong answer. `kcompact proxy`
 * processes in front of kfake, with a compacted topic written straight to the upstream (keyed
 * records, updates and tombstones).
 *
 * - A corrupt index file: pages overwritten with garbage, the file cut in half, its first page
 *   garbage (each while the proxy is stopped), its WAL deleted after a SIGKILL, and pages
 *   overwritten while the proxy runs. The restarted proxy finds the damage and rebuilds from
 *   the upstream; its index then equals one rebuilt from scratch (a proxy on an empty data
 *   directory) table by table, and so does its compacted view.
 * - A full disk (the data directory on a small tmpfs, filled up): the proxy stays up, says once
 *   per partition what happened and what to do, serves the partitions it cannot index past what
 *   it indexed unfiltered (nothing hidden that it did not see), survives a SIGKILL and restart
 *   while the disk is still full, and once space returns resumes by itself: its index then
 *   equals one rebuilt from scratch.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test, type TestContext } from 'node:test';
import { seededRng } from '../unit/protocol/sample-body.js';
import { topicIndexFile } from '../../src/engine/store/index-files.js';
import {
  assertSameCompaction,
  compactedModel,
  indexedTo,
  partitionsOf,
  readThrough,
  readUpstream,
  cleanFully,
  type UpstreamLog,
} from '../support/compaction-checks.js';
import { franzProduce, makeTempDir, pollUntil, requirePeers, runProcess, startKfake, type RunningKfake } from '../support/index.js';
import { startCliProxy, type CliProxy, type LogLine } from '../support/kcompact-cli.js';

const PARTITIONS = 4;
const KEYS = 300;

function topicConfigs(topics: string[], more: Record<string, string>): string {
  const configs = { 'cleanup.policy': 'compact', 'segment.ms': '100', 'min.cleanable.dirty.ratio': '0.01', ...more };
  return JSON.stringify(topics.map((topic) => ({ topic, configs })));
}

/** `rounds` rounds of keyed records with updates and tombstones, straight to the upstream, in separate virtual segments. */
async function produceRounds(kfake: RunningKfake, topic: string, from: number, rounds: number): Promise<void> {
  for (let r = 0; r < rounds; r++) {
    await franzProduce(kfake.bootstrap, {
      topic,
      count: 500,
      start: (from + r) * 500,
      keys: KEYS,
      tombstoneEvery: 7,
      valueSize: 100,
      createPartitions: PARTITIONS,
    });
  }
}

/** Deterministic garbage, so a failure replays. */
function garbage(random: () => number, bytes: number): Buffer {
  const b = Buffer.alloc(bytes);
  for (let i = 0; i < bytes; i++) b[i] = Math.floor(random() * 256);
  return b;
}

/** Overwrites every `every`-th page of a file from page `first` (1-based) on with garbage. */
function overwritePages(file: string, first: number, every: number, random: () => number): number {
  const fd = fs.openSync(file, 'r+');
  let pages = 0;
  try {
    const size = fs.fstatSync(fd).size;
    for (let page = first; (page - 1) * 4096 < size; page += every, pages++) fs.writeSync(fd, garbage(random, 4096), 0, 4096, (page - 1) * 4096);
  } finally {
    fs.closeSync(fd);
  }
  return pages;
}

async function sigkill(proxy: CliProxy): Promise<void> {
  process.kill(-proxy.pid, 'SIGKILL');
  await proxy.waitExit(10_000);
  await proxy.stop();
}

async function sigterm(proxy: CliProxy): Promise<void> {
  process.kill(proxy.pid, 'SIGTERM');
  assert.deepEqual(await proxy.waitExit(30_000), { code: 0, signal: null });
  await proxy.stop();
}

/** What the proxy logged rebuilding: a whole file (its topic), or one partition. */
const rebuilds = (logs: LogLine[]) =>
  logs
    .filter((l) => /^(index file unusable|index file damaged|partition index unusable)/.test(l.msg) || l.msg === 'resetting partition index')
    .map((l) => (l.partition === undefined ? `file of ${String(l.topic)}` : `${String(l.topic)}-${String(l.partition)}`));

test('a corrupt index file is found and rebuilt from the upstream, and the view stays right', { timeout: 300_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const topic = 'corrupt';
  const args = ['--topics', topicConfigs([topic], { 'delete.retention.ms': '0' }), '--cleaner-backoff-ms', '100'];
  const random = seededRng(20261129);
  const kfake = await startKfake({ brokers: 1 });
  const data = makeTempDir('kcompact-faults-corrupt-');
  const dataDir = path.join(data.path, 'proxy');
  const file = topicIndexFile(dataDir, topic);
  let proxy: CliProxy | undefined;
  let fresh: CliProxy | undefined;
  const reference = async (log: UpstreamLog) => {
    await fresh?.stop();
    fresh = await startCliProxy({ upstream: kfake.bootstrap, dataDir: path.join(data.path, `fresh-${Date.now()}`), args });
    await assertSameCompaction(topic, log, proxy!, fresh, 'expired');
  };
  try {
    await produceRounds(kfake, topic, 0, 4);
    proxy = await startCliProxy({ upstream: kfake.bootstrap, dataDir, args });
    let log = await readUpstream(kfake.bootstrap, topic);
    await indexedTo(proxy, topic, log.highWatermarks);
    await cleanFully(proxy, topic);

    // Stopped cleanly (the WAL is checkpointed into the file), then damaged, one way at a time.
    const damages: [string, () => void][] = [
      ['every third page overwritten', () => void overwritePages(file, 2, 3, random)],
      ['cut in half', () => fs.truncateSync(file, Math.floor(fs.statSync(file).size / 2))],
      ['first page overwritten', () => void overwritePages(file, 1, 1000, random)],
    ];
    for (const [what, damage] of damages) {
      await sigterm(proxy);
      damage();
      proxy = await startCliProxy({ upstream: kfake.bootstrap, dataDir, args });
      assert.deepEqual(rebuilds(proxy.logs()), [`file of ${topic}`], `the file ${what} is found when it is opened`);
      await reference(log);
    }

    // Killed with transactions in the WAL, which is then deleted: the file goes back to what
    // its last checkpoint wrote, which is either consistent (an older index, indexing resumes
    // from there) or not (rebuilt).
    await produceRounds(kfake, topic, 4, 2);
    log = await readUpstream(kfake.bootstrap, topic);
    await indexedTo(proxy, topic, log.highWatermarks);
    await cleanFully(proxy, topic);
    await sigkill(proxy);
    const wal = fs.existsSync(`${file}-wal`);
    if (wal) fs.rmSync(`${file}-wal`);
    t.diagnostic(`WAL ${wal ? 'deleted' : 'already gone'} after SIGKILL`);
    proxy = await startCliProxy({ upstream: kfake.bootstrap, dataDir, args });
    await reference(log);

    // Damaged while the proxy runs: SQLite notices when it reads a damaged page (the file is
    // rebuilt at once) or the next start does; meanwhile the view stays right.
    overwritePages(file, 2, 2, random);
    await produceRounds(kfake, topic, 6, 2);
    log = await readUpstream(kfake.bootstrap, topic);
    await indexedTo(proxy, topic, log.highWatermarks);
    const cleaned = await cleanFully(proxy, topic);
    const model = compactedModel(log, cleaned, 'expired');
    assert.deepEqual(await readThrough(proxy, topic, model.length), model, 'the view while the file is damaged');
    await sigkill(proxy);
    proxy = await startCliProxy({ upstream: kfake.bootstrap, dataDir, args });
    await reference(log);
    t.diagnostic(`rebuilt after the damage while running: ${rebuilds(proxy.logs()).join(', ') || 'nothing (SQLite wrote the damaged pages over)'}`);
    assert.deepEqual(
      proxy.logs().filter((l) => l.level === 'error'),
      [],
      'a damaged index is a warning, not an error',
    );
  } finally {
    await fresh?.stop();
    await proxy?.stop();
    await kfake.stop();
    data.remove();
  }
});

/** Mounts a tmpfs of `size` on a new temp dir; returns it, or why it could not. */
async function smallFilesystem(size: string): Promise<{ dir: string; unmount: () => Promise<void> } | { failed: string }> {
  const temp = makeTempDir('kcompact-faults-tmpfs-');
  const r = await runProcess('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'kcompact-faults', temp.path]);
  if (r.code !== 0) {
    temp.remove();
    return {
      failed: `mount -t tmpfs failed (exit ${r.code}): ${r.stderr.trim()} (the full-disk test needs root, or CAP_SYS_ADMIN, to mount a small filesystem)`,
    };
  }
  return {
    dir: temp.path,
    unmount: async () => {
      await runProcess('umount', ['-l', temp.path]);
      temp.remove();
    },
  };
}

/** Writes a file until the filesystem is full; returns its path. */
function fillUp(dir: string): string {
  const filler = path.join(dir, 'filler');
  const fd = fs.openSync(filler, 'w');
  try {
    for (const chunk of [Buffer.alloc(1 << 20, 0x66), Buffer.alloc(4096, 0x66), Buffer.alloc(1, 0x66)]) {
      try {
        for (;;) fs.writeSync(fd, chunk);
      } catch (err) {
        if ((err as { code?: string }).code !== 'ENOSPC') throw err;
      }
    }
  } finally {
    fs.closeSync(fd);
  }
  return filler;
}

function needTmpfs(t: TestContext, reason: string): void {
  if (process.env.CI) throw new Error(reason);
  t.skip(reason);
}

test('a full disk: the proxy waits and says what to do, serves nothing it did not index as removed, and resumes by itself', { timeout: 300_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const fsys = await smallFilesystem('16m');
  if ('failed' in fsys) return needTmpfs(t, fsys.failed);
  const [topic, later] = ['full', 'full-later'];
  // Tombstones outlive the test, so any number of cleans leaves the same survivors; records
  // become cleanable 5 s after they were written, so that the cleaner meets the full disk.
  const configs = { 'delete.retention.ms': '86400000', 'min.compaction.lag.ms': '5000' };
  const args = ['--topics', topicConfigs([topic, later], configs), '--cleaner-backoff-ms', '300'];
  const kfake = await startKfake({ brokers: 1 });
  const data = makeTempDir('kcompact-faults-full-');
  const dataDir = path.join(fsys.dir, 'data');
  let proxy: CliProxy | undefined;
  let fresh: CliProxy | undefined;
  const logs: LogLine[] = [];
  try {
    await produceRounds(kfake, topic, 0, 3);
    proxy = await startCliProxy({ upstream: kfake.bootstrap, dataDir, args });
    await indexedTo(proxy, topic, (await readUpstream(kfake.bootstrap, topic)).highWatermarks);
    await produceRounds(kfake, topic, 3, 2);
    // Indexed, not yet cleanable (min.compaction.lag.ms) when the disk fills.
    const indexedBeforeFull = (await readUpstream(kfake.bootstrap, topic)).highWatermarks;
    await indexedTo(proxy, topic, indexedBeforeFull);

    const filler = fillUp(fsys.dir);
    await produceRounds(kfake, topic, 5, 2);
    await produceRounds(kfake, later, 0, 1);
    await pollUntil('every partition stuck on the full disk', 30_000, async () => {
      const parts = await partitionsOf(proxy!, topic);
      return parts.length === PARTITIONS && parts.every((p) => /full/.test(p.lastError ?? '')) ? true : undefined;
    });
    await pollUntil('the cleaner meets the full disk', 30_000, async () =>
      proxy!.logs().some((l) => /storage of a partition index failed; cleaning waits/.test(l.msg)) ? true : undefined,
    );

    // What the proxy serves while the disk is full: what it indexed and cleaned, and everything
    // past that as the upstream has it; the topic it could not start an index for, unfiltered.
    const servesRightly = async (what: string) => {
      const log = await readUpstream(kfake.bootstrap, topic);
      await pollUntil(`${what}: the view is what the index holds, plus everything past it`, 30_000, async () => {
        const cleaned = (await partitionsOf(proxy!, topic)).map((p) => p.cleanedUpTo);
        const model = compactedModel(log, cleaned, 'kept');
        const view = await readThrough(proxy!, topic, model.length);
        const still = (await partitionsOf(proxy!, topic)).map((p) => p.cleanedUpTo);
        if (JSON.stringify(still) !== JSON.stringify(cleaned)) return undefined;
        assert.deepEqual(view, model, what);
        return true;
      });
      const laterLog = await readUpstream(kfake.bootstrap, later);
      assert.deepEqual(await readThrough(proxy!, later, laterLog.records.length), laterLog.records, `${what}: ${later} unfiltered`);
    };
    await servesRightly('disk full');
    assert.equal(proxy.exitStatus(), undefined, 'still running');
    assert.equal((await proxy.http('/livez')).status, 200);

    // Killed and started again while the disk is still full: it comes up and serves the same way.
    logs.push(...proxy.logs());
    await sigkill(proxy);
    proxy = await startCliProxy({ upstream: kfake.bootstrap, dataDir, args });
    await pollUntil('the restarted proxy is stuck on the full disk too', 30_000, async () =>
      (await partitionsOf(proxy!, topic)).every((p) => /full/.test(p.lastError ?? '')) ? true : undefined,
    );
    // Its cleaner too, before the disk is freed: only then can it say that cleaning resumed.
    await pollUntil('the restarted cleaner meets the full disk too', 30_000, async () =>
      proxy!.logs().some((l) => /storage of a partition index failed; cleaning waits/.test(l.msg)) ? true : undefined,
    );
    await servesRightly('disk full, after a restart');

    fs.rmSync(filler);
    const log = await readUpstream(kfake.bootstrap, topic);
    await indexedTo(proxy, topic, log.highWatermarks);
    const laterLog = await readUpstream(kfake.bootstrap, later);
    await indexedTo(proxy, later, laterLog.highWatermarks);
    await pollUntil('the cleaner cleans by itself what the full disk held up', 30_000, async () => {
      const parts = await partitionsOf(proxy!, topic);
      return parts.every((p) => !p.uncleanable && p.cleanedUpTo >= indexedBeforeFull[p.partition]!) ? true : undefined;
    });
    logs.push(...proxy.logs());
    assert.equal(proxy.exitStatus(), undefined, 'still running');

    const stuck = logs.filter((l) => /storage of a partition index failed/.test(l.msg));
    assert.ok(stuck.length > 0, 'the full disk is logged');
    for (const l of stuck) {
      assert.equal(l.level, 'error');
      assert.match(String(l.fix), /free space on the filesystem holding .*needs no restart/, JSON.stringify(l));
      assert.match(l.msg, /indexing of the partition waits|cleaning waits/);
    }
    const said = new Map<string, number>();
    for (const l of stuck) {
      const what = `${/cleaning/.test(l.msg) ? 'cleaning' : 'indexing'} ${l.topic}-${l.partition}`;
      said.set(what, (said.get(what) ?? 0) + 1);
    }
    assert.ok(
      [...said.values()].every((n) => n <= 2),
      `said once per partition, task and run (two runs), not on every retry: ${JSON.stringify([...said])}`,
    );
    assert.ok(
      logs.some((l) => /indexing resumed/.test(l.msg)),
      'and that indexing resumed',
    );
    assert.ok(
      logs.some((l) => /cleaning resumed/.test(l.msg)),
      'and cleaning',
    );
    t.diagnostic(`while full: ${stuck.length} storage errors logged (${[...said.keys()].join(', ')}), e.g. ${JSON.stringify(stuck[0])}`);

    fresh = await startCliProxy({ upstream: kfake.bootstrap, dataDir: path.join(data.path, 'fresh'), args });
    await assertSameCompaction(topic, log, proxy, fresh, 'kept');
    await assertSameCompaction(later, laterLog, proxy, fresh, 'kept');
  } finally {
    await fresh?.stop();
    await proxy?.stop();
    await kfake.stop();
    data.remove();
    await fsys.unmount();
  }
});
