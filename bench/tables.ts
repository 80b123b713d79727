/**
 * The table API (docs/tables.md) against the store it sits on, in one run: three kcompact
 * replicas (their own processes) in front of one Kafka 4.4 broker (or kfake), and
 *
 * - GET of a warm key, from khttp (a Go client, so the client is not what limits it): latency one
 *   at a time (p50, p99), and throughput with concurrent connections
 *   per CPU second of the replica's process, beside a bare node:http server answering the same
 *   JSON on this machine in the same run (the floor any HTTP API in node stands on);
 * - a write's latency: PUT, and PUT with If-Match, each one after the other, beside a plain
 *   produce (kafkajs, acks=all) of the same record straight to the store, the three kinds taking
 *   turns so that the machine's noise falls on each alike;
 * - compare-and-set throughput: 8 writers per partition, spread over the 3 replicas, each reading
 *   its partition's key and writing it If-Match, for 1, 2 and 4 partitions: writes that won and
 *   writes tried, per second.
 *
 * Prints figures and ratios; asserts nothing.
 *
 *   node dist/bench/tables.js [--store kafka|kfake] [--gets 5000] [--writes 500] [--seconds 10]
 *     [--cpu-prof DIR]
 */
import { spawn } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { parseArgs } from 'node:util';
import kafkajs from 'kafkajs';
import { freePort, runProcess, startKafka, startKfake, tail } from '../test/support/index.js';
import { binDir } from '../test/support/paths.js';
import { printHelpAndExit } from './bench-help.js';
import { numberFlags } from './number-flag.js';
import { benchDirs } from './bench-dirs.js';
import { profileReport, profileThreadId } from './cpu-profile.js';
import { cpuSeconds } from './proc-stats.js';
import { startProxyProcess, type RunningProxyProcess } from './proxy-process.js';
import { table } from './text-table.js';

const OPTIONS = {
  store: { type: 'string', default: 'kafka' },
  keys: { type: 'string', default: '1000' },
  gets: { type: 'string', default: '5000' },
  readers: { type: 'string', default: '16' },
  writes: { type: 'string', default: '500' },
  writers: { type: 'string', default: '8' },
  seconds: { type: 'string', default: '10' },
  'cpu-prof': { type: 'string' },
  help: { type: 'boolean', default: false },
} as const;

const HELP: Record<keyof typeof OPTIONS, string> = {
  store: 'kafka (Kafka 4.4, compaction off) or kfake',
  keys: 'keys written before the reads',
  gets: 'GETs timed one at a time; four times as many in the throughput run',
  readers: 'concurrent connections in the throughput run',
  writes: 'writes timed one at a time, per kind',
  writers: 'compare-and-set writers per partition',
  seconds: 'length of each compare-and-set run',
  'cpu-prof': "write the reading replica's CPU profiles here and report where its main thread's time went",
  help: 'print the flags',
};

const { values } = parseArgs({ options: OPTIONS });
if (values.help) printHelpAndExit('node dist/bench/tables.js [flags]', OPTIONS, HELP);
const number = numberFlags(values);
const KEYS = number('keys');
const GETS = number('gets');
const READERS = number('readers');
const WRITES = number('writes');
const WRITERS = number('writers');
const SECONDS = number('seconds');
const TOPIC = 'bench-table';
const khttpBin = path.join(binDir, 'khttp');
const PARTITIONS = [1, 2, 4];

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

type Latency = { p50: number; p99: number };

function latencies(ms: number[]): Latency {
  const sorted = [...ms].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99) };
}

const fmt = (ms: number) => ms.toFixed(2);

/** Kept-alive connections, as an application's HTTP client holds them: a connection per request would time TCP's handshake. */
const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });

function httpRequest(
  hostPort: string,
  route: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; body: string }> {
  const at = hostPort.lastIndexOf(':');
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: hostPort.slice(0, at), port: Number(hostPort.slice(at + 1)), path: route, method: opts.method ?? 'GET', headers: opts.headers, agent },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}

