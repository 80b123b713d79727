import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError, listenerTlsSettings, resolveConfig, upstreamSecuritySettings } from '../../../src/config/settings.js';
import { makeTempDir, type TempDir } from '../../support/processes.js';
import { createTestCa, type IssuedCert, type TestCa } from '../../support/tls-certs.js';

let temp: TempDir;
let ca: TestCa;
let server: IssuedCert;
let other: IssuedCert;
let passwordFile: string;
let emptyFile: string;
let garbageFile: string;

before(async () => {
  temp = makeTempDir('kcompact-security-settings-');
  ca = await createTestCa(temp.path, 'unit');
  server = await ca.issue('server');
  other = await ca.issue('other');
  passwordFile = path.join(temp.path, 'password');
  fs.writeFileSync(passwordFile, 'from-a-file\n');
  emptyFile = path.join(temp.path, 'empty');
  fs.writeFileSync(emptyFile, '\n');
  garbageFile = path.join(temp.path, 'garbage.pem');
  fs.writeFileSync(garbageFile, 'not a certificate\n');
});

after(() => temp?.remove());

test('by default: plaintext listeners, plaintext upstream with host names checked once TLS is on, no SASL', () => {
  const c = resolveConfig({ upstream: 'a:1' }, {}, {});
  assert.equal(listenerTlsSettings(c), undefined);
  assert.deepEqual(upstreamSecuritySettings(c), {});
  assert.equal(c.upstreamTls, false);
  assert.equal(c.upstreamTlsVerifyHostname, true);
});

test('TLS and SASL settings from flags, KCOMPACT_* variables and the config file', () => {
  const c = resolveConfig(
    { upstream: 'a:1', tlsCertFile: server.certFile },
    {
      KCOMPACT_TLS_KEY_FILE: server.keyFile,
      KCOMPACT_UPSTREAM_TLS: 'true',
      KCOMPACT_UPSTREAM_SASL_PASSWORD: 'from-the-environment',
    },
    {
      tlsClientCaFile: ca.caFile,
      upstreamTlsCaFile: ca.caFile,
      upstreamTlsServerName: 'kafka.internal',
      upstreamSaslMechanism: 'SCRAM-SHA-256',
      upstreamSaslUsername: 'kcompact',
    },
  );
  assert.deepEqual(listenerTlsSettings(c), { certFile: server.certFile, keyFile: server.keyFile, clientCaFile: ca.caFile });
  assert.deepEqual(upstreamSecuritySettings(c), {
    tls: { caFile: ca.caFile, serverName: 'kafka.internal', verifyHostname: true },
    sasl: { mechanism: 'SCRAM-SHA-256', username: 'kcompact', password: 'from-the-environment' },
  });
  const mutual = resolveConfig(
    { upstream: 'a:1', upstreamTls: 'true', upstreamTlsCertFile: other.certFile, upstreamTlsKeyFile: other.keyFile, upstreamTlsVerifyHostname: 'false' },
    {},
    { upstreamSaslMechanism: 'PLAIN', upstreamSaslUsername: 'kcompact', upstreamSaslPasswordFile: passwordFile },
  );
  assert.deepEqual(upstreamSecuritySettings(mutual), {
    tls: { certFile: other.certFile, keyFile: other.keyFile, verifyHostname: false },
    sasl: { mechanism: 'PLAIN', username: 'kcompact', passwordFile },
  });
});

test('settings that only work together, and files that cannot be used, stop the start naming the keys', () => {
  const secret = 'never-in-a-message';
  const cases: [Record<string, unknown>, Record<string, string>, Record<string, unknown>, RegExp][] = [
    [{ tlsCertFile: server.certFile }, {}, {}, /--tls-cert-file .*--tls-key-file .* go together/],
    [{ tlsClientCaFile: ca.caFile }, {}, {}, /--tls-client-ca-file .* needs .*--tls-cert-file/],
    [
      { tlsCertFile: server.certFile, tlsKeyFile: other.keyFile },
      {},
      {},
      /listener TLS files of .*tlsCertFile.*tlsKeyFile.* cannot be used together: .*key values mismatch/,
    ],
    [
      { tlsCertFile: server.certFile, tlsKeyFile: server.keyFile, tlsClientCaFile: garbageFile },
      {},
      {},
      /listener TLS files .*cannot be used together: the CA file holds no PEM certificate/,
    ],
    [
      { tlsCertFile: path.join(temp.path, 'missing.pem') },
      {},
      {},
      /invalid --tls-cert-file \/ KCOMPACT_TLS_CERT_FILE \/ config key "tlsCertFile": expected the path of a readable file \(ENOENT\)/,
    ],
    [{ upstreamTlsCaFile: ca.caFile }, {}, {}, /config key "upstreamTlsCaFile" only apply with --upstream-tls .* set to true/],
    [{ upstreamTlsVerifyHostname: 'false' }, {}, {}, /config key "upstreamTlsVerifyHostname" only apply with --upstream-tls/],
    [{ upstreamTls: 'true', upstreamTlsCertFile: other.certFile }, {}, {}, /--upstream-tls-cert-file .*--upstream-tls-key-file .* go together/],
    [
      { upstreamTls: 'true', upstreamTlsCaFile: garbageFile },
      {},
      {},
      /upstream TLS files of .*upstreamTlsCaFile.* cannot be used together: the CA file holds no PEM certificate/,
    ],
    [{ upstreamTls: 'yes' }, {}, {}, /config key "upstreamTls": expected true or false/],
    [{ upstreamSaslMechanism: 'GSSAPI' }, {}, {}, /config key "upstreamSaslMechanism": expected one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, got "GSSAPI"/],
    [{ upstreamSaslUsername: 'kcompact' }, {}, {}, /config key "upstreamSaslUsername" only apply with --upstream-sasl-mechanism/],
    [{}, { KCOMPACT_UPSTREAM_SASL_PASSWORD: secret }, {}, /config key "upstreamSaslPassword" only apply with --upstream-sasl-mechanism/],
    [{ upstreamSaslMechanism: 'PLAIN' }, { KCOMPACT_UPSTREAM_SASL_PASSWORD: secret }, {}, /--upstream-sasl-mechanism .* needs --upstream-sasl-username/],
    [{ upstreamSaslMechanism: 'PLAIN', upstreamSaslUsername: 'u' }, {}, {}, /needs exactly one of --upstream-sasl-password .*--upstream-sasl-password-file/],
    [
      { upstreamSaslMechanism: 'PLAIN', upstreamSaslUsername: 'u', upstreamSaslPasswordFile: passwordFile },
      { KCOMPACT_UPSTREAM_SASL_PASSWORD: secret },
      {},
      /needs exactly one of/,
    ],
    [
      { upstreamSaslMechanism: 'PLAIN', upstreamSaslUsername: 'u', upstreamSaslPasswordFile: emptyFile },
      {},
      {},
      /upstreamSaslPasswordFile.*is empty; write the password into it/,
    ],
    [{}, {}, { upstreamSaslPassword: { value: secret } }, /config key "upstreamSaslPassword": expected a non-empty string, got \(value hidden\)/],
  ];
  for (const [cli, env, file, pattern] of cases) {
    assert.throws(
      () => resolveConfig({ upstream: 'a:1', ...cli }, env, file),
      (err: unknown) => err instanceof ConfigError && pattern.test(err.message) && !err.message.includes(secret),
      String(pattern),
    );
  }
});
