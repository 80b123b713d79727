import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createLogger, setLogSink } from '../../../src/common/log.js';
import { reloadWatchedFiles, WatchedFiles } from '../../../src/common/watched-files.js';
import { UpstreamConnector, passwordOf } from '../../../src/upstream/upstream-connector.js';
import { makeTempDir } from '../../support/processes.js';
import { pollUntil } from '../../support/index.js';

/** Values "a+b" of two files; a file saying "bad" cannot be used. */
const joined = (contents: readonly Buffer[]) => {
  const text = contents.map((c) => c.toString().trim());
  if (text.includes('bad')) throw new Error('a file says bad');
  return text.join('+');
};

test('a change is read on the next file check; one that cannot be used keeps the previous value and says so', async () => {
  const temp = makeTempDir('kcompact-watched-');
  const lines: string[] = [];
  const previous = setLogSink((l) => lines.push(l));
  const [a, b] = ['a', 'b'].map((n) => path.join(temp.path, n)) as [string, string];
  fs.writeFileSync(a, 'one');
  fs.writeFileSync(b, 'two');
  const published: string[] = [];
  const files = new WatchedFiles([a, b], joined, { log: createLogger(), what: 'test files', intervalMs: 20, onReload: (v) => published.push(v) });
  try {
    assert.equal(files.value, 'one+two');
    fs.writeFileSync(b, 'bad');
    await pollUntil('the unusable change is reported', 10_000, async () =>
      lines.some((l) => l.includes('the test files changed but cannot be used; keeping the previous ones')) ? true : undefined,
    );
    assert.equal(files.value, 'one+two');
    fs.writeFileSync(b, 'three');
    await pollUntil('the change is read', 10_000, async () => (files.value === 'one+three' ? true : undefined));
    assert.deepEqual(published, ['one+three']);
    fs.rmSync(a);
    await pollUntil('a missing file is reported', 10_000, async () =>
      lines.some((l) => l.includes('cannot re-read the test files; keeping the previous ones')) ? true : undefined,
    );
    assert.equal(files.value, 'one+three');
  } finally {
    files.close();
    setLogSink(previous);
    temp.remove();
  }
});

test('a Kubernetes Secret volume update (a symlinked directory swapped for a new one) is seen', async () => {
  const temp = makeTempDir('kcompact-watched-');
  // What the kubelet does: files are links into ..data, itself a link to a timestamped directory.
  const version = (name: string, text: string) => {
    fs.mkdirSync(path.join(temp.path, name));
    fs.writeFileSync(path.join(temp.path, name, 'tls.crt'), text);
  };
  version('..v1', 'one');
  fs.symlinkSync('..v1', path.join(temp.path, '..data'));
  fs.symlinkSync('..data/tls.crt', path.join(temp.path, 'tls.crt'));
  const files = new WatchedFiles([path.join(temp.path, 'tls.crt')], joined, { log: createLogger(), what: 'secret', intervalMs: 20 });
  try {
    assert.equal(files.value, 'one');
    version('..v2', 'two');
    fs.symlinkSync('..v2', path.join(temp.path, '..data_tmp'));
    fs.renameSync(path.join(temp.path, '..data_tmp'), path.join(temp.path, '..data'));
    fs.rmSync(path.join(temp.path, '..v1'), { recursive: true });
    await pollUntil('the new version is read', 10_000, async () => (files.value === 'two' ? true : undefined));
  } finally {
    files.close();
    temp.remove();
  }
});

test('reloadWatchedFiles (SIGHUP) re-reads every open set at once; closed sets no more', () => {
  const temp = makeTempDir('kcompact-watched-');
  const file = path.join(temp.path, 'f');
  fs.writeFileSync(file, 'one');
  // A check interval far beyond the test: only the explicit reload can see the change.
  const open = new WatchedFiles([file], joined, { log: createLogger(), what: 'open', intervalMs: 3_600_000 });
  const closed = new WatchedFiles([file], joined, { log: createLogger(), what: 'closed', intervalMs: 3_600_000 });
  closed.close();
  try {
    fs.writeFileSync(file, 'two');
    reloadWatchedFiles();
    assert.equal(open.value, 'two');
    assert.equal(closed.value, 'one');
  } finally {
    open.close();
    temp.remove();
  }
});

test('the SASL password comes from the setting or from its file, without the line break a file ends with', () => {
  const temp = makeTempDir('kcompact-watched-');
  const file = path.join(temp.path, 'password');
  fs.writeFileSync(file, 'p4ss word\n');
  const fromFile = new UpstreamConnector({ sasl: { mechanism: 'PLAIN', username: 'u', passwordFile: file } }, createLogger());
  try {
    assert.deepEqual(fromFile.credentials(), { mechanism: 'PLAIN', username: 'u', password: 'p4ss word' });
    fs.writeFileSync(file, 'rotated\r\n');
    reloadWatchedFiles();
    assert.equal(fromFile.credentials()?.password, 'rotated');
  } finally {
    fromFile.close();
    temp.remove();
  }
  assert.equal(
    new UpstreamConnector({ sasl: { mechanism: 'SCRAM-SHA-512', username: 'u', password: 'given' } }, createLogger()).credentials()?.password,
    'given',
  );
  assert.equal(UpstreamConnector.plaintext.credentials(), undefined);
  assert.equal(passwordOf(Buffer.from('a\n\n')), 'a\n', 'only one trailing line break is dropped');
});