/** Times `n` calls of `f`, one after the other. */
interface KhttpResult {
  latencyMs: { p50: number; p99: number };
  requests: number;
  perSecond: number;
}

/** One run of khttp (test/peers/go/cmd/khttp) against `url`, "{i}" walking `keys` key indexes. */
async function khttp(url: string, keys: number, counts: { warmup?: number; latency?: number; requests?: number }): Promise<KhttpResult> {
  const argv = ['--url', url, '--keys', String(keys), '--connections', String(READERS)];
  argv.push('--warmup', String(counts.warmup ?? 0), '--latency', String(counts.latency ?? 0), '--requests', String(counts.requests ?? 0));
  const r = await runProcess(khttpBin, argv, { timeoutMs: 600_000 });
  const line = r.stdout.trimEnd().split('\n').pop() ?? '';
  if (r.code !== 0 || !line.startsWith('{')) throw new Error(`khttp ${argv.join(' ')} exited ${r.code ?? r.signal}: ${tail(r.stdout, 5)} ${tail(r.stderr)}`);
  return JSON.parse(line) as KhttpResult;
}

/** GETs per second from `READERS` connections at once, and per CPU second of the answering process `pid`. */
async function khttpRate(pid: number | undefined, url: string, keys: number): Promise<{ perSecond: number; perCpuSecond: number }> {
  const before = pid === undefined ? null : cpuSeconds(pid);
  const run = await khttp(url, keys, { requests: GETS * 4 });
  const cpu = pid === undefined || before === null ? NaN : (cpuSeconds(pid) ?? 0) - before;
  return { perSecond: run.perSecond, perCpuSecond: cpu > 0 ? run.requests / cpu : NaN };
}

