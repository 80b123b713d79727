/**
 * TLS at both ends, against Kafka 4.4: clients reach `kcompact proxy` over TLS with client
 * certificates (mutual TLS), and the proxy reaches an SSL listener of Kafka that requires the
 * proxy's own client certificate, for the clients' connections and its own (configs, indexer,
 * fetch view). Certificates are made with openssl for each run; the listener's are rotated while
 * the proxy runs. Upstream verification (CA, host name) is exercised on an in-process proxy.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import type tls from 'node:tls';
import kafkajs from 'kafkajs';
import { ApiKey } from '../../src/protocol/messages.js';
import { createLogger, setLogLevel, setLogSink } from '../../src/common/log.js';
import { ProxyServer } from '../../src/proxy/server.js';
import { UpstreamConnector, type UpstreamTlsSettings } from '../../src/upstream/upstream-connector.js';
import { UpstreamReachability } from '../../src/ops/health/upstream-reachability.js';
import { freePortRun } from '../support/kcompact.js';
import { startCliProxy, type CliProxy } from '../support/kcompact-cli.js';
import {
  freePorts,
  kcat,
  makeTempDir,
  pollUntil,
  python,
  requirePeers,
  startKafka,
  TEST_BED,
  type ConsumeSummary,
  type RunningKafka,
  type TempDir,
} from '../support/index.js';
import { compactRound, ROUND_SURVIVORS } from '../support/compact-round.js';
import { RawConnection } from '../support/raw-client.js';
import { createTestCa, kafkaTlsListenerProperties, type IssuedCert, type TestCa } from '../support/tls-certs.js';

const skip = requirePeers([...TEST_BED, 'openssl']);

const TOPIC = 'tls-table';
let temp: TempDir;
let kafka: RunningKafka;
/** Kafka's SSL listener, which requires a client certificate from the upstream CA. */
let upstreamSsl: string;
let upstreamCa: TestCa;
let proxyCa: TestCa;
/** The proxy's client certificate towards Kafka (upstream CA). */
let proxyIdentity: IssuedCert;
let listenerCert: IssuedCert;
/** The files the proxy's listeners read; the rotation test overwrites them. */
let listenerFiles: { cert: string; key: string };
/** The application's client certificate towards the proxy (proxy CA). */
let appCert: IssuedCert;
let clientTls: tls.ConnectionOptions;
let cli: CliProxy;

const read = (file: string) => fs.readFileSync(file);

before(async () => {
  if (skip) return;
  temp = makeTempDir('kcompact-tls-');
  upstreamCa = await createTestCa(temp.path, 'upstream');
  proxyCa = await createTestCa(temp.path, 'proxy');
  const broker = await upstreamCa.issue('broker');
  proxyIdentity = await upstreamCa.issue('kcompact');
  listenerCert = await proxyCa.issue('listener');
  appCert = await proxyCa.issue('app');
  listenerFiles = { cert: path.join(temp.path, 'listener-live.pem'), key: path.join(temp.path, 'listener-live.key') };
  fs.copyFileSync(listenerCert.certFile, listenerFiles.cert);
  fs.copyFileSync(listenerCert.keyFile, listenerFiles.key);
  clientTls = { ca: [read(proxyCa.caFile)], cert: read(appCert.certFile), key: read(appCert.keyFile) };

  const [sslPort] = await freePorts(1);
  kafka = await startKafka({
    compaction: 'off',
    extraListeners: [{ name: 'SSL', port: sslPort!, advertisedPort: sslPort!, securityProtocol: 'SSL' }],
    properties: kafkaTlsListenerProperties('SSL', broker, upstreamCa.caFile, 'required'),
  });
  upstreamSsl = `127.0.0.1:${sslPort}`;
  cli = await startCliProxy({
    upstream: upstreamSsl,
    args: [
      '--tls-cert-file',
      listenerFiles.cert,
      '--tls-key-file',
      listenerFiles.key,
      '--tls-client-ca-file',
      proxyCa.caFile,
      '--upstream-tls',
      'true',
      '--upstream-tls-ca-file',
      upstreamCa.caFile,
      '--upstream-tls-cert-file',
      proxyIdentity.certFile,
      '--upstream-tls-key-file',
      proxyIdentity.keyFile,
    ],
  });
});

after(async () => {
  await cli?.stop();
  await kafka?.stop();
  temp?.remove();
});

/** Whether a TLS client with these options gets an ApiVersions answer from the address. */
async function answered(address: string, options: tls.ConnectionOptions): Promise<boolean> {
  let conn: RawConnection;
  try {
    conn = await RawConnection.openTls(address, options);
  } catch {
    return false;
  }
  try {
    conn.request(ApiKey.ApiVersions, 3, { clientSoftwareName: 'tls-test', clientSoftwareVersion: '1' }, 1);
    await conn.response(ApiKey.ApiVersions, 3);
    return true;
  } catch {
    return false;
  } finally {
    conn.close();
  }
}

