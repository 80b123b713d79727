/**
 * The newcomer's path, as README.md writes it: `make run` (scripts/run-local.sh) brings up a
 * local upstream and kcompact, prints the bootstrap address and the metrics URL, and the README's
 * kcat walkthrough, run as written (only the ports differ), prints what the README says it does.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { freePortRun } from '../support/kcompact.js';
import { freePort, makeTempDir, pollUntil, requirePeers, runProcess, startBackground, tail, TEST_BED } from '../support/index.js';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const skip = requirePeers([...TEST_BED, 'kcat']);

/** The README's kcat walkthrough: its commands, and the output lines its comments promise. */
function walkthrough(): { commands: string; expected: string[] } {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const block = readme.slice(readme.indexOf('With kcat:')).match(/```sh\n([\s\S]*?)```/)?.[1];
  assert.ok(block, 'README.md has a kcat walkthrough after "With kcat:"');
  const lines = block.split('\n');
  const commands = lines.filter((l) => l.trim() !== '' && !l.startsWith('#')).join('\n');
  const expected = lines
    .filter((l) => l.startsWith('# o='))
    .map((l) =>
      l
        .slice(2)
        .replace(/\s+\(.*\)$/, '')
        .trimEnd(),
    );
  return { commands, expected };
}

test('make run starts an upstream and kcompact, and the README walkthrough prints what it says', { skip }, async () => {
  const { commands, expected } = walkthrough();
  assert.ok(expected.length >= 2);
  const listenPort = await freePortRun(4); // the bootstrap, then kfake's three brokers
  const upstreamPort = await freePortRun(3);
  const metrics = `127.0.0.1:${await freePort()}`;
  const admin = `127.0.0.1:${await freePort()}`;
  const temp = makeTempDir('kcompact-make-run-');
  const env = {
    ...process.env,
    KCOMPACT_LISTEN: `127.0.0.1:${listenPort}`,
    KCOMPACT_LOCAL_UPSTREAM_PORT: String(upstreamPort),
    KCOMPACT_METRICS_LISTEN: metrics,
    KCOMPACT_ADMIN_LISTEN: admin,
    KCOMPACT_DATA_DIR: path.join(temp.path, 'data'),
  };
  const stdoutFile = path.join(temp.path, 'stdout.log');
  const run = startBackground('bash', [path.join(root, 'scripts', 'run-local.sh')], {
    cwd: root,
    env,
    stdoutFile,
    stderrFile: path.join(temp.path, 'stderr.log'),
  });
  try {
    const gone = () => (run.exitStatus() ? `make run exited: ${tail(fs.readFileSync(path.join(temp.path, 'stderr.log'), 'utf8'))}` : undefined);
    await pollUntil(
      'kcompact started (/startupz)',
      60_000,
      async () => ((await fetch(`http://${metrics}/startupz`).catch(() => null))?.status === 200 ? true : undefined),
      gone,
    );
    const printed = fs.readFileSync(stdoutFile, 'utf8');
    assert.match(printed, new RegExp(`proxy bootstrap at 127\\.0\\.0\\.1:${listenPort}`), 'prints the bootstrap address');
    assert.ok(printed.includes(`http://${metrics}/metrics`), 'prints the metrics URL');
    assert.equal((await fetch(`http://${metrics}/metrics`)).status, 200, 'the metrics URL answers');
    assert.ok(printed.includes(`admin listener at ${admin}`), 'prints the admin address');

    const script = commands.replaceAll('127.0.0.1:9092', `127.0.0.1:${listenPort}`);
    const r = await runProcess('bash', ['-euo', 'pipefail', '-c', script], { cwd: root, env, timeoutMs: 120_000 });
    assert.equal(r.code, 0, `the walkthrough ran: ${r.stderr}`);
    const consumed = r.stdout
      .split('\n')
      .filter((l) => l.startsWith('o='))
      .map((l) => l.trimEnd());
    assert.deepEqual(consumed, expected);
  } finally {
    await run.stop(15_000);
    temp.remove();
  }
});
