/**
 * Every setting of `kcompact proxy`, declared once below: ProxyConfig is the types they parse to,
 * and the flags, environment variables, config-file keys, defaults and --help all come from there.
 * Precedence: command line, then environment, then config file, then default.
 */
import fs from 'node:fs';
import { isLoopbackHost, type HostPort } from '../common/host-port.js';
import {
  boolean,
  ConfigError,
  describeKey,
  envOf,
  hidden,
  hostPort,
  hostPortList,
  integer,
  json,
  messageOf,
  ratio,
  readableFile,
  setting,
  showHostPort,
  stringValues,
  text,
  topicPatterns,
  type Resolved,
  type Setting,
  type ValueOf,
} from './setting.js';
import { isLogLevel } from '../common/log.js';
import { DEFAULT_CONFIG_LAYER, type StaticTopic } from '../compaction/config/topic-configs.js';
import { validateBrokerConfigs } from '../compaction/config/broker-defaults.js';
import { validateStaticTopics } from '../compaction/config/topic-config-state.js';
import { TopicConfigError } from '../compaction/config/config-error.js';
import type { CompactionOptions } from '../compaction/compaction.js';
import { DEFAULT_FETCH_VIEW } from '../compaction/fetch-view/fetch-view.js';
import { checkKeyIdentityRules, registryPatterns } from '../engine/api/key-identity-rules.js';
import { checkRegistryUrl } from '../engine/api/registry-url.js';
import { DEFAULT_CARRY, DEFAULT_CLEANER, DEFAULT_ELECTION, DEFAULT_INDEXING, DEFAULT_KEY_IDENTITY } from '../engine/api/engine-options.js';
import { DEFAULT_CONNECTION, type ConnectionOptions } from '../upstream/connection-options.js';
import { listenerContextOptions, type ListenerTlsSettings } from '../proxy/listener-tls.js';
import { passwordOf, upstreamContext, type UpstreamSecurity, type UpstreamTlsSettings } from '../upstream/upstream-connector.js';
import { SASL_MECHANISMS } from '../upstream/sasl-client.js';
import { MIN_TOKEN_LENGTH, tokenOf } from '../ops/bearer-token.js';
import { MIN_PASS_BYTES, rewritableBytes } from '../engine/api/carry-capacity.js';

export { ConfigError, describeKey, envOf, flagOf, type Setting } from './setting.js';

export const DEFAULT_METRICS_LISTEN: Readonly<HostPort> = { host: '127.0.0.1', port: 9644 };
export const DEFAULT_ADMIN_LISTEN: Readonly<HostPort> = { host: '127.0.0.1', port: 9645 };

const STATIC_TOPICS_SHAPE = 'a JSON array of {"topic": NAME, "configs": {NAME: VALUE}}';

function parseStaticTopics(raw: unknown): StaticTopic[] {
  const list = json(raw, STATIC_TOPICS_SHAPE);
  if (!Array.isArray(list)) throw new Error(`expected ${STATIC_TOPICS_SHAPE}`);
  return list.map((entry: unknown, i) => {
    const e = typeof entry === 'object' && entry !== null ? entry : {};
    const topic = 'topic' in e ? e.topic : undefined;
    if (typeof topic !== 'string' || topic === '') throw new Error(`entry ${i} needs a "topic" name`);
    const configs = ('configs' in e ? e.configs : undefined) ?? {};
    if (typeof configs !== 'object' || configs === null || Array.isArray(configs))
      throw new Error(`entry ${i} ("${topic}"): "configs" must be an object of config names to string values`);
    return { topic, configs: stringValues(configs, (k, v) => `entry ${i} ("${topic}"): config ${k} must be a string, got ${JSON.stringify(v)}`) };
  });
}

function parseBrokerConfigs(raw: unknown): Record<string, string> {
  const obj = json(raw, 'a JSON object of broker config names to string values');
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) throw new Error('expected a JSON object of broker config names to string values');
  return stringValues(obj, (k, v) => `${k} must be a string, got ${JSON.stringify(v)}`);
}

/** The carrierGroup value that keeps a replica out of carrying. */
export const NO_CARRIER_GROUP = 'none';

/** 0.0.0.0 and ::, every interface. */
function wildcard(host: string): boolean {
  return host === '0.0.0.0' || host === '::';
}

/** The one setting the derived defaults (broker ports, advertised host) follow. */
type FromListen = Resolved<{ listen: HostPort }>;