async function servedSerial(address: string): Promise<string> {
  const conn = await RawConnection.openTls(address, clientTls);
  try {
    return (conn.socket as tls.TLSSocket).getPeerCertificate().serialNumber;
  } finally {
    conn.close();
  }
}

test("kafkajs and librdkafka read a compacted topic over TLS at both ends; the proxy's own connections use TLS too", { skip, timeout: 90_000 }, async (t) => {
  const client = new kafkajs.Kafka({ clientId: 'tls-test', brokers: [cli.bootstrap], ssl: clientTls, logLevel: kafkajs.logLevel.NOTHING });
  const admin = client.admin();
  await admin.connect();
  const producer = client.producer();
  const consumer = client.consumer({ groupId: 'tls-test-group' });
  try {
    // The config layer stores the topic's policy in the upstream over its own TLS connection.
    await admin.createTopics({
      topics: [
        {
          topic: TOPIC,
          numPartitions: 1,
          configEntries: [
            { name: 'cleanup.policy', value: 'compact' },
            { name: 'segment.ms', value: '1000' },
          ],
        },
      ],
    });
    const described = await admin.describeConfigs({ includeSynonyms: false, resources: [{ type: 2, name: TOPIC, configNames: ['cleanup.policy'] }] });
    assert.equal(described.resources[0]!.configEntries.find((e) => e.configName === 'cleanup.policy')?.configValue, 'compact');

    await compactRound(cli, TOPIC, producer, consumer);
    const expected = ROUND_SURVIVORS;

    const librdkafka = [
      'security.protocol=ssl',
      `ssl.ca.location=${proxyCa.caFile}`,
      `ssl.certificate.location=${appCert.certFile}`,
      `ssl.key.location=${appCert.keyFile}`,
    ];
    const ck = await python<ConsumeSummary>(
      'ck.py',
      ['consume', '--brokers', cli.bootstrap, '--topic', TOPIC, '--count', '3', '--records', ...librdkafka.flatMap((kv) => ['--client-config', kv])],
      { timeoutMs: 60_000 },
    );
    assert.deepEqual(
      ck.records?.map((r) => [r.offset, r.key, r.value]),
      expected,
      'confluent-kafka',
    );
    await t.test('kcat (librdkafka 2.0) reads the same over TLS', async (t) => {
      if (!requirePeers(t, ['kcat'])) return;
      const out = await kcat(
        ['-C', '-q', '-b', cli.bootstrap, '-t', TOPIC, '-o', 'beginning', '-e', '-f', '%o %k %s\\n', ...librdkafka.flatMap((kv) => ['-X', kv])],
        { timeoutMs: 30_000 },
      );
      assert.deepEqual(
        out.stdout.trim().split('\n'),
        expected.map((r) => r.join(' ')),
        'kcat',
      );
    });
  } finally {
    await consumer.disconnect();
    await producer.disconnect();
    await admin.disconnect();
  }
});

test(
  'a client without a certificate from the client CA, or that does not trust the listener, is refused, and the log says why',
  { skip, timeout: 30_000 },
  async () => {
    assert.equal(await answered(cli.bootstrap, clientTls), true, 'the app certificate is accepted');
    assert.equal(await answered(cli.bootstrap, { ca: clientTls.ca }), false, 'no client certificate');
    assert.equal(
      await answered(cli.bootstrap, { ca: clientTls.ca, cert: read(proxyIdentity.certFile), key: read(proxyIdentity.keyFile) }),
      false,
      'a certificate from another CA',
    );
    assert.equal(await answered(cli.bootstrap, { cert: clientTls.cert, key: clientTls.key }), false, 'a client that does not trust the proxy CA');
    await pollUntil('the refusal is logged', 10_000, async () =>
      cli.logs().find((l) => l.msg === 'TLS handshake with a client failed' && /client-ca-file/.test(String(l.fix))) ? true : undefined,
    );
  },
);

