/**
 * SASL through the proxy, against Kafka 4.4 with SASL_SSL and SASL_PLAINTEXT listeners (PLAIN
 * users in the listener's JAAS config, SCRAM users written at format time). Clients'
 * SaslHandshake and SaslAuthenticate pass through on their own upstream connections, so the
 * upstream authenticates each client (kafkajs with SCRAM-SHA-256 and PLAIN, librdkafka with
 * SCRAM-SHA-512 and PLAIN); the proxy's own connections authenticate with its own credentials,
 * a wrong password of its own is a clear error in its log, and nothing it prints holds a secret.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import kafkajs, { type Kafka, type SASLOptions } from 'kafkajs';
import { ApiKey } from '../../src/protocol/messages.js';
import { ErrorCode } from '../../src/protocol/errors.js';
import { createLogger, setLogLevel, setLogSink } from '../../src/common/log.js';
import { UpstreamClient } from '../../src/upstream/client.js';
import { UpstreamConnector } from '../../src/upstream/upstream-connector.js';
import { startProxy, type RunningProxy } from '../support/kcompact.js';
import { startCliProxy, type CliProxy, type LogLine } from '../support/kcompact-cli.js';
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
import { askOnce, RawConnection } from '../support/raw-client.js';
import { createTestCa, kafkaTlsListenerProperties, type IssuedCert, type TestCa } from '../support/tls-certs.js';

const skip = requirePeers([...TEST_BED, 'openssl']);
const main = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/cli/main.js');

const TOPIC = 'sasl-table';
/** The secrets of this run: none may appear in anything the proxy prints. */
const ALICE_PASSWORD = `alice-${randomBytes(9).toString('base64url')}`;
const PROXY_PASSWORD = `kcompact-${randomBytes(9).toString('base64url')}`;
const WRONG_PASSWORD = `stale-${randomBytes(9).toString('base64url')}`;
/** Sessions on the SASL_PLAINTEXT listener last this long (KIP-368). */
const SESSION_MS = 3_000;

let temp: TempDir;
let kafka: RunningKafka;
let saslSsl: string;
let saslPlaintext: string;
let ca: TestCa;
let listenerCert: IssuedCert;
let dataDir: string;
/** The proxy with TLS on its listener, SCRAM-SHA-512 on its own upstream connections. */
let cli: CliProxy;
/** Everything the first proxy logged, kept for the secrets check after it stopped. */
let firstProxyLogs: LogLine[] = [];

const jaasPlain = (users: Record<string, string>) =>
  `org.apache.kafka.common.security.plain.PlainLoginModule required ${Object.entries(users)
    .map(([u, p]) => `user_${u}="${p}"`)
    .join(' ')};`;
const JAAS_SCRAM = 'org.apache.kafka.common.security.scram.ScramLoginModule required;';

/** The proxy's TLS listener, and TLS and SCRAM-SHA-512 as user kcompact to the upstream. */
function proxySecurityArgs(): string[] {
  return [
    '--tls-cert-file',
    listenerCert.certFile,
    '--tls-key-file',
    listenerCert.keyFile,
    '--upstream-tls',
    'true',
    '--upstream-tls-ca-file',
    ca.caFile,
    '--upstream-sasl-mechanism',
    'SCRAM-SHA-512',
    '--upstream-sasl-username',
    'kcompact',
  ];
}

before(async () => {
  if (skip) return;
  temp = makeTempDir('kcompact-sasl-');
  ca = await createTestCa(temp.path, 'sasl');
  const broker = await ca.issue('broker');
  listenerCert = await ca.issue('listener');
  dataDir = path.join(temp.path, 'data');
  const [sslPort, plainPort] = await freePorts(2);
  const properties: Record<string, string> = {
    ...kafkaTlsListenerProperties('SASL_SSL', broker, ca.caFile, 'none'),
    'sasl.enabled.mechanisms': 'PLAIN,SCRAM-SHA-256,SCRAM-SHA-512',
    'listener.name.sasl_plaintext.connections.max.reauth.ms': String(SESSION_MS),
  };
  for (const listener of ['sasl_ssl', 'sasl_plaintext']) {
    properties[`listener.name.${listener}.plain.sasl.jaas.config`] = jaasPlain({ alice: ALICE_PASSWORD, kcompact: PROXY_PASSWORD });
    properties[`listener.name.${listener}.scram-sha-256.sasl.jaas.config`] = JAAS_SCRAM;
    properties[`listener.name.${listener}.scram-sha-512.sasl.jaas.config`] = JAAS_SCRAM;
  }
  kafka = await startKafka({
    compaction: 'off',
    properties,
    extraListeners: [
      { name: 'SASL_SSL', port: sslPort!, advertisedPort: sslPort!, securityProtocol: 'SASL_SSL' },
      { name: 'SASL_PLAINTEXT', port: plainPort!, advertisedPort: plainPort!, securityProtocol: 'SASL_PLAINTEXT' },
    ],
    scramUsers: [
      { mechanism: 'SCRAM-SHA-256', name: 'alice', password: ALICE_PASSWORD },
      { mechanism: 'SCRAM-SHA-512', name: 'alice', password: ALICE_PASSWORD },
      { mechanism: 'SCRAM-SHA-512', name: 'kcompact', password: PROXY_PASSWORD },
    ],
  });
  saslSsl = `127.0.0.1:${sslPort}`;
  saslPlaintext = `127.0.0.1:${plainPort}`;
  cli = await startCliProxy({
    upstream: saslSsl,
    dataDir,
    env: { KCOMPACT_UPSTREAM_SASL_PASSWORD: PROXY_PASSWORD },
    args: proxySecurityArgs(),
  });
});