/** In the order --help lists them; a derived default may read any other setting. */
const DECLARATIONS = {
  upstream: setting({
    arg: 'HOST:PORT[,HOST:PORT...]',
    description: 'bootstrap address(es) of the upstream Kafka-protocol store (required)',
    parse: hostPortList,
    required: 'the address of the upstream store is required',
  }),
  listen: setting({
    arg: 'HOST:PORT',
    description: 'address of the bootstrap listener clients connect to',
    parse: hostPort,
    show: showHostPort,
    default: { host: '127.0.0.1', port: 9092 },
  }),
  dataDir: setting({
    arg: 'DIR',
    description: 'directory for the local state (SQLite key index, config cache)',
    parse: text,
    default: './kcompact-data',
  }),
  advertisedHost: setting({
    arg: 'HOST',
    description: 'host name clients are told to use for the broker listeners',
    parse: text,
    derive: (value: FromListen) => (wildcard(value('listen').host) ? '127.0.0.1' : value('listen').host),
    defaultText: 'the listen host (127.0.0.1 when listening on all interfaces)',
  }),
  brokerPortBase: setting({
    arg: 'PORT',
    description: 'upstream broker N is served on local port PORT+N',
    parse: integer(1, 65535),
    derive: (value: FromListen) => value('listen').port + 1,
    defaultText: 'listen port + 1',
  }),
  maxFrameBytes: setting({
    arg: 'BYTES',
    description: 'largest request or response frame accepted; a larger one closes the connection',
    parse: integer(1024, 2 ** 31 - 1),
    default: DEFAULT_CONNECTION.maxFrameBytes,
    note: '100 MiB',
  }),
  requestTimeoutMs: setting({
    arg: 'MS',
    description: "timeout of the proxy's own requests to the upstream",
    parse: integer(100, 3_600_000),
    default: DEFAULT_CONNECTION.requestTimeoutMs,
  }),
  cleanerBackoffMs: setting({
    arg: 'MS',
    description: "pause between cleaner rounds (Kafka's log.cleaner.backoff.ms)",
    parse: integer(10, 86_400_000),
    default: DEFAULT_CLEANER.backoffMs,
  }),
  carrierGroup: setting({
    arg: 'GROUP',
    description:
      "group on the upstream in which the replicas in front of one store elect each compacted partition's carrier, the replica that carries its survivors forward and lets the old range go (physical compaction); none: this replica never carries",
    parse: text,
    // Every kcompact in front of a store shares it unless told otherwise.
    default: DEFAULT_ELECTION.groupId,
  }),
  carrierSessionTimeoutMs: setting({
    arg: 'MS',
    description:
      "how long the carrier group waits for a replica that stopped heartbeating (killed, paused, cut off) before giving its partitions to the others; within the store's group.min/max.session.timeout.ms",
    parse: integer(1_000, 1_800_000),
    default: DEFAULT_ELECTION.sessionTimeoutMs,
  }),
  indexOnDemand: setting({
    arg: 'true|false',
    description:
      'index only the compacted partitions this replica carries or its clients use (true), or every compacted partition of the store (false: a replica that serves tools reading around it, or one whose first reads must not wait)',
    parse: boolean,
    default: DEFAULT_INDEXING.onDemand,
  }),
  indexIdleMs: setting({
    arg: 'MS',
    description:
      'how long this replica keeps the index of a compacted partition it does not carry after its clients last read or wrote it; a partition nobody here uses is not indexed at all (its carrier indexes it)',
    parse: integer(1_000, 2 ** 31 - 1),
    default: DEFAULT_INDEXING.idleMs,
    note: '10 minutes',
  }),
  carryRetentionShare: setting({
    arg: 'SHARE',
    description:
      "where the store caps retention, the share of it (0-1) at which the carrying replica writes survivors again, so they never reach the store's limit",
    parse: ratio(0.05, 0.9),
    default: DEFAULT_CONFIG_LAYER.carryRetentionShare,
  }),
  carryBytesPerSecond: setting({
    arg: 'BYTES',
    description:
      "most bytes per second this replica's carry passes write to the store, and most they read, all the partitions it carries together; the store's throttle_time_ms is honored either way; 0: no bound of kcompact's own",
    parse: integer(0, 2 ** 40),
    default: DEFAULT_CARRY.bytesPerSecond,
    note: 'unbounded',
  }),
  storeRetentionMs: setting({
    arg: 'MS',
    description:
      "how long the store keeps records, for a store that cannot describe its configs (OCI Streaming: 604800000); unset: learned from the store's DescribeConfigs",
    parse: integer(1_000, 2 ** 53 - 1),
  }),
  viewCacheBytes: setting({
    arg: 'BYTES',
    description: 'memory for compacted batches already read, so reading a compacted topic again skips its superseded records upstream; 0 turns it off',
    parse: integer(0, 2 ** 40),
    default: DEFAULT_FETCH_VIEW.cacheBytes,
    note: '16 MiB',
  }),
  metricsListen: setting({
    arg: 'HOST:PORT',
    description: 'metrics listener: /metrics and the probes /livez, /readyz, /startupz, for the kubelet and Prometheus (0.0.0.0 in a pod); no admin routes',
    parse: hostPort,
    show: showHostPort,
    default: DEFAULT_METRICS_LISTEN,
  }),
  adminListen: setting({
    arg: 'HOST:PORT',
    description: 'admin listener: /status, /inspect, /compact, /rebuild-index for the admin verbs; off loopback only with --admin-token-file',
    parse: hostPort,
    show: showHostPort,
    default: DEFAULT_ADMIN_LISTEN,
  }),
  adminTokenFile: setting({
    arg: 'FILE',
    description: `file holding the bearer token the admin listener requires (at least ${MIN_TOKEN_LENGTH} characters); re-read when it changes and on SIGHUP; the admin verbs send it`,
    parse: readableFile,
    note: 'no token: the admin listener must be on loopback',
  }),
  tablesListen: setting({
    arg: 'HOST:PORT',
    description:
      'table API listener: HTTP/JSON reads, writes, compare-and-set and change streams of compacted topics by key (docs/tables.md); off loopback only with --tables-token-file',
    parse: hostPort,
    show: showHostPort,
    defaultText: 'off',
  }),
  tablesTokenFile: setting({
    arg: 'FILE',
    description: `file holding the bearer token the table API listener requires (at least ${MIN_TOKEN_LENGTH} characters); re-read when it changes and on SIGHUP; kcompact get and put send it`,
    parse: readableFile,
    note: 'no token: the table API listener must be on loopback',
  }),
  topics: setting({
    arg: 'JSON',
    description: 'topics compacted by this configuration, for stores without admin APIs: [{"topic":"t","configs":{"cleanup.policy":"compact"}}]',
    parse: parseStaticTopics,
    default: [...DEFAULT_CONFIG_LAYER.staticTopics],
  }),
  brokerConfigs: setting({
    arg: 'JSON',
    description: 'broker-level defaults of the compaction configs, by Kafka broker config name: {"log.cleaner.delete.retention.ms":"3600000"}',
    parse: parseBrokerConfigs,
    default: { ...DEFAULT_CONFIG_LAYER.brokerConfigs },
    note: "Kafka's defaults",
  }),
  drainTimeoutMs: setting({
    arg: 'MS',
    description: 'on SIGTERM, how long in-flight requests may take to be answered before their connections are closed anyway',
    parse: integer(0, 3_600_000),
    default: 10_000,
  }),
  metricsPerPartition: setting({
    arg: 'true|false',
    description: 'also export compaction metrics per partition (labels topic and partition)',
    parse: boolean,
    default: false,
  }),
  metricsTopicsInclude: setting({
    arg: 'TOPICS',
    description: 'with --metrics-per-partition: only these topics (names or globs with *, comma list or JSON array)',
    parse: topicPatterns,
    default: [],
    note: 'every topic',
  }),
  metricsTopicsExclude: setting({
    arg: 'TOPICS',
    description: 'with --metrics-per-partition: not these topics (names or globs with *; wins over the include list)',
    parse: topicPatterns,
    default: [],
  }),
  schemaRegistryUrl: setting({
    arg: 'URL',
    description: 'schema registry speaking the Confluent REST API, for --key-identity "registry"; basic auth as user info (https://user:pass@host)',
    parse: checkRegistryUrl,
    quote: (raw) => JSON.stringify(String(raw).replace(/\/\/[^/@]*@/, '//***@')),
  }),
  keyIdentity: setting({
    arg: 'JSON',
    description:
      'how keys compare per topic name or glob: {"orders-*":"registry"}; bytes (exact bytes, as Kafka), payload (framed keys without the schema id), registry (decoded and canonicalised)',
    parse: (raw) => checkKeyIdentityRules(json(raw, 'a JSON object of topic names or globs to bytes, payload or registry')),
    default: { ...DEFAULT_KEY_IDENTITY.rules },
    note: 'exact bytes for every topic',
  }),
  tlsCertFile: setting({
    arg: 'FILE',
    description:
      'PEM certificate chain the client listeners present; with --tls-key-file every listener (bootstrap and brokers) speaks TLS; re-read when it changes and on SIGHUP',
    parse: readableFile,
    note: 'plaintext listeners',
  }),
  tlsKeyFile: setting({
    arg: 'FILE',
    description: 'PEM private key (unencrypted) of --tls-cert-file',
    parse: readableFile,
  }),
  tlsClientCaFile: setting({
    arg: 'FILE',
    description: 'PEM CA certificates: clients must present a certificate one of them signed (mutual TLS)',
    parse: readableFile,
    note: 'clients are not asked for a certificate',
  }),
  upstreamTls: setting({
    arg: 'true|false',
    description: "connect to the upstream with TLS: every connection, clients' and the proxy's own",
    parse: boolean,
    default: false,
  }),
  upstreamTlsCaFile: setting({
    arg: 'FILE',
    description: "PEM CA certificates the upstream's certificate must chain to; re-read when it changes and on SIGHUP",
    parse: readableFile,
    defaultText: "Node's bundled public CAs",
  }),
  upstreamTlsCertFile: setting({
    arg: 'FILE',
    description: 'PEM client certificate chain for an upstream that requires mutual TLS (with --upstream-tls-key-file)',
    parse: readableFile,
  }),
  upstreamTlsKeyFile: setting({
    arg: 'FILE',
    description: 'PEM private key (unencrypted) of --upstream-tls-cert-file',
    parse: readableFile,
  }),
  upstreamTlsServerName: setting({
    arg: 'HOST',
    description: "name sent as SNI and checked in the upstream's certificates instead of each broker's host",
    parse: text,
    defaultText: "each broker's host",
  }),
  upstreamTlsVerifyHostname: setting({
    arg: 'true|false',
    description: "check that the upstream's certificate names the broker's host (or --upstream-tls-server-name); the chain is verified either way",
    parse: boolean,
    default: true,
  }),
  upstreamSaslMechanism: setting({
    arg: 'MECHANISM',
    description:
      "SASL mechanism of the proxy's own upstream connections (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512); clients authenticate themselves through the proxy",
    parse: (raw) => {
      const v = String(raw).trim();
      const mechanism = SASL_MECHANISMS.find((m) => m === v);
      if (mechanism === undefined) throw new Error(`expected one of ${SASL_MECHANISMS.join(', ')}`);
      return mechanism;
    },
    note: 'the proxy does not authenticate',
  }),
  upstreamSaslUsername: setting({
    arg: 'USER',
    description: "user of the proxy's own upstream connections",
    parse: text,
  }),
  upstreamSaslPassword: setting({
    arg: 'PASSWORD',
    description:
      'password of --upstream-sasl-username; prefer the environment variable or --upstream-sasl-password-file to a flag or the config file; never logged',
    parse: (raw) => {
      if (typeof raw !== 'string' || raw === '') throw new Error('expected a non-empty string');
      return raw;
    },
    quote: hidden,
  }),
  upstreamSaslPasswordFile: setting({
    arg: 'FILE',
    description: 'file holding the password of --upstream-sasl-username (one trailing line break ignored); re-read when it changes',
    parse: readableFile,
  }),
  logLevel: setting({
    arg: 'LEVEL',
    description: 'debug, info, warn or error',
    parse: (raw) => {
      const v = String(raw);
      if (!isLogLevel(v)) throw new Error('expected one of debug, info, warn, error');
      return v;
    },
    default: 'info',
  }),
};

