/**
 * `kcompact get` and `kcompact put` as a user runs them, against a table API listener backed by the
 * in-memory index: output, conditions, stdin, and exit codes (0 done, 1 not found or condition
 * failed, 2 usage).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLogger } from '../../../src/common/log.js';
import { startTableServer, type TableServer } from '../../../src/tables/table-server.js';
import { FakeTables } from '../../support/fake-tables.js';

const main = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../src/cli/main.js');

let server: TableServer;
let url: string;

before(async () => {
  const tables = new FakeTables().topic('t', 2);
  server = await startTableServer({
    listen: { host: '127.0.0.1', port: 0 },
    deps: { reads: () => tables, partitions: tables, writer: tables, log: createLogger() },
  });
  url = `http://127.0.0.1:${server.address.port}`;
});

after(() => server.close());

function kcompact(args: string[], stdin?: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [main, ...args], { env: { ...process.env, KCOMPACT_TABLES_URL: url }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.stdin.end(stdin);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

test('put prints where the value went; get prints the value as it is', async () => {
  const put = await kcompact(['put', 't', 'user/1', 'hello world']);
  assert.deepEqual([put.code, put.stderr], [0, '']);
  assert.match(put.stdout, /^written: t-\d at offset 0\n$/);
  const get = await kcompact(['get', 't', 'user/1']);
  assert.deepEqual([get.code, get.stdout], [0, 'hello world']);
  const piped = await kcompact(['put', 't', 'bin', '-', '--json'], 'line 1\nline 2\n');
  assert.equal(piped.code, 0);
  const { partition } = JSON.parse(piped.stdout) as { partition: number };
  assert.equal((await kcompact(['get', 't', 'bin', '--partition', String(partition)])).stdout, 'line 1\nline 2\n');
  const json = JSON.parse((await kcompact(['get', 't', 'bin', '--json'])).stdout) as { value: string; offset: number };
  assert.equal(json.value, 'line 1\nline 2\n');
});

test('conditions: --if-none-match and --if-match, exit 1 with the current offset when they fail', async () => {
  assert.equal((await kcompact(['put', 't', 'cas', 'a', '--if-none-match'])).code, 0);
  const lost = await kcompact(['put', 't', 'cas', 'b', '--if-none-match']);
  assert.equal(lost.code, 1);
  assert.match(
    lost.stderr,
    /precondition failed: t key "cas" is at offset \d+; the write \(offset \d+\) is void\. Read the key again and retry with --if-match \d+/,
  );
  const current = /--if-match (\d+)/.exec(lost.stderr)![1]!;
  assert.equal((await kcompact(['put', 't', 'cas', 'c', '--if-match', current])).code, 0);
  assert.equal((await kcompact(['get', 't', 'cas'])).stdout, 'c');
  const deleted = await kcompact(['put', 't', 'cas', '--delete']);
  assert.match(deleted.stdout, /^deleted: t-\d at offset \d+\n$/);
  const missing = await kcompact(['get', 't', 'cas']);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /kcompact: t has no value for key "cas"/);
});

test('usage errors exit 2; an unreachable listener or unknown topic exits 1 saying what to check', async () => {
  for (const args of [
    ['put', 't', 'k'],
    ['put', 't', 'k', 'v', '--delete'],
    ['put', 't', 'k', 'v', '--if-match', 'x'],
    ['put', 't', 'k', 'v', '--if-match', '1', '--if-none-match'],
    ['get', 't', 'k', '--partition', '-1'],
    ['get', 't', 'k', '--tables-url', 'not a url'],
    ['get'],
  ]) {
    assert.equal((await kcompact(args)).code, 2, args.join(' '));
  }
  const unknown = await kcompact(['get', 'nope', 'k']);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /topic nope does not exist in the store; /);
  const down = await kcompact(['get', 't', 'k', '--tables-url', 'http://127.0.0.1:1']);
  assert.equal(down.code, 1);
  assert.match(down.stderr, /cannot reach the table API at http:\/\/127\.0\.0\.1:1 \(ECONNREFUSED\)/);
});