after(async () => {
  await cli?.stop();
  await kafka?.stop();
  temp?.remove();
});

function client(sasl: SASLOptions, retries = 5): Kafka {
  return new kafkajs.Kafka({
    clientId: 'sasl-test',
    brokers: [cli.bootstrap],
    ssl: { ca: [fs.readFileSync(ca.caFile)] },
    sasl,
    logLevel: kafkajs.logLevel.NOTHING,
    retry: { retries, initialRetryTime: 100 },
  });
}

const hello = { clientSoftwareName: 'sasl-test', clientSoftwareVersion: '1' };

test(
  'ApiVersions through the proxy offers SaslHandshake and SaslAuthenticate as the upstream does; raw SASL passes through; v0 is refused with the reason',
  { skip, timeout: 60_000 },
  async () => {
    const lines: string[] = [];
    const previous = setLogSink((line) => lines.push(line));
    let proxy: RunningProxy | undefined;
    try {
      proxy = await startProxy(saslPlaintext);
      setLogLevel('info');
      const ranges = async (address: string) => {
        const body = await askOnce(address, ApiKey.ApiVersions, 3, hello);
        const byKey = new Map(
          (body.apiKeys as { apiKey: number; minVersion: number; maxVersion: number }[]).map((k) => [k.apiKey, [k.minVersion, k.maxVersion]]),
        );
        return [byKey.get(ApiKey.SaslHandshake), byKey.get(ApiKey.SaslAuthenticate)];
      };
      const direct = await ranges(saslPlaintext);
      assert.deepEqual(
        direct,
        [
          [0, 1],
          [0, 2],
        ],
        'Kafka 4.4 offers SaslHandshake v0-1 and SaslAuthenticate v0-2',
      );
      assert.deepEqual(await ranges(proxy.bootstrap), direct);

      const authenticate = async (password: string) => {
        const conn = await RawConnection.open(proxy!.bootstrap);
        try {
          conn.request(ApiKey.SaslHandshake, 1, { mechanism: 'PLAIN' }, 1);
          assert.equal((await conn.response(ApiKey.SaslHandshake, 1)).body.errorCode, 0);
          conn.request(ApiKey.SaslAuthenticate, 2, { authBytes: Buffer.from(`\0alice\0${password}`) }, 2);
          const auth = (await conn.response(ApiKey.SaslAuthenticate, 2)).body;
          if (auth.errorCode !== 0) return auth;
          conn.request(ApiKey.Metadata, 12, { topics: null, allowAutoTopicCreation: false, includeTopicAuthorizedOperations: false }, 3);
          return { ...auth, brokers: (await conn.response(ApiKey.Metadata, 12)).body.brokers.length };
        } finally {
          conn.close();
        }
      };
      assert.deepEqual(await authenticate(ALICE_PASSWORD).then((a) => [a.errorCode, a.brokers]), [0, 1], 'authenticated on its own connection, then served');
      const refused = await authenticate(WRONG_PASSWORD);
      assert.equal(refused.errorCode, ErrorCode.SASL_AUTHENTICATION_FAILED);
      assert.match(refused.errorMessage, /Invalid username or password/);

      const legacy = await RawConnection.open(proxy.bootstrap);
      legacy.request(ApiKey.SaslHandshake, 0, { mechanism: 'PLAIN' }, 1);
      await assert.rejects(legacy.response(ApiKey.SaslHandshake, 0, 10_000), /closed/);
      legacy.close();
      assert.ok(
        lines.some((l) =>
          /SaslHandshake v0 .*does not pass through kcompact; use a client that authenticates with SaslHandshake v1 and SaslAuthenticate/.test(l),
        ),
        lines.join('\n'),
      );
    } finally {
      await proxy?.stop();
      setLogSink(previous);
    }
  },
);