type Declared = typeof DECLARATIONS;

/** The resolved settings: each one's type is what its declaration parses to, undefined where it has no default. */
export type ProxyConfig = { [K in keyof Declared]: ValueOf<Declared[K]> };

type SettingKey = keyof ProxyConfig;

/**
 * The declarations seen per key. The annotation checks that every derived default reads settings
 * that exist, with the types they have; code generic over a key gets that key's value type back.
 */
export const SETTINGS: { readonly [K in SettingKey]: Setting<ProxyConfig[K], ProxyConfig> } = DECLARATIONS;

const isSettingKey = (key: string): key is SettingKey => Object.hasOwn(SETTINGS, key);

/** Every config key, in declaration order. */
export const SETTING_KEYS: readonly SettingKey[] = Object.keys(SETTINGS).filter(isSettingKey);

function checkFileKeys(file: Record<string, unknown>): void {
  for (const key of Object.keys(file)) {
    if (!isSettingKey(key)) throw new ConfigError(`unknown config file key "${key}"; allowed keys: ${SETTING_KEYS.join(', ')}`);
  }
}

/** A setting's value, first found on the command line, in the environment, in the file; undefined when absent. */
function givenValue<K extends SettingKey>(
  key: K,
  cli: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
  file: Record<string, unknown>,
): ProxyConfig[K] | undefined {
  const raw = cli[key] ?? env[envOf(key)] ?? file[key];
  if (raw === undefined || raw === '') return undefined;
  const { parse, quote } = SETTINGS[key];
  try {
    return parse(raw);
  } catch (err) {
    throw new ConfigError(`invalid ${describeKey(key)}: ${messageOf(err)}, got ${quote(raw)}`);
  }
}

