/**
 * Compare-and-set under contention and faults (docs/tables.md): eight writers race on a few keys
 * through the table API of three replicas over kfake, reading a key and writing it with If-Match
 * (or If-None-Match when it has no value), while one replica is SIGKILLed and started again. The
 * checker then holds the log to what the writers were told:
 *
 * - per key, the winners form one chain: each one's If-Match is the previous winner's offset
 *   (If-None-Match where the key had no value), so no two writers won from the same offset;
 * - every write a writer was told won is a winner, every one it was told lost (412) is not;
 * - every replica, and one started afterwards from an empty data directory, shows Kafka
 *   consumers the same records (the winners) and answers the same latest value per key;
 * - a read after a write, naming the write's offset, never returns an older value (read your
 *   writes), on the replica written through and on another one.
 */
import assert from 'node:assert/strict';
import kafkajs from 'kafkajs';
import { test } from 'node:test';
import { freePort, pollUntil, requirePeers, startKfake } from '../support/index.js';
import { freePortRun } from '../support/kcompact.js';
import { startCliProxy, type CliProxy } from '../support/kcompact-cli.js';
import { httpRequest } from '../support/http-request.js';
import { readPartitionRaw } from '../support/raw-reader.js';

const TOPIC = 'cas-checked';
const KEYS = ['a', 'b', 'c'];
const WRITERS = 8;
const RUN_MS = 20_000;

interface Replica {
  proxy: CliProxy;
  tables: string;
  ports: { port: number; managementPort: number; adminPort: number; tables: number };
}

interface Outcome {
  key: string;
  /** The offset the write's If-Match named, or -1 for If-None-Match. */
  after: number;
  status: number;
  /** The offset the store gave the record, when the answer said. */
  offset?: number;
  writer: number;
}

async function startReplica(upstream: string, dataDir?: string, ports?: Replica['ports']): Promise<Replica> {
  const p = ports ?? { port: await freePortRun(5), managementPort: await freePort(), adminPort: await freePort(), tables: await freePort() };
  const proxy = await startCliProxy({
    upstream,
    port: p.port,
    managementPort: p.managementPort,
    adminPort: p.adminPort,
    ...(dataDir !== undefined && { dataDir }),
    args: ['--tables-listen', `127.0.0.1:${p.tables}`, '--carrier-group', 'tables-cas', '--index-on-demand', 'true'],
  });
  return { proxy, tables: `127.0.0.1:${p.tables}`, ports: p };
}

const keyPath = (key: string, query = '') => `/v1/topics/${TOPIC}/keys/${encodeURIComponent(key)}?partition=0${query}`;

async function get(replica: Replica, key: string, minOffset?: number): Promise<{ status: number; offset?: number; value?: string }> {
  const res = await httpRequest(replica.tables, keyPath(key, minOffset === undefined ? '' : `&min_offset=${minOffset}`));
  if (res.status !== 200) return { status: res.status };
  const body = JSON.parse(res.body) as { offset: number; value: string };
  return { status: 200, offset: body.offset, value: body.value };
}