test(
  'kafkajs authenticates through the proxy with SCRAM-SHA-256 and PLAIN, on its own connections; a wrong password is refused by the upstream',
  { skip, timeout: 60_000 },
  async () => {
    for (const mechanism of ['scram-sha-256', 'plain'] as const) {
      const admin = client({ mechanism, username: 'alice', password: ALICE_PASSWORD }).admin();
      await admin.connect();
      try {
        assert.ok(Array.isArray(await admin.listTopics()), mechanism);
      } finally {
        await admin.disconnect();
      }
    }
    const wrong = client({ mechanism: 'scram-sha-256', username: 'alice', password: WRONG_PASSWORD }, 0).admin();
    await assert.rejects(wrong.connect(), (err: Error) => {
      assert.match(
        err.message,
        /SASL SCRAM SHA256 authentication failed: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-256/,
      );
      return true;
    });
  },
);

test(
  "a compacted topic works end to end over TLS and SASL: the proxy's own connections authenticate; kafkajs and librdkafka read the survivors",
  { skip, timeout: 90_000 },
  async (t) => {
    const kafkaClient = client({ mechanism: 'scram-sha-256', username: 'alice', password: ALICE_PASSWORD });
    const admin = kafkaClient.admin();
    const producer = kafkaClient.producer();
    const consumer = kafkaClient.consumer({ groupId: 'sasl-test-group' });
    const expected = ROUND_SURVIVORS;
    try {
      await admin.connect();
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
      await compactRound(cli, TOPIC, producer, consumer);
    } finally {
      await consumer.disconnect();
      await producer.disconnect();
      await admin.disconnect();
    }

    const librdkafka = ['security.protocol=SASL_SSL', `ssl.ca.location=${ca.caFile}`, 'sasl.username=alice', `sasl.password=${ALICE_PASSWORD}`];
    const ck = await python<ConsumeSummary>(
      'ck.py',
      [
        'consume',
        '--brokers',
        cli.bootstrap,
        '--topic',
        TOPIC,
        '--count',
        '3',
        '--records',
        ...['sasl.mechanisms=SCRAM-SHA-512', ...librdkafka].flatMap((kv) => ['--client-config', kv]),
      ],
      { timeoutMs: 60_000 },
    );
    assert.deepEqual(
      ck.records?.map((r) => [r.offset, r.key, r.value]),
      expected,
      'confluent-kafka with SCRAM-SHA-512',
    );
    await t.test('kcat (librdkafka 2.0) reads the same with PLAIN', async (t) => {
      if (!requirePeers(t, ['kcat'])) return;
      // Debian's kcat (librdkafka 2.0) fails SCRAM against Kafka 4.4 even directly: it reads with PLAIN.
      const out = await kcat(
        [
          '-C',
          '-q',
          '-b',
          cli.bootstrap,
          '-t',
          TOPIC,
          '-o',
          'beginning',
          '-e',
          '-f',
          '%o %k %s\\n',
          ...['sasl.mechanisms=PLAIN', ...librdkafka].flatMap((kv) => ['-X', kv]),
        ],
        { timeoutMs: 30_000 },
      );
      assert.deepEqual(
        out.stdout.trim().split('\n'),
        expected.map((r) => r.join(' ')),
        'kcat with PLAIN',
      );
    });

    const problems = cli.logs().filter((l) => l.level === 'error' || (l.level === 'warn' && /SASL|authenticat/i.test(JSON.stringify(l))));
    assert.deepEqual(problems, [], "the proxy's own connections authenticated without a complaint");
  },
);

test(
  'the proxy retires its own connection before its SASL session ends (connections.max.reauth.ms) and a new one authenticates',
  { skip, timeout: 30_000 },
  async () => {
    const connector = new UpstreamConnector({ sasl: { mechanism: 'SCRAM-SHA-512', username: 'kcompact', password: PROXY_PASSWORD } }, createLogger());
    const [host, port] = saslPlaintext.split(':');
    const options = { clientId: 'sasl-test', maxFrameBytes: 1 << 20, requestTimeoutMs: 5_000, connector };
    const first = await UpstreamClient.connect({ host: host!, port: Number(port) }, options);
    const metadata = (c: UpstreamClient) => c.request(ApiKey.Metadata, c.version(ApiKey.Metadata), { topics: [], allowAutoTopicCreation: false });
    try {
      assert.equal(first.closed, false);
      assert.equal((await metadata(first)).brokers.length, 1);
      await pollUntil('the connection retires within its session', SESSION_MS * 3, async () => (first.closed ? true : undefined));
      const second = await UpstreamClient.connect({ host: host!, port: Number(port) }, options);
      try {
        assert.equal((await metadata(second)).brokers.length, 1);
      } finally {
        second.close();
      }
    } finally {
      first.close();
    }
  },
);