/**
 * Some settings alone, validated as resolveConfig does, without defaults: the admin verbs read a
 * proxy's management address and data directory from the same flags, environment and file.
 */
export function resolveSettings<K extends SettingKey>(
  keys: readonly K[],
  cli: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
  file: Record<string, unknown>,
): Partial<Pick<ProxyConfig, K>> {
  checkFileKeys(file);
  const wanted = (key: SettingKey): key is K => keys.some((k) => k === key);
  const values: Partial<Pick<ProxyConfig, K>> = {};
  // Declaration order, as resolveConfig: of several bad values, the same one is reported.
  for (const key of SETTING_KEYS) {
    if (!wanted(key)) continue;
    const value = givenValue(key, cli, env, file);
    if (value !== undefined) values[key] = value;
  }
  return values;
}

/**
 * Static topics and broker defaults go through the config layer's own checks here, so that a bad
 * one stops the start with the key named rather than after the data directory and upstream.
 */
function checkTopicSettings(topics: readonly StaticTopic[], brokerConfigs: Readonly<Record<string, string>>): void {
  const asSetting = (key: 'brokerConfigs' | 'topics', check: () => void) => {
    try {
      check();
    } catch (err) {
      if (err instanceof TopicConfigError) throw new ConfigError(`invalid ${describeKey(key)}: ${err.message}`);
      throw err;
    }
  };
  asSetting('brokerConfigs', () => validateBrokerConfigs(brokerConfigs));
  asSetting('topics', () => validateStaticTopics(topics, brokerConfigs));
}

