import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, resolveConfig } from '../../../../src/config/settings.js';
import { registryEndpoint } from '../../../../src/engine/api/registry-url.js';

const base = { upstream: 'a:1' };

function refused(cli: Record<string, unknown>, env: Record<string, string>, file: Record<string, unknown>, message: RegExp): void {
  assert.throws(
    () => resolveConfig(cli, env, file),
    (err: unknown) => err instanceof ConfigError && message.test(err.message),
    String(message),
  );
}

describe('keyIdentity and schemaRegistryUrl settings', () => {
  it('default to exact bytes for every topic and no registry', () => {
    const config = resolveConfig(base, {}, {});
    assert.deepEqual(config.keyIdentity, {});
    assert.equal(config.schemaRegistryUrl, undefined);
    assert.equal(resolveConfig(base, {}, { schemaRegistryUrl: '' }).schemaRegistryUrl, undefined, 'an empty value in the file is no registry');
  });

  it('come from flags, the environment (JSON text) and the file (JSON values)', () => {
    const fromFlags = resolveConfig({ ...base, keyIdentity: '{"orders-*":"registry"}', schemaRegistryUrl: 'http://registry:8081/' }, {}, {});
    assert.deepEqual(fromFlags.keyIdentity, { 'orders-*': 'registry' });
    assert.equal(fromFlags.schemaRegistryUrl, 'http://registry:8081', 'without the trailing slash');
    const fromEnv = resolveConfig(
      base,
      { KCOMPACT_KEY_IDENTITY: '{"t":"payload"}', KCOMPACT_SCHEMA_REGISTRY_URL: 'https://u:p%40ss@reg.example/apis/ccompat/v7' },
      {},
    );
    assert.deepEqual(fromEnv.keyIdentity, { t: 'payload' });
    assert.equal(fromEnv.schemaRegistryUrl, 'https://u:p%40ss@reg.example/apis/ccompat/v7');
    const fromFile = resolveConfig(base, {}, { keyIdentity: { t: 'bytes', u: 'payload' } });
    assert.deepEqual(fromFile.keyIdentity, { t: 'bytes', u: 'payload' });
  });

  it('fail fast naming the key: bad JSON, unknown mode, bad glob, bad URL', () => {
    refused(
      { ...base, keyIdentity: '{"t":' },
      {},
      {},
      /invalid --key-identity \/ KCOMPACT_KEY_IDENTITY \/ config key "keyIdentity": expected a JSON object .*not valid JSON/,
    );
    refused(base, {}, { keyIdentity: ['t'] }, /config key "keyIdentity": expected a JSON object of topic names or globs to one of bytes, payload, registry/);
    refused(base, {}, { keyIdentity: { t: 'schema' } }, /config key "keyIdentity": topic pattern "t": unknown key identity "schema"/);
    refused(base, { KCOMPACT_KEY_IDENTITY: '{"t-?":"payload"}' }, {}, /KCOMPACT_KEY_IDENTITY .*only \* is a wildcard/);
    refused(
      { ...base, schemaRegistryUrl: 'registry:8081' },
      {},
      {},
      /invalid --schema-registry-url \/ KCOMPACT_SCHEMA_REGISTRY_URL \/ config key "schemaRegistryUrl": expected an http:\/\/ or https:\/\/ URL/,
    );
    refused({ ...base, schemaRegistryUrl: 'ftp://registry' }, {}, {}, /config key "schemaRegistryUrl": expected an http:\/\/ or https:\/\/ URL, not ftp:/);
    refused({ ...base, schemaRegistryUrl: 'http://registry/?x=1' }, {}, {}, /must not have a query or a fragment/);
  });

  it('"registry" without a registry URL fails, naming both keys', () => {
    refused(
      base,
      {},
      { keyIdentity: { 'orders-*': 'registry', t: 'payload' } },
      /invalid --key-identity .*"keyIdentity": "registry" \(for orders-\*\) decodes keys with the schema registry, but --schema-registry-url \/ KCOMPACT_SCHEMA_REGISTRY_URL \/ config key "schemaRegistryUrl" is not set/,
    );
    assert.deepEqual(resolveConfig(base, {}, { keyIdentity: { t: 'payload' } }).keyIdentity, { t: 'payload' }, 'payload needs no registry');
  });

  it('a bad URL is quoted back without its password', () => {
    assert.throws(
      () => resolveConfig({ ...base, schemaRegistryUrl: 'ftp://user:secret@registry' }, {}, {}),
      (err: unknown) => err instanceof ConfigError && err.message.includes('"ftp://***@registry"') && !err.message.includes('secret'),
    );
  });

  it('credentials in the URL become basic auth, and the URL the logs name has none', () => {
    assert.deepEqual(registryEndpoint('https://svc%2Bkc:p%40ss@reg.example:8443/apis/ccompat/v7'), {
      url: 'https://reg.example:8443/apis/ccompat/v7',
      auth: { username: 'svc+kc', password: 'p@ss' },
    });
    assert.deepEqual(registryEndpoint('http://127.0.0.1:8081'), { url: 'http://127.0.0.1:8081' });
  });
});