test(
  "the proxy's own wrong password is a clear error in its log; clients still authenticate themselves; a corrected password file is picked up; no output holds a secret",
  { skip, timeout: 90_000 },
  async () => {
    firstProxyLogs = cli.logs();
    await cli.stop();
    const passwordFile = path.join(temp.path, 'kcompact-password');
    fs.writeFileSync(passwordFile, `${WRONG_PASSWORD}\n`, { mode: 0o600 });
    // The data directory of the first run holds the topic configs, so startup does not wait for the upstream.
    cli = await startCliProxy({
      upstream: saslSsl,
      dataDir,
      args: [...proxySecurityArgs(), '--upstream-sasl-password-file', passwordFile],
    });
    const authError =
      /upstream 127\.0\.0\.1:\d+ refused SASL authentication of user "kcompact" with SCRAM-SHA-512: Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512; check upstreamSaslMechanism, upstreamSaslUsername and the password/;
    await pollUntil('the refusal is logged', 30_000, async () =>
      cli.logs().some((l) => authError.test(String((l.err as { message?: string } | undefined)?.message))) ? true : undefined,
    );

    const admin = client({ mechanism: 'scram-sha-256', username: 'alice', password: ALICE_PASSWORD }).admin();
    await admin.connect();
    try {
      assert.ok((await admin.listTopics()).includes(TOPIC), 'a client authenticates on its own while the proxy cannot');
    } finally {
      await admin.disconnect();
    }

    const fixedAt = cli.logs().length;
    fs.writeFileSync(passwordFile, `${PROXY_PASSWORD}\n`);
    await pollUntil('the corrected password is read', 20_000, async () =>
      cli.logs().some((l) => l.msg === 'reloaded the upstream SASL password file; new connections use what they hold now') ? true : undefined,
    );
    await pollUntil("the proxy's own connections authenticate again", 30_000, async () =>
      cli
        .logs()
        .slice(fixedAt)
        .some((l) => l.msg === 'upstream brokers discovered' || l.msg === 'topic config store reachable again')
        ? true
        : undefined,
    );

    // Configuration errors with the secret at hand: the message names the key, never the value.
    const configFile = path.join(temp.path, 'bad.json');
    fs.writeFileSync(
      configFile,
      JSON.stringify({ upstream: saslSsl, upstreamSaslMechanism: 'SCRAM-SHA-512', upstreamSaslUsername: 'kcompact', upstreamSaslPassword: [PROXY_PASSWORD] }),
    );
    const configRuns = [
      spawnSync(process.execPath, [main, 'proxy', '--config', configFile], { encoding: 'utf8' }),
      spawnSync(process.execPath, [main, 'proxy', '--upstream', saslSsl, '--upstream-sasl-mechanism', 'SCRAM-SHA-1', '--upstream-sasl-username', 'kcompact'], {
        encoding: 'utf8',
        env: { ...process.env, KCOMPACT_UPSTREAM_SASL_PASSWORD: PROXY_PASSWORD },
      }),
      spawnSync(
        process.execPath,
        [main, 'proxy', '--upstream', saslSsl, '--upstream-sasl-username', 'kcompact', '--tls-cert-file', listenerCert.certFile, '--tls-key-file', ca.caFile],
        {
          encoding: 'utf8',
          env: { ...process.env, KCOMPACT_UPSTREAM_SASL_PASSWORD: PROXY_PASSWORD },
        },
      ),
    ];
    assert.deepEqual(
      configRuns.map((r) => r.status),
      [2, 2, 2],
      configRuns.map((r) => r.stderr).join('\n'),
    );
    assert.match(configRuns[0]!.stderr, /config key "upstreamSaslPassword": expected a non-empty string, got \(value hidden\)/);
    assert.match(configRuns[1]!.stderr, /config key "upstreamSaslMechanism": expected one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512/);
    assert.match(configRuns[2]!.stderr, /listener TLS files of .*tlsCertFile.*tlsKeyFile.* cannot be used together/);

    const management = await Promise.all(['/status', '/metrics', '/readyz', '/startupz'].map((route) => cli.http(route)));
    const output = [
      JSON.stringify(firstProxyLogs),
      JSON.stringify(cli.logs()),
      ...management.map((r) => r.body),
      ...configRuns.flatMap((r) => [r.stdout, r.stderr]),
    ].join('\n');
    const keyLines = fs
      .readFileSync(listenerCert.keyFile, 'utf8')
      .split('\n')
      .filter((l) => l.length > 0 && !l.startsWith('-----'));
    for (const secret of [ALICE_PASSWORD, PROXY_PASSWORD, WRONG_PASSWORD, ...keyLines]) {
      assert.ok(!output.includes(secret), `a secret appears in the proxy's output: ${secret.slice(0, 6)}...`);
    }
    assert.ok(
      firstProxyLogs.some((l) => l.msg === 'kcompact proxy started' && l.upstreamSasl === 'SCRAM-SHA-512 as kcompact' && l.listenerTls === 'on'),
      'the start is logged, with what is on',
    );
  },
);