/** The files' contents, read for a check; an unreadable file is a ConfigError naming its key. */
function readForCheck(files: readonly [key: keyof ProxyConfig, path: string][]): Buffer[] {
  return files.map(([key, file]) => {
    try {
      return fs.readFileSync(file);
    } catch (err) {
      throw new ConfigError(`cannot read ${file} (${describeKey(key)}): ${messageOf(err)}`);
    }
  });
}

const keysOf = (keys: readonly (keyof ProxyConfig)[]) => keys.map(describeKey).join(', ');

/**
 * TLS and SASL settings that only work together: checked as a whole, and the files read and
 * combined as the proxy will, so that a key not matching its certificate stops the start here.
 */
function checkSecurity(c: ProxyConfig): void {
  if ((c.tlsCertFile === undefined) !== (c.tlsKeyFile === undefined)) {
    throw new ConfigError(`${keysOf(['tlsCertFile', 'tlsKeyFile'])} go together: set both for TLS on the listeners, or neither`);
  }
  if (c.tlsClientCaFile !== undefined && c.tlsCertFile === undefined) {
    throw new ConfigError(`${describeKey('tlsClientCaFile')} asks clients for certificates over TLS, which needs ${keysOf(['tlsCertFile', 'tlsKeyFile'])}`);
  }
  if (listenerTlsSettings(c)) {
    const keys = (['tlsCertFile', 'tlsKeyFile', 'tlsClientCaFile'] as const).filter((k) => c[k] !== undefined);
    try {
      listenerContextOptions(readForCheck(keys.map((k) => [k, c[k]!])));
    } catch (err) {
      if (err instanceof ConfigError) throw err;
      throw new ConfigError(
        `the listener TLS files of ${keysOf(keys)} cannot be used together: ${messageOf(err)}; give a PEM certificate chain, its unencrypted PEM key and PEM CA certificates`,
      );
    }
  }
  const upstreamTlsKeys = ['upstreamTlsCaFile', 'upstreamTlsCertFile', 'upstreamTlsKeyFile', 'upstreamTlsServerName'] as const;
  if (!c.upstreamTls) {
    const set = [...upstreamTlsKeys.filter((k) => c[k] !== undefined), ...(c.upstreamTlsVerifyHostname ? [] : (['upstreamTlsVerifyHostname'] as const))];
    if (set.length > 0) throw new ConfigError(`${keysOf(set)} only apply with ${describeKey('upstreamTls')} set to true; set it or drop them`);
  }
  if ((c.upstreamTlsCertFile === undefined) !== (c.upstreamTlsKeyFile === undefined)) {
    throw new ConfigError(`${keysOf(['upstreamTlsCertFile', 'upstreamTlsKeyFile'])} go together: set both for a client certificate, or neither`);
  }
  const upstream = upstreamSecuritySettings(c);
  if (upstream.tls) {
    const keys = (['upstreamTlsCaFile', 'upstreamTlsCertFile', 'upstreamTlsKeyFile'] as const).filter((k) => c[k] !== undefined);
    try {
      upstreamContext(upstream.tls, readForCheck(keys.map((k) => [k, c[k]!])));
    } catch (err) {
      if (err instanceof ConfigError) throw err;
      throw new ConfigError(
        `the upstream TLS files of ${keysOf(keys)} cannot be used together: ${messageOf(err)}; give PEM CA certificates, a PEM client certificate chain and its unencrypted PEM key`,
      );
    }
  }
  const saslKeys = ['upstreamSaslUsername', 'upstreamSaslPassword', 'upstreamSaslPasswordFile'] as const;
  if (c.upstreamSaslMechanism === undefined) {
    const set = saslKeys.filter((k) => c[k] !== undefined);
    if (set.length > 0)
      throw new ConfigError(
        `${keysOf(set)} only apply with ${describeKey('upstreamSaslMechanism')}; set it (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512) or drop them`,
      );
    return;
  }
  if (c.upstreamSaslUsername === undefined) throw new ConfigError(`${describeKey('upstreamSaslMechanism')} needs ${describeKey('upstreamSaslUsername')}`);
  if ((c.upstreamSaslPassword === undefined) === (c.upstreamSaslPasswordFile === undefined)) {
    throw new ConfigError(`${describeKey('upstreamSaslMechanism')} needs exactly one of ${keysOf(['upstreamSaslPassword', 'upstreamSaslPasswordFile'])}`);
  }
  if (c.upstreamSaslPasswordFile !== undefined && passwordOf(readForCheck([['upstreamSaslPasswordFile', c.upstreamSaslPasswordFile]])[0]!) === '') {
    throw new ConfigError(`${describeKey('upstreamSaslPasswordFile')}: ${c.upstreamSaslPasswordFile} is empty; write the password into it`);
  }
}

