import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, resolveConfig } from '../../../src/config/settings.js';

test('the table API listener: off unless set, loopback without a token, elsewhere only with a usable token file, on a port of its own', () => {
  const temp = fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-tables-settings-'));
  try {
    const base = resolveConfig({ upstream: 'a:1' }, {}, {});
    assert.equal(base.tablesListen, undefined, 'off by default');
    assert.equal(base.tablesTokenFile, undefined);
    for (const host of ['127.0.0.1', 'localhost', '[::1]']) {
      assert.deepEqual(resolveConfig({ upstream: 'a:1', tablesListen: `${host}:9646` }, {}, {}).tablesListen?.port, 9646, host);
    }
    const token = path.join(temp, 'token');
    fs.writeFileSync(token, 'dG9rZW4tb2YtdGhlLXRhYmxlcy1saXN0ZW5lcg==\n');
    const open = resolveConfig({ upstream: 'a:1' }, { KCOMPACT_TABLES_LISTEN: '0.0.0.0:9646', KCOMPACT_TABLES_TOKEN_FILE: token }, {});
    assert.deepEqual([open.tablesListen, open.tablesTokenFile], [{ host: '0.0.0.0', port: 9646 }, token]);
    assert.deepEqual(
      resolveConfig({}, {}, { upstream: 'a:1', tablesListen: '127.0.0.1:9700' }).tablesListen,
      { host: '127.0.0.1', port: 9700 },
      'the config-file key',
    );

    const short = path.join(temp, 'short');
    fs.writeFileSync(short, 'abc');
    const cases: [Record<string, unknown>, RegExp][] = [
      [
        { tablesListen: '0.0.0.0:9646' },
        /--tables-listen \/ KCOMPACT_TABLES_LISTEN \/ config key "tablesListen" is 0\.0\.0\.0:9646, reachable beyond this machine, and no --tables-token-file .* is set: .*keep it on loopback/,
      ],
      [{ tablesListen: '10.0.0.5:9646' }, /reachable beyond this machine/],
      [{ tablesTokenFile: token }, /--tables-token-file .* only applies with --tables-listen/],
      [{ tablesListen: '127.0.0.1:9645' }, /config key "tablesListen" and .*config key "adminListen" both name port 9645/],
      [{ tablesListen: '127.0.0.1:9644' }, /config key "tablesListen" and .*config key "metricsListen" both name port 9644/],
      [{ tablesListen: '0.0.0.0:9092', tablesTokenFile: token }, /config key "tablesListen" and .*config key "listen" both name port 9092/],
      [{ tablesListen: 'nonsense' }, /invalid --tables-listen/],
      [{ tablesListen: '127.0.0.1:9646', tablesTokenFile: path.join(temp, 'missing') }, /invalid --tables-token-file .*\(ENOENT\)/],
      [{ tablesListen: '0.0.0.0:9646', tablesTokenFile: short }, /config key "tablesTokenFile": .*short: the token has 3 characters; use at least 16/],
    ];
    for (const [cli, pattern] of cases) {
      assert.throws(
        () => resolveConfig({ upstream: 'a:1', ...cli }, {}, {}),
        (err: unknown) => err instanceof ConfigError && pattern.test(err.message),
        String(pattern),
      );
    }
  } finally {
    fs.rmSync(temp, { recursive: true, force: true });
  }
});
