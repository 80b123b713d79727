/**
 * The table API as a user meets it (docs/tables.md): a `kcompact proxy` process with
 * --tables-listen over kfake, its routes over HTTP, `kcompact get` and `put`, and a change stream,
 * on a compacted topic, a topic that is not compacted and one that does not exist.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import kafkajs from 'kafkajs';
import { freePort, pollUntil, requirePeers, startKfake } from '../support/index.js';
import { startCliProxy, type CliProxy } from '../support/kcompact-cli.js';
import { httpRequest } from '../support/http-request.js';

const main = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/cli/main.js');
const TOPIC = 'http-table';

/** The first `n` lines of an NDJSON change stream, then the stream is closed. */
function streamLines(address: string, route: string, n: number, timeoutMs: number): Promise<unknown[]> {
  const at = address.lastIndexOf(':');
  return new Promise((resolve, reject) => {
    const lines: unknown[] = [];
    let rest = '';
    const req = http.get({ host: address.slice(0, at), port: Number(address.slice(at + 1)), path: route, agent: false }, (res) => {
      if (res.statusCode !== 200) reject(new Error(`change stream answered ${res.statusCode}`));
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        rest += chunk;
        let nl: number;
        while ((nl = rest.indexOf('\n')) >= 0) {
          const line = rest.slice(0, nl).trim();
          rest = rest.slice(nl + 1);
          if (line) lines.push(JSON.parse(line));
          if (lines.length >= n) {
            req.destroy();
            resolve(lines);
            return;
          }
        }
      });
    });
    req.on('error', (err) => (lines.length >= n ? undefined : reject(err)));
    setTimeout(() => {
      req.destroy();
      reject(new Error(`only ${lines.length} of ${n} lines within ${timeoutMs} ms`));
    }, timeoutMs).unref();
  });
}

test('the table API over HTTP and the command line, on a real proxy', { timeout: 180_000 }, async (t) => {
  if (!requirePeers(t)) return;
  const kfake = await startKfake({ brokers: 1 });
  let proxy: CliProxy | undefined;
  try {
    const tables = `127.0.0.1:${await freePort()}`;
    proxy = await startCliProxy({ upstream: kfake.bootstrap, args: ['--tables-listen', tables] });
    const admin = new kafkajs.Kafka({ clientId: 'tables-http', brokers: [proxy.bootstrap], logLevel: kafkajs.logLevel.NOTHING }).admin();
    await admin.connect();
    await admin.createTopics({
      waitForLeaders: true,
      topics: [
        { topic: TOPIC, numPartitions: 3, configEntries: [{ name: 'cleanup.policy', value: 'compact' }] },
        { topic: 'plain', numPartitions: 1 },
      ],
    });
    await admin.disconnect();
    const key = (k: string, q = '') => `/v1/topics/${TOPIC}/keys/${encodeURIComponent(k)}${q}`;
    const json = (body: string) => JSON.parse(body) as Record<string, unknown>;

    // A write lands where the Java client's default partitioner puts the key.
    const put = await pollUntil('the first write', 30_000, async () => {
      const res = await httpRequest(tables, key('user/1'), { method: 'PUT', body: 'hello' });
      return res.status === 200 ? json(res.body) : undefined;
    });
    const javaPartition = kafkajs.Partitioners.DefaultPartitioner()({
      topic: TOPIC,
      partitionMetadata: [0, 1, 2].map((partitionId) => ({ partitionId, leader: 0, partitionErrorCode: 0, replicas: [0], isr: [0] })),
      message: { key: 'user/1', value: 'hello' },
    });
    assert.equal(put.partition, javaPartition);
    const got = json((await httpRequest(tables, key('user/1', `?min_offset=${put.offset}`))).body);
    assert.deepEqual([got.key, got.value, got.partition, got.offset], ['user/1', 'hello', put.partition, put.offset]);

    // Compare-and-set: a create-once that loses, an update from the offset read, a conditional delete.
    const lost = await httpRequest(tables, key('user/1'), { method: 'PUT', headers: { 'if-none-match': '*' }, body: 'again' });
    assert.equal(lost.status, 412, lost.body);
    assert.equal(json(lost.body).current, put.offset);
    const updated = await httpRequest(tables, key('user/1'), { method: 'PUT', headers: { 'if-match': String(put.offset) }, body: 'v2' });
    assert.equal(updated.status, 200, updated.body);
    const v2 = json(updated.body).offset as number;
    const stale = await httpRequest(tables, key('user/1'), { method: 'DELETE', headers: { 'if-match': String(put.offset) } });
    assert.equal(stale.status, 412, stale.body);
    const deleted = await httpRequest(tables, key('user/1'), { method: 'DELETE', headers: { 'if-match': String(v2) } });
    assert.equal(deleted.status, 200, deleted.body);
    const gone = await httpRequest(tables, key('user/1', `?min_offset=${json(deleted.body).offset}`));
    assert.equal(gone.status, 404, gone.body);

    // The change stream from the start: the winners, the tombstone marked deleted.
    const lines = (await streamLines(tables, `/v1/topics/${TOPIC}/changes?from=0&partition=${put.partition}&format=ndjson`, 3, 30_000)) as Record<
      string,
      unknown
    >[];
    assert.deepEqual(
      lines.map((l) => [l.offset, l.value, l.deleted ?? false]),
      [
        [put.offset, 'hello', false],
        [v2, 'v2', false],
        [json(deleted.body).offset, null, true],
      ],
    );

    // Topics the table API does not serve.
    assert.equal((await httpRequest(tables, `/v1/topics/plain/keys/k`)).status, 409);
    assert.equal((await httpRequest(tables, `/v1/topics/no-such-topic/keys/k`)).status, 404);

    // The command line against the same listener.
    const cli = (args: string[], input?: string) =>
      spawnSync(process.execPath, [main, ...args, '--tables-url', `http://${tables}`], { encoding: 'utf8', input });
    const putCli = cli(['put', TOPIC, 'cli-key', '-'], 'from stdin');
    assert.equal(putCli.status, 0, putCli.stderr);
    const getCli = cli(['get', TOPIC, 'cli-key']);
    assert.equal(getCli.status, 0, getCli.stderr);
    assert.equal(getCli.stdout, 'from stdin');
    assert.equal(cli(['put', TOPIC, 'cli-key', 'x', '--if-none-match']).status, 1, 'a lost create-once exits 1');
  } finally {
    await proxy?.stop();
    await kfake.stop();
  }
});