/** Whether two listeners would take the same port (0 is any free port, never the same). */
function samePort(a: HostPort, b: HostPort): boolean {
  return a.port !== 0 && a.port === b.port && (a.host === b.host || wildcard(a.host) || wildcard(b.host));
}

/** A token file's contents are checked as the listener will read them; an unusable one stops the start naming its key. */
function checkTokenFile(key: 'adminTokenFile' | 'tablesTokenFile', file: string): void {
  try {
    tokenOf(readForCheck([[key, file]])[0]!);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`${describeKey(key)}: ${file}: ${messageOf(err)}`);
  }
}

/**
 * The admin routes can drop every index and make the proxy re-read the store: off loopback they
 * need a token. The two listeners cannot share a port: which routes a request reaches is decided
 * by the listener it arrived on.
 */
function checkManagementListeners(c: ProxyConfig): void {
  const { adminListen: admin, metricsListen: metrics } = c;
  if (samePort(admin, metrics)) {
    throw new ConfigError(
      `${describeKey('adminListen')} and ${describeKey('metricsListen')} both name port ${admin.port}; give the admin listener a port of its own (default ${DEFAULT_ADMIN_LISTEN.port})`,
    );
  }
  if (c.adminTokenFile === undefined) {
    if (!isLoopbackHost(admin.host)) {
      throw new ConfigError(
        `${describeKey('adminListen')} is ${admin.host}:${admin.port}, reachable beyond this machine, and no ${describeKey('adminTokenFile')} is set: ` +
          `anyone who reaches it could drop the key index or force cleans; keep it on loopback (kubectl exec or kubectl port-forward reach it) or set a token file`,
      );
    }
    return;
  }
  checkTokenFile('adminTokenFile', c.adminTokenFile);
}