test('a rotated listener certificate reaches new connections without a restart; open connections keep theirs', { skip, timeout: 60_000 }, async () => {
  const brokerPort = Number(cli.bootstrap.split(':')[1]) + 2; // --broker-port-base is bootstrap + 1; Kafka's node id is 1
  const broker = `127.0.0.1:${brokerPort}`;
  assert.equal(await servedSerial(cli.bootstrap), listenerCert.serial);
  const open = await RawConnection.openTls(cli.bootstrap, clientTls);
  try {
    const next = await proxyCa.issue('listener-2');
    // The key alone first: it does not fit the certificate, so the proxy keeps serving the old pair.
    fs.copyFileSync(next.keyFile, listenerFiles.key);
    await pollUntil('the half-written pair is noticed', 20_000, async () =>
      cli.logs().some((l) => l.level === 'warn' && /listener TLS .* changed but cannot be used/.test(l.msg)) ? true : undefined,
    );
    assert.equal(await servedSerial(cli.bootstrap), listenerCert.serial);
    fs.copyFileSync(next.certFile, listenerFiles.cert);
    await pollUntil('new connections get the new certificate', 20_000, async () => ((await servedSerial(cli.bootstrap)) === next.serial ? true : undefined));
    assert.equal(await servedSerial(broker), next.serial, 'the broker listeners too');

    assert.equal((open.socket as tls.TLSSocket).getPeerCertificate().serialNumber, listenerCert.serial);
    open.request(ApiKey.ApiVersions, 3, { clientSoftwareName: 'tls-test', clientSoftwareVersion: '1' }, 9);
    assert.equal((await open.response(ApiKey.ApiVersions, 3)).body.errorCode, 0, 'the connection opened before the rotation still works');

    // SIGHUP re-reads at once; its default action (ending the process) is replaced.
    process.kill(cli.pid, 'SIGHUP');
    await pollUntil('SIGHUP is handled', 10_000, async () =>
      cli.logs().some((l) => l.msg === 'SIGHUP: re-reading the TLS and password files') ? true : undefined,
    );
    assert.equal((await cli.http('/livez')).status, 200);
    assert.equal(cli.exitStatus(), undefined);
  } finally {
    open.close();
  }
});

test(
  'the proxy verifies the upstream certificate and host name, names the fix when they fail, and probes reachability over TLS',
  { skip, timeout: 60_000 },
  async () => {
    const lines: string[] = [];
    const previous = setLogSink((line) => lines.push(line));
    setLogLevel('info');
    const log = createLogger({ component: 'tls-test' });
    const [host, port] = upstreamSsl.split(':');
    const identity = { certFile: proxyIdentity.certFile, keyFile: proxyIdentity.keyFile };
    const throughProxy = async (settings: UpstreamTlsSettings) => {
      const connector = new UpstreamConnector({ tls: settings }, log);
      const listen = await freePortRun(4);
      const server = new ProxyServer({
        listen: { host: '127.0.0.1', port: listen },
        upstream: [{ host: host!, port: Number(port) }],
        advertisedHost: '127.0.0.1',
        brokerPortBase: listen + 1,
        maxFrameBytes: 1 << 20,
        requestTimeoutMs: 5_000,
        log,
        connector,
      });
      await server.start();
      try {
        const conn = await RawConnection.open(`127.0.0.1:${listen}`);
        try {
          conn.request(ApiKey.ApiVersions, 3, { clientSoftwareName: 'tls-test', clientSoftwareVersion: '1' }, 1);
          return (await conn.response(ApiKey.ApiVersions, 3)).body.errorCode === 0;
        } catch {
          return false;
        } finally {
          conn.close();
        }
      } finally {
        await server.stop();
        connector.close();
      }
    };
    const logged = (pattern: RegExp) => lines.some((l) => pattern.test(l));
    try {
      assert.equal(await throughProxy({ caFile: upstreamCa.caFile, ...identity, verifyHostname: true }), true, 'the right CA and a client certificate');

      assert.equal(await throughProxy({ caFile: proxyCa.caFile, ...identity, verifyHostname: true }), false, 'a CA that did not sign the broker');
      assert.ok(logged(new RegExp(`TLS connection to upstream ${host}:${port} failed: .*check upstreamTlsCaFile`)), lines.join('\n'));

      lines.length = 0;
      assert.equal(
        await throughProxy({ caFile: upstreamCa.caFile, ...identity, serverName: 'kafka.example.com', verifyHostname: true }),
        false,
        'a name the certificate does not hold',
      );
      assert.ok(logged(/kafka\.example\.com.*upstreamTlsServerName/), lines.join('\n'));
      assert.equal(
        await throughProxy({ caFile: upstreamCa.caFile, ...identity, serverName: 'kafka.example.com', verifyHostname: false }),
        true,
        'host name checks off: the chain alone decides',
      );

      lines.length = 0;
      assert.equal(await throughProxy({ caFile: upstreamCa.caFile, verifyHostname: true }), false, 'no client certificate for a listener that requires one');

      const reachable = (caFile: string) =>
        new UpstreamReachability({
          upstream: [{ host: host!, port: Number(port) }],
          lastConnectMs: () => 0,
          connector: new UpstreamConnector({ tls: { caFile, ...identity, verifyHostname: true } }, log),
        }).check();
      assert.equal((await reachable(upstreamCa.caFile)).ok, true);
      const refused = await reachable(proxyCa.caFile);
      assert.equal(refused.ok, false);
      assert.match(refused.detail, /TLS connection to upstream .* failed/);
    } finally {
      setLogSink(previous);
    }
  },
);