/** A bare node:http server answering a fixed JSON body, in a process of its own: the floor of any HTTP API in node. */
async function bareServer(body: string): Promise<{ address: string; pid: number; close: () => Promise<void> }> {
  const port = await freePort();
  const source = `require('node:http').createServer((req, res) => { req.resume(); res.setHeader('content-type', 'application/json'); res.end(${JSON.stringify(body)}); }).listen(${port}, '127.0.0.1');`;
  const child = spawn(process.execPath, ['-e', source], { stdio: 'ignore' });
  const address = `127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      await httpRequest(address, '/');
      break;
    } catch (err) {
      if (i > 100) throw err;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  return { address, pid: child.pid!, close: () => new Promise((resolve) => child.once('exit', () => resolve()).kill()) };
}

interface Replica {
  proxy: RunningProxyProcess;
  tables: string;
}

const { profDir } = benchDirs(values);
const readerProfile = profDir('reader');

async function startReplicas(upstream: string, nodeId: number): Promise<Replica[]> {
  const replicas: Replica[] = [];
  for (let i = 0; i < 3; i++) {
    const tables = `127.0.0.1:${await freePort()}`;
    const proxy = await startProxyProcess(upstream, nodeId, {
      args: ['--tables-listen', tables, '--carrier-group', 'bench-tables'],
      ...(i === 0 && { cpuProfDir: readerProfile }),
    });
    replicas.push({ proxy, tables });
  }
  return replicas;
}

const keyPath = (key: string, partition: number, query = '') => `/v1/topics/${TOPIC}/keys/${key}?partition=${partition}${query}`;

async function getOffset(replica: Replica, key: string, partition: number): Promise<number | null> {
  const res = await httpRequest(replica.tables, keyPath(key, partition));
  if (res.status === 404) return null;
  if (res.status !== 200) throw new Error(`GET ${key}: ${res.status} ${res.body}`);
  return (JSON.parse(res.body) as { offset: number }).offset;
}

async function put(
  replica: Replica,
  key: string,
  partition: number,
  value: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; offset?: number }> {
  const res = await httpRequest(replica.tables, keyPath(key, partition), { method: 'PUT', headers, body: value });
  return { status: res.status, ...(res.status === 200 && { offset: (JSON.parse(res.body) as { offset: number }).offset }) };
}

/** `writers` read-then-CAS loops per partition, spread over the replicas, for `seconds`: wins and tries per second. */
async function casRun(replicas: Replica[], partitions: number, writers: number, seconds: number): Promise<{ won: number; tried: number }> {
  const until = performance.now() + seconds * 1000;
  let won = 0;
  let tried = 0;
  await Promise.all(
    Array.from({ length: partitions * writers }, async (_, w) => {
      const partition = w % partitions;
      const replica = replicas[w % replicas.length]!;
      for (let seq = 0; performance.now() < until; seq++) {
        const current = await getOffset(replica, 'cas', partition);
        const headers: Record<string, string> = current === null ? { 'if-none-match': '*' } : { 'if-match': String(current) };
        const res = await put(replica, 'cas', partition, `w${w}-${seq}`, headers);
        tried++;
        if (res.status === 200) won++;
        else if (res.status !== 412) throw new Error(`CAS write answered ${res.status}`);
      }
    }),
  );
  return { won: won / seconds, tried: tried / seconds };
}

const kafka = values.store === 'kfake' ? undefined : await startKafka({ compaction: 'off' });
const kfake = kafka ? undefined : await startKfake({ brokers: 1 });
const store = (kafka ?? kfake)!.bootstrap;
const nodeId = kafka ? 1 : 0;
const replicas = await startReplicas(store, nodeId);
const client = new kafkajs.Kafka({ clientId: 'bench-tables', brokers: [store], logLevel: kafkajs.logLevel.NOTHING });
const producer = client.producer({ allowAutoTopicCreation: false });
try {
  const admin = new kafkajs.Kafka({ clientId: 'bench-tables', brokers: [replicas[0]!.proxy.bootstrap], logLevel: kafkajs.logLevel.NOTHING }).admin();
  await admin.connect();
  await admin.createTopics({
    waitForLeaders: true,
    topics: [{ topic: TOPIC, numPartitions: Math.max(...PARTITIONS), configEntries: [{ name: 'cleanup.policy', value: 'compact' }] }],
  });
  await admin.disconnect();
  await producer.connect();
  const value = 'v'.repeat(100);
  for (let k = 0; k < KEYS; k += 500) {
    const messages = Array.from({ length: Math.min(500, KEYS - k) }, (_, i) => ({ key: `key-${k + i}`, value, partition: 0 }));
    await producer.send({ topic: TOPIC, acks: -1, messages });
  }

  // Reads: every key once to warm the replica, then timed by khttp (Go), so the client is not what limits them.
  const reader = replicas[0]!;
  for (let i = 0; i < KEYS; i++) await getOffset(reader, `key-${i}`, 0);
  const keyUrl = `http://${reader.tables}${keyPath('key-{i}', 0)}`;
  const getLatency = (await khttp(keyUrl, KEYS, { latency: GETS })).latencyMs;
  const getRate = await khttpRate(reader.proxy.proc.pid, keyUrl, KEYS);
  const sample = await httpRequest(reader.tables, keyPath('key-0', 0));
  const bare = await bareServer(sample.body);
  const bareUrl = `http://${bare.address}/`;
  const bareLatency = (await khttp(bareUrl, 1, { latency: GETS })).latencyMs;
  const bareRate = await khttpRate(bare.pid, bareUrl, 1);
  await bare.close();

  // Writes: a plain produce, a PUT and a PUT with If-Match, one after the other, interleaved so that the machine's moods fall on all three alike.
  let last = (await put(reader, 'chain', 0, value)).offset!;
  const writeKinds: (() => Promise<void>)[] = [
    async () => void (await producer.send({ topic: TOPIC, acks: -1, messages: [{ key: `w-${written}`, value, partition: 0 }] })),
    async () => void (await put(reader, `w-${written}`, 0, value)),
    async () => {
      const res = await put(reader, 'chain', 0, value, { 'if-match': String(last) });
      if (res.status !== 200) throw new Error(`a lone If-Match write answered ${res.status}`);
      last = res.offset!;
    },
  ];
  let written = 0;
  const writeTimes: number[][] = writeKinds.map(() => []);
  for (let i = 0; i < WRITES; i++) {
    for (let j = 0; j < writeKinds.length; j++) {
      const kind = (i + j) % writeKinds.length;
      const started = performance.now();
      await writeKinds[kind]!();
      writeTimes[kind]!.push(performance.now() - started);
      written++;
    }
  }
  const [produceLatency, putLatency, casLatency] = writeTimes.map(latencies) as [Latency, Latency, Latency];

  const cas: string[][] = [];
  for (const p of PARTITIONS) {
    const run = await casRun(replicas, p, WRITERS, SECONDS);
    cas.push([
      String(p),
      String(p * WRITERS),
      Math.round(run.won).toLocaleString('en'),
      Math.round(run.tried).toLocaleString('en'),
      (run.won / run.tried).toFixed(2),
    ]);
  }

  console.log(`table API on ${kafka ? 'Kafka 4.4' : 'kfake'}, 3 replicas, ${KEYS} keys, localhost`);
  console.log('\nGET of a warm key');
  console.log(
    table([
      ['', 'p50 ms', 'p99 ms', `per second (${READERS} readers)`, 'per CPU second'],
      [
        'table API',
        fmt(getLatency.p50),
        fmt(getLatency.p99),
        Math.round(getRate.perSecond).toLocaleString('en'),
        Math.round(getRate.perCpuSecond).toLocaleString('en'),
      ],
      [
        'bare node:http',
        fmt(bareLatency.p50),
        fmt(bareLatency.p99),
        Math.round(bareRate.perSecond).toLocaleString('en'),
        Math.round(bareRate.perCpuSecond).toLocaleString('en'),
      ],
      [
        'ratio',
        (getLatency.p50 / bareLatency.p50).toFixed(2),
        (getLatency.p99 / bareLatency.p99).toFixed(2),
        (getRate.perSecond / bareRate.perSecond).toFixed(2),
        (getRate.perCpuSecond / bareRate.perCpuSecond).toFixed(2),
      ],
    ]),
  );
  console.log('\nA write, one after the other');
  console.log(
    table([
      ['', 'p50 ms', 'p99 ms', 'p50 / produce', 'p99 / produce'],
      ['produce (kafkajs, acks=all)', fmt(produceLatency.p50), fmt(produceLatency.p99), '1.00', '1.00'],
      ['PUT', fmt(putLatency.p50), fmt(putLatency.p99), (putLatency.p50 / produceLatency.p50).toFixed(2), (putLatency.p99 / produceLatency.p99).toFixed(2)],
      [
        'PUT If-Match',
        fmt(casLatency.p50),
        fmt(casLatency.p99),
        (casLatency.p50 / produceLatency.p50).toFixed(2),
        (casLatency.p99 / produceLatency.p99).toFixed(2),
      ],
    ]),
  );
  console.log(`\nCompare-and-set, ${WRITERS} writers per partition over 3 replicas, ${SECONDS} s each`);
  console.log(table([['partitions', 'writers', 'won per second', 'tried per second', 'won / tried'], ...cas]));
} finally {
  await producer.disconnect().catch(() => {});
  for (const r of replicas) await r.proxy.stop().catch(() => {});
  await (kafka ?? kfake)!.stop();
}
if (readerProfile) {
  const title = "CPU profile of the reading replica's main thread (the whole run: reads, writes, compare-and-set)";
  console.log('\n' + profileReport(readerProfile, { title, files: (name) => profileThreadId(name) === 0 }));
}
