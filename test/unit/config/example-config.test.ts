import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfigFile } from '../../../src/config/file.js';
import { envOf, flagOf, resolveConfig, SETTING_KEYS } from '../../../src/config/settings.js';

const configDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../../config');
const file = path.join(configDir, 'kcompact.json');

test('config/kcompact.json names every setting and holds the defaults', () => {
  const values = loadConfigFile(file);
  assert.deepEqual(Object.keys(values).sort(), [...SETTING_KEYS].sort());
  const fromFile = resolveConfig({}, {}, values);
  const fromDefaults = resolveConfig({ upstream: String(values.upstream) }, {}, {});
  assert.deepEqual(fromFile, fromDefaults);
});

test('config/README.md documents every setting with its flag and environment variable', () => {
  const readme = fs.readFileSync(path.join(configDir, 'README.md'), 'utf8');
  for (const key of SETTING_KEYS) {
    assert.ok(readme.includes(`| \`${key}\` | \`--${flagOf(key)}\` / \`${envOf(key)}\` |`), `README row for ${key}`);
  }
});

test('every example in config/examples passes the real configuration checks', () => {
  const examples = fs.readdirSync(path.join(configDir, 'examples')).filter((f) => f.endsWith('.json'));
  assert.deepEqual(examples.sort(), ['apache-kafka.json', 'event-hubs.json', 'kfake.json', 'no-admin-store.json', 'oci-streaming.json']);
  const readme = fs.readFileSync(path.join(configDir, 'examples', 'README.md'), 'utf8');
  for (const name of examples) {
    const file = loadConfigFile(path.join(configDir, 'examples', name));
    // Examples keep the SASL password out of the file: it comes from the environment.
    const env = file.upstreamSaslMechanism ? { KCOMPACT_UPSTREAM_SASL_PASSWORD: 'from-a-secret' } : {};
    const config = resolveConfig({}, env, file);
    assert.ok(config.upstream.length > 0, name);
    assert.ok(readme.includes(`(${name})`), `examples/README.md describes ${name}`);
  }
});
