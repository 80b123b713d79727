import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { reloadWatchedFiles } from '../../../src/common/watched-files.js';
import { createLogger, setLogSink } from '../../../src/common/log.js';
import { BearerToken, MIN_TOKEN_LENGTH, tokenOf } from '../../../src/ops/bearer-token.js';
import { makeTempDir } from '../../support/processes.js';

const TOKEN = 'c2VjcmV0LXRva2VuLW9mLWtjb21wYWN0Cg==';

test('a token file holds one bearer token: trailing line breaks ignored, empty, short or unsendable refused without quoting it', () => {
  assert.equal(tokenOf(Buffer.from(`${TOKEN}\n`)), TOKEN);
  assert.equal(tokenOf(Buffer.from(`${TOKEN}\r\n\n`)), TOKEN);
  assert.equal(tokenOf(Buffer.from('a'.repeat(MIN_TOKEN_LENGTH))), 'a'.repeat(MIN_TOKEN_LENGTH));
  const refused: [string, RegExp][] = [
    ['', /the file is empty/],
    ['\n\n', /the file is empty/],
    ['abcdefghijklmno', /has 15 characters; use at least 16/],
    ['two words in a token file', /only letters, digits and - \. _ ~ \+ \//],
    ['tokén-with-accents-áéíóú', /only letters/],
    ['abc=def-ghijklmnopq', /only letters/],
  ];
  for (const [contents, pattern] of refused) {
    assert.throws(
      () => tokenOf(Buffer.from(contents)),
      (err: Error) => pattern.test(err.message) && (contents.trim() === '' || !err.message.includes(contents.trim())),
      JSON.stringify(contents),
    );
  }
});

test('Authorization headers: missing, malformed, wrong and right; the scheme in any case; a rotated file replaces the token', () => {
  const temp = makeTempDir('kcompact-admin-token-');
  const previous = setLogSink(() => {});
  const file = path.join(temp.path, 'token');
  fs.writeFileSync(file, `${TOKEN}\n`);
  const token = new BearerToken(file, createLogger());
  try {
    for (const header of [undefined, '', 'Bearer', 'Bearer ', `Basic ${TOKEN}`, TOKEN]) assert.equal(token.check(header), 'missing', String(header));
    for (const header of [`Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(0, -1)}`, 'Bearer x', `Bearer ${TOKEN} extra`])
      assert.notEqual(token.check(header), 'ok', header);
    assert.equal(token.check(`Bearer ${TOKEN}x`), 'wrong');
    for (const header of [`Bearer ${TOKEN}`, `bearer ${TOKEN}`, `BEARER  ${TOKEN} `]) assert.equal(token.check(header), 'ok', header);

    const rotated = 'bmV3LXRva2VuLWFmdGVyLXJvdGF0aW9u';
    fs.writeFileSync(file, `${rotated}\n`);
    reloadWatchedFiles();
    assert.equal(token.check(`Bearer ${rotated}`), 'ok');
    assert.equal(token.check(`Bearer ${TOKEN}`), 'wrong', 'the old token is refused once the file changed');

    // A rotation caught half-written (empty file) keeps the token in force.
    fs.writeFileSync(file, '');
    reloadWatchedFiles();
    assert.equal(token.check(`Bearer ${rotated}`), 'ok');
  } finally {
    token.close();
    setLogSink(previous);
    temp.remove();
  }
});

test('a token file that cannot be read or holds no token stops the start', () => {
  const temp = makeTempDir('kcompact-admin-token-');
  try {
    assert.throws(() => new BearerToken(path.join(temp.path, 'missing'), createLogger()), /ENOENT/);
    fs.writeFileSync(path.join(temp.path, 'empty'), '\n');
    assert.throws(() => new BearerToken(path.join(temp.path, 'empty'), createLogger()), /the file is empty/);
  } finally {
    temp.remove();
  }
});