/**
 * The table API writes to the store and reads every compacted topic's values: off loopback it
 * needs a token, as the admin listener does, and a port no other listener of the proxy takes.
 */
function checkTablesListener(c: ProxyConfig): void {
  const tables = c.tablesListen;
  if (tables === undefined) {
    if (c.tablesTokenFile !== undefined) {
      throw new ConfigError(`${describeKey('tablesTokenFile')} only applies with ${describeKey('tablesListen')}; set the listener or drop the token file`);
    }
    return;
  }
  for (const other of ['listen', 'metricsListen', 'adminListen'] as const) {
    if (samePort(tables, c[other])) {
      throw new ConfigError(
        `${describeKey('tablesListen')} and ${describeKey(other)} both name port ${tables.port}; give the table API listener a port of its own`,
      );
    }
  }
  if (c.tablesTokenFile === undefined) {
    if (!isLoopbackHost(tables.host)) {
      throw new ConfigError(
        `${describeKey('tablesListen')} is ${tables.host}:${tables.port}, reachable beyond this machine, and no ${describeKey('tablesTokenFile')} is set: ` +
          `anyone who reaches it could read and overwrite every compacted topic; keep it on loopback (the application's own pod reaches it) or set a token file`,
      );
    }
    return;
  }
  checkTokenFile('tablesTokenFile', c.tablesTokenFile);
}

/** TLS of the client listeners, when configured. */
export function listenerTlsSettings(c: ProxyConfig): ListenerTlsSettings | undefined {
  if (c.tlsCertFile === undefined || c.tlsKeyFile === undefined) return undefined;
  return { certFile: c.tlsCertFile, keyFile: c.tlsKeyFile, ...(c.tlsClientCaFile !== undefined ? { clientCaFile: c.tlsClientCaFile } : {}) };
}

/** TLS and SASL towards the upstream, as the connectors of both threads take them. */
export function upstreamSecuritySettings(c: ProxyConfig): UpstreamSecurity {
  const defined = <T extends object>(o: T) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T;
  const tls: UpstreamTlsSettings | undefined = c.upstreamTls
    ? defined({
        caFile: c.upstreamTlsCaFile,
        certFile: c.upstreamTlsCertFile,
        keyFile: c.upstreamTlsKeyFile,
        serverName: c.upstreamTlsServerName,
        verifyHostname: c.upstreamTlsVerifyHostname,
      })
    : undefined;
  const sasl =
    c.upstreamSaslMechanism !== undefined && c.upstreamSaslUsername !== undefined
      ? defined({
          mechanism: c.upstreamSaslMechanism,
          username: c.upstreamSaslUsername,
          password: c.upstreamSaslPassword,
          passwordFile: c.upstreamSaslPasswordFile,
        })
      : undefined;
  return { ...(tls ? { tls } : {}), ...(sasl ? { sasl } : {}) };
}

/** How both threads reach the upstream. */
export function upstreamConnectionSettings(c: ProxyConfig): ConnectionOptions {
  return { upstream: c.upstream, maxFrameBytes: c.maxFrameBytes, requestTimeoutMs: c.requestTimeoutMs, security: upstreamSecuritySettings(c) };
}

/** Compaction's options, each component's from its settings: the one place they are read for it. */
export function compactionSettings(c: ProxyConfig): CompactionOptions {
  return {
    engine: {
      connection: upstreamConnectionSettings(c),
      dataDir: c.dataDir,
      cleaner: { backoffMs: c.cleanerBackoffMs },
      carry: { bytesPerSecond: c.carryBytesPerSecond },
      ...(c.carrierGroup !== NO_CARRIER_GROUP && { election: { groupId: c.carrierGroup, sessionTimeoutMs: c.carrierSessionTimeoutMs } }),
      indexing: { onDemand: c.indexOnDemand, idleMs: c.indexIdleMs },
      // Fetch tuning has no setting.
      indexer: {},
      keyIdentity: { rules: c.keyIdentity, ...(c.schemaRegistryUrl !== undefined && { schemaRegistryUrl: c.schemaRegistryUrl }) },
    },
    configLayer: {
      staticTopics: c.topics,
      brokerConfigs: c.brokerConfigs,
      pollIntervalMs: DEFAULT_CONFIG_LAYER.pollIntervalMs,
      carryRetentionShare: c.carryRetentionShare,
      ...(c.storeRetentionMs !== undefined && { storeRetentionMs: c.storeRetentionMs }),
    },
    fetchView: { cacheBytes: c.viewCacheBytes },
  };
}