test('CAS writers on three replicas, one killed mid-run: one chain per key, the same winners everywhere', { timeout: 300_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const kfake = await startKfake({ brokers: 1 });
  const replicas: Replica[] = [];
  const outcomes: Outcome[] = [];
  const stale: string[] = [];
  try {
    for (let i = 0; i < 3; i++) replicas.push(await startReplica(kfake.bootstrap));
    // The topic, compacted, through the Kafka listener of a replica (kcompact keeps its configs).
    const admin = new kafkajs.Kafka({ clientId: 'tables-cas', brokers: [replicas[0]!.proxy.bootstrap], logLevel: kafkajs.logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.createTopics({
      waitForLeaders: true,
      topics: [{ topic: TOPIC, numPartitions: 1, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }],
    });
    await admin.disconnect();

    const until = Date.now() + RUN_MS;
    let killed = false;
    const writer = async (w: number) => {
      let seq = 0;
      while (Date.now() < until) {
        const replica = replicas[(w + seq) % replicas.length]!;
        const key = KEYS[(w * 7 + seq) % KEYS.length]!;
        seq++;
        try {
          const current = await get(replica, key);
          if (current.status !== 200 && current.status !== 404) continue;
          const headers: Record<string, string> = current.status === 200 ? { 'if-match': String(current.offset) } : { 'if-none-match': '*' };
          const res = await httpRequest(replica.tables, keyPath(key), { method: 'PUT', headers, body: `w${w}-${seq}` });
          const body = res.body ? (JSON.parse(res.body) as { offset?: number }) : {};
          outcomes.push({
            key,
            after: current.status === 200 ? current.offset! : -1,
            status: res.status,
            ...(body.offset !== undefined && { offset: body.offset }),
            writer: w,
          });
          if (res.status === 200) {
            // Read your writes, here and on another replica.
            for (const r of [replica, replicas[(w + seq + 1) % replicas.length]!]) {
              const after = await get(r, key, body.offset);
              if (after.status === 200 && after.offset! < body.offset!) stale.push(`${key}: wrote ${body.offset}, read ${after.offset} through ${r.tables}`);
              if (after.status === 404) stale.push(`${key}: wrote ${body.offset}, read nothing through ${r.tables}`);
            }
          }
        } catch {
          // The replica was killed under the request: its outcome is unknown, the checker reads the log.
        }
      }
    };
    const killer = (async () => {
      await new Promise((resolve) => setTimeout(resolve, RUN_MS / 3));
      const victim = replicas[2]!;
      process.kill(-victim.proxy.pid, 'SIGKILL');
      await victim.proxy.waitExit(10_000);
      killed = true;
      replicas[2] = await startReplica(kfake.bootstrap, victim.proxy.dataDir, victim.ports);
    })();
    await Promise.all([...Array.from({ length: WRITERS }, (_, w) => writer(w)), killer]);
    assert.ok(killed);

    // The log as a Kafka consumer reads it through the first replica: the winners, with their conditions.
    const log = await readPartitionRaw(replicas[0]!.proxy.bootstrap, TOPIC, 0);
    const winners = new Map(log.records.map((r) => [r.offset, r]));
    for (const key of KEYS) {
      let previous = -1;
      for (const r of log.records.filter((x) => x.key === key)) {
        const ifMatch = r.headers.find(([k]) => k === 'kcompact.if-match')?.[1];
        const ifNone = r.headers.find(([k]) => k === 'kcompact.if-none-match')?.[1];
        if (previous < 0) assert.equal(ifNone, '*', `${key}@${r.offset}: the first winner was written only if the key had no value`);
        else assert.equal(Number(ifMatch), previous, `${key}@${r.offset}: the winner after ${previous} names it`);
        previous = r.offset;
      }
    }
    const won = outcomes.filter((o) => o.status === 200);
    const lost = outcomes.filter((o) => o.status === 412);
    assert.ok(won.length >= KEYS.length && lost.length > 0, `writers raced: ${won.length} won, ${lost.length} lost`);
    for (const o of won) assert.ok(winners.has(o.offset!), `${o.key}@${o.offset} was told it won and is in the log`);
    for (const o of lost) if (o.offset !== undefined) assert.ok(!winners.has(o.offset), `${o.key}@${o.offset} was told it lost and is not in the log`);
    const from = new Map<string, number>();
    for (const o of won) {
      const k = `${o.key}/${o.after}`;
      assert.ok(!from.has(k), `two writers won from ${k}`);
      from.set(k, o.offset!);
    }
    assert.deepEqual(stale, [], 'read your writes');
    t.diagnostic(
      `${outcomes.length} writes: ${won.length} won, ${lost.length} lost (412), ${outcomes.length - won.length - lost.length} other; ` +
        `${log.records.length} winners in the log; ${outcomes.filter((o) => o.status === 200).length} reads after writes checked twice`,
    );

    // Every replica, and one from an empty data directory, shows the same records and latest values.
    const fresh = await startReplica(kfake.bootstrap);
    replicas.push(fresh);
    const want = JSON.stringify(log.records.map((r) => [r.offset, r.key, r.value]));
    const latest = Object.fromEntries(KEYS.map((key) => [key, log.records.filter((r) => r.key === key).at(-1)?.offset]));
    for (const r of replicas) {
      await pollUntil(`${r.tables} shows the same records`, 60_000, async () => {
        const read = await readPartitionRaw(r.proxy.bootstrap, TOPIC, 0);
        return JSON.stringify(read.records.map((x) => [x.offset, x.key, x.value])) === want ? true : undefined;
      });
      for (const key of KEYS) assert.equal((await get(r, key)).offset, latest[key], `${r.tables}: the latest of ${key}`);
    }
  } finally {
    for (const r of replicas) await r.proxy.stop().catch(() => {});
    await kfake.stop();
  }
});
