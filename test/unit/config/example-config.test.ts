import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfigFile } from '../../../src/config/file.js';
import { resolveConfig, SETTINGS } from '../../../src/config/settings.js';

const file = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../config/kcompact.json');

test('config/kcompact.json names every setting and holds the defaults', () => {
  const values = loadConfigFile(file);
  assert.deepEqual(Object.keys(values).sort(), SETTINGS.map((s) => s.key).sort());
  const fromFile = resolveConfig({}, {}, values);
  const fromDefaults = resolveConfig({ upstream: String(values.upstream) }, {}, {});
  assert.deepEqual(fromFile, fromDefaults);
});