/**
 * Builds the validated config. `cli` holds values given on the command line, `env` the
 * process environment, `file` the parsed config file. Fails on the first bad value, naming it.
 */
export function resolveConfig(cli: Record<string, unknown>, env: NodeJS.ProcessEnv, file: Record<string, unknown>): ProxyConfig {
  checkFileKeys(file);
  // Every given value is parsed before any default is applied: a bad one is reported first.
  const given: Partial<ProxyConfig> = {};
  const give = <K extends SettingKey>(key: K) => {
    const value = givenValue(key, cli, env, file);
    if (value !== undefined) given[key] = value;
  };
  for (const key of SETTING_KEYS) give(key);
  const value = <K extends SettingKey>(key: K): ProxyConfig[K] => {
    const v = given[key];
    return v !== undefined ? v : SETTINGS[key].fallback(key, value);
  };
  const config: Partial<ProxyConfig> = {};
  const settle = <K extends SettingKey>(key: K) => {
    config[key] = value(key);
  };
  for (const key of SETTING_KEYS) settle(key);
  if (!isComplete(config)) throw new Error('a setting was left unresolved');

  for (const key of ['metricsTopicsInclude', 'metricsTopicsExclude'] satisfies SettingKey[]) {
    if (!config.metricsPerPartition && config[key].length > 0) {
      throw new ConfigError(`${describeKey(key)} has no effect without ${describeKey('metricsPerPartition')} set to true; set both or drop the topic list`);
    }
  }
  const { brokerPortBase, listen } = config;
  if (brokerPortBase <= listen.port && brokerPortBase + 1000 > listen.port) {
    throw new ConfigError(
      `invalid ${describeKey('brokerPortBase')}: ${brokerPortBase} would put broker ports on the listen port ${listen.port}; use a base above it`,
    );
  }
  checkTopicSettings(config.topics, config.brokerConfigs);
  checkCarryRate(config);
  const needRegistry = registryPatterns(config.keyIdentity);
  if (needRegistry.length > 0 && config.schemaRegistryUrl === undefined) {
    throw new ConfigError(
      `invalid ${describeKey('keyIdentity')}: "registry" (for ${needRegistry.join(', ')}) decodes keys with the schema registry, but ${describeKey('schemaRegistryUrl')} is not set; set it or use "bytes" or "payload"`,
    );
  }
  checkSecurity(config);
  checkManagementListeners(config);
  checkTablesListener(config);
  return config;
}

/**
 * A rate at which not even the smallest pass fits in the carry age that storeRetentionMs gives
 * keeps no record of any topic: known from the settings alone, so it stops the start. A store
 * that describes its retention is checked per topic, when one is created (capped-retention.ts).
 */
function checkCarryRate(c: ProxyConfig): void {
  if (c.storeRetentionMs === undefined || c.carryBytesPerSecond <= 0) return;
  const carryAt = Math.floor(c.storeRetentionMs * c.carryRetentionShare);
  const rewritable = rewritableBytes(c.carryBytesPerSecond, carryAt);
  if (rewritable >= MIN_PASS_BYTES) return;
  throw new ConfigError(
    `invalid ${describeKey('carryBytesPerSecond')}: ${c.carryBytesPerSecond} bytes per second write ${rewritable} bytes within the carry age of ${carryAt} ms ` +
      `(carryRetentionShare ${c.carryRetentionShare} of storeRetentionMs ${c.storeRetentionMs}), less than the ${MIN_PASS_BYTES} bytes of the smallest carry pass: ` +
      `raise it, or set 0 for no bound`,
  );
}

/** Every key was settled; an unset setting counts, with its value undefined. */
function isComplete(c: Partial<ProxyConfig>): c is ProxyConfig {
  return SETTING_KEYS.every((key) => key in c);
}
