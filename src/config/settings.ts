/**
 * Every setting of `kcompact proxy`, in one table: its flag, its KCOMPACT_* environment twin and
 * its config-file key are derived from the name, so the three can never drift apart.
 * Precedence: command line, then environment, then config file, then default.
 */
import fs from 'node:fs';
import { isLoopbackHost, parseHostPort, parseHostPortList } from './host-port.js';
import { createLogger, isLogLevel, type LogLevel } from '../ops/log.js';
import type { HostPort } from '../proxy/broker-map.js';
import type { StaticTopic } from '../compaction/config/topic-configs.js';
import { BrokerDefaults } from '../compaction/config/broker-defaults.js';
import { TopicConfigState } from '../compaction/config/topic-config-state.js';
import { TopicConfigError } from '../compaction/config/config-error.js';
import { TopicIds } from '../proxy/topic-ids.js';
import { checkKeyIdentityRules, registryPatterns, type KeyIdentityMode } from '../compaction/key-identity/key-identity-rules.js';
import { checkRegistryUrl } from '../compaction/key-identity/registry-url.js';
import { DEFAULT_VIEW_CACHE_BYTES } from '../compaction/fetch-view/view-cache.js';
import { listenerContextOptions, type ListenerTlsSettings } from '../proxy/listener-tls.js';
import { passwordOf, upstreamContext, type UpstreamSecurity, type UpstreamTlsSettings } from '../upstream/upstream-connector.js';
import { SASL_MECHANISMS, type SaslMechanism } from '../upstream/sasl-client.js';
import { MIN_TOKEN_LENGTH, tokenOf } from '../ops/admin-token.js';

export interface ProxyConfig {
  upstream: HostPort[];
  listen: HostPort;
  dataDir: string;
  advertisedHost: string;
  brokerPortBase: number;
  maxFrameBytes: number;
  requestTimeoutMs: number;
  logLevel: LogLevel;
  cleanerBackoffMs: number;
  viewCacheBytes: number;
  metricsListen: HostPort;
  adminListen: HostPort;
  /** Bearer token file of the admin listener; needed when it is not on loopback. */
  adminTokenFile: string | undefined;
  topics: StaticTopic[];
  brokerConfigs: Record<string, string>;
  drainTimeoutMs: number;
  metricsPerPartition: boolean;
  metricsTopicsInclude: string[];
  metricsTopicsExclude: string[];
  /** Base URL of a Confluent-compatible schema registry, credentials as user info; undefined: none. */
  schemaRegistryUrl: string | undefined;
  keyIdentity: Record<string, KeyIdentityMode>;
  /** PEM files of the client listeners' TLS; both unset: plaintext listeners. */
  tlsCertFile: string | undefined;
  tlsKeyFile: string | undefined;
  /** PEM CA file: clients must present a certificate it signed (mutual TLS). */
  tlsClientCaFile: string | undefined;
  upstreamTls: boolean;
  upstreamTlsCaFile: string | undefined;
  upstreamTlsCertFile: string | undefined;
  upstreamTlsKeyFile: string | undefined;
  upstreamTlsServerName: string | undefined;
  upstreamTlsVerifyHostname: boolean;
  /** SASL of the proxy's own upstream connections; unset: they do not authenticate. */
  upstreamSaslMechanism: SaslMechanism | undefined;
  upstreamSaslUsername: string | undefined;
  upstreamSaslPassword: string | undefined;
  upstreamSaslPasswordFile: string | undefined;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export interface Setting {
  /** camelCase: the config-file key; the flag is its kebab-case, the env var its SNAKE_CASE. */
  key: keyof ProxyConfig;
  arg: string;
  description: string;
  defaultText?: string;
  parse(raw: unknown): unknown;
  /** How a bad value is quoted back, when it may hold a secret. */
  quote?(raw: unknown): string;
}

const integer = (min: number, max: number) => (raw: unknown) => {
  // Number() would also take "0x10", "1e3" and "": only plain decimal digits are an integer here.
  const digits = String(raw).trim();
  const n = typeof raw === 'number' ? raw : /^-?\d+$/.test(digits) ? Number(digits) : NaN;
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`expected an integer from ${min} to ${max}`);
  return n;
};

const boolean = (raw: unknown) => {
  if (typeof raw === 'boolean') return raw;
  const v = String(raw).trim().toLowerCase();
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw new Error('expected true or false');
};

/** Topic names or globs (`*` matches any run of characters), as a comma list or a JSON array. */
const topicPatterns = (raw: unknown) => {
  const shape = 'a comma list or a JSON array of topic names or globs';
  const list = typeof raw !== 'string' ? raw : raw.trim().startsWith('[') ? json(raw, shape) : raw.split(',');
  if (!Array.isArray(list)) throw new Error(`expected ${shape}`);
  return list.map((entry: unknown, i) => {
    if (typeof entry !== 'string' || entry.trim() === '') throw new Error(`entry ${i} must be a non-empty topic name or glob, got ${JSON.stringify(entry)}`);
    return entry.trim();
  });
};

const text = (raw: unknown) => {
  if (typeof raw !== 'string' || raw.trim() === '') throw new Error('expected a non-empty string');
  return raw.trim();
};

/** A path the proxy can read now (its contents are checked with the settings it goes with). */
const readableFile = (raw: unknown) => {
  const file = text(raw);
  try {
    fs.accessSync(file, fs.constants.R_OK);
  } catch (err) {
    throw new Error(`expected the path of a readable file (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, { cause: err });
  }
  return file;
};

/** Never quoted back: a value that failed to parse may still be the real secret. */
const hidden = () => '(value hidden)';

/** A JSON value, given as text (flag, environment) or already parsed (config file). */
function json(raw: unknown, expected: string): unknown {
  if (typeof raw !== 'string') return raw;
  try {
    return JSON.parse(raw) as unknown;
  } catch (err) {
    throw new Error(`expected ${expected}, but the value is not valid JSON (${(err as Error).message})`, { cause: err });
  }
}

const STATIC_TOPICS_SHAPE = 'a JSON array of {"topic": NAME, "configs": {NAME: VALUE}}';

function parseStaticTopics(raw: unknown): StaticTopic[] {
  const list = json(raw, STATIC_TOPICS_SHAPE);
  if (!Array.isArray(list)) throw new Error(`expected ${STATIC_TOPICS_SHAPE}`);
  return list.map((entry, i) => {
    const e = entry as { topic?: unknown; configs?: unknown };
    if (typeof e?.topic !== 'string' || e.topic === '') throw new Error(`entry ${i} needs a "topic" name`);
    const configs = e.configs ?? {};
    if (typeof configs !== 'object' || configs === null || Array.isArray(configs))
      throw new Error(`entry ${i} ("${e.topic}"): "configs" must be an object of config names to string values`);
    for (const [k, v] of Object.entries(configs)) {
      if (typeof v !== 'string') throw new Error(`entry ${i} ("${e.topic}"): config ${k} must be a string, got ${JSON.stringify(v)}`);
    }
    return { topic: e.topic, configs: configs as Record<string, string> };
  });
}

export const SETTINGS: readonly Setting[] = [
  {
    key: 'upstream',
    arg: 'HOST:PORT[,HOST:PORT...]',
    description: 'bootstrap address(es) of the upstream Kafka-protocol store (required)',
    parse: (raw) => parseHostPortList(Array.isArray(raw) ? raw.join(',') : String(raw)),
  },
  {
    key: 'listen',
    arg: 'HOST:PORT',
    description: 'address of the bootstrap listener clients connect to',
    defaultText: '127.0.0.1:9092',
    parse: (raw) => parseHostPort(String(raw)),
  },
  {
    key: 'dataDir',
    arg: 'DIR',
    description: 'directory for the local state (SQLite key index, config cache)',
    defaultText: './kcompact-data',
    parse: text,
  },
  {
    key: 'advertisedHost',
    arg: 'HOST',
    description: 'host name clients are told to use for the broker listeners',
    defaultText: 'the listen host (127.0.0.1 when listening on all interfaces)',
    parse: text,
  },
  {
    key: 'brokerPortBase',
    arg: 'PORT',
    description: 'upstream broker N is served on local port PORT+N',
    defaultText: 'listen port + 1',
    parse: integer(1, 65535),
  },
  {
    key: 'maxFrameBytes',
    arg: 'BYTES',
    description: 'largest request or response frame accepted; a larger one closes the connection',
    defaultText: '104857600 (100 MiB)',
    parse: integer(1024, 2 ** 31 - 1),
  },
  {
    key: 'requestTimeoutMs',
    arg: 'MS',
    description: "timeout of the proxy's own requests to the upstream",
    defaultText: '30000',
    parse: integer(100, 3_600_000),
  },
  {
    key: 'cleanerBackoffMs',
    arg: 'MS',
    description: "pause between cleaner rounds (Kafka's log.cleaner.backoff.ms)",
    defaultText: '15000',
    parse: integer(10, 86_400_000),
  },
  {
    key: 'viewCacheBytes',
    arg: 'BYTES',
    description: 'memory for compacted batches already read, so reading a compacted topic again skips its superseded records upstream; 0 turns it off',
    defaultText: `${DEFAULT_VIEW_CACHE_BYTES} (16 MiB)`,
    parse: integer(0, 2 ** 40),
  },
  {
    key: 'metricsListen',
    arg: 'HOST:PORT',
    description: 'metrics listener: /metrics and the probes /livez, /readyz, /startupz, for the kubelet and Prometheus (0.0.0.0 in a pod); no admin routes',
    defaultText: '127.0.0.1:9644',
    parse: (raw) => parseHostPort(String(raw)),
  },
  {
    key: 'adminListen',
    arg: 'HOST:PORT',
    description: 'admin listener: /status, /inspect, /compact, /rebuild-index for the admin verbs; off loopback only with --admin-token-file',
    defaultText: '127.0.0.1:9645',
    parse: (raw) => parseHostPort(String(raw)),
  },
  {
    key: 'adminTokenFile',
    arg: 'FILE',
    description: `file holding the bearer token the admin listener requires (at least ${MIN_TOKEN_LENGTH} characters); re-read when it changes and on SIGHUP; the admin verbs send it`,
    defaultText: 'none (no token: the admin listener must be on loopback)',
    parse: readableFile,
  },
  {
    key: 'topics',
    arg: 'JSON',
    description: 'topics compacted by this configuration, for stores without admin APIs: [{"topic":"t","configs":{"cleanup.policy":"compact"}}]',
    defaultText: '[]',
    parse: parseStaticTopics,
  },
  {
    key: 'brokerConfigs',
    arg: 'JSON',
    description: 'broker-level defaults of the compaction configs, by Kafka broker config name: {"log.cleaner.delete.retention.ms":"3600000"}',
    defaultText: "{} (Kafka's defaults)",
    parse: (raw) => {
      const obj = json(raw, 'a JSON object of broker config names to string values');
      if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) throw new Error('expected a JSON object of broker config names to string values');
      for (const [k, v] of Object.entries(obj)) if (typeof v !== 'string') throw new Error(`${k} must be a string, got ${JSON.stringify(v)}`);
      return obj;
    },
  },
  {
    key: 'drainTimeoutMs',
    arg: 'MS',
    description: 'on SIGTERM, how long in-flight requests may take to be answered before their connections are closed anyway',
    defaultText: '10000',
    parse: integer(0, 3_600_000),
  },
  {
    key: 'metricsPerPartition',
    arg: 'true|false',
    description: 'also export compaction metrics per partition (labels topic and partition)',
    defaultText: 'false',
    parse: boolean,
  },
  {
    key: 'metricsTopicsInclude',
    arg: 'TOPICS',
    description: 'with --metrics-per-partition: only these topics (names or globs with *, comma list or JSON array)',
    defaultText: '[] (every topic)',
    parse: topicPatterns,
  },
  {
    key: 'metricsTopicsExclude',
    arg: 'TOPICS',
    description: 'with --metrics-per-partition: not these topics (names or globs with *; wins over the include list)',
    defaultText: '[]',
    parse: topicPatterns,
  },
  {
    key: 'schemaRegistryUrl',
    arg: 'URL',
    description: 'schema registry speaking the Confluent REST API, for --key-identity "registry"; basic auth as user info (https://user:pass@host)',
    defaultText: 'none',
    parse: checkRegistryUrl,
    quote: (raw) => JSON.stringify(String(raw).replace(/\/\/[^/@]*@/, '//***@')),
  },
  {
    key: 'keyIdentity',
    arg: 'JSON',
    description:
      'how keys compare per topic name or glob: {"orders-*":"registry"}; bytes (exact bytes, as Kafka), payload (framed keys without the schema id), registry (decoded and canonicalised)',
    defaultText: '{} (exact bytes for every topic)',
    parse: (raw) => checkKeyIdentityRules(json(raw, 'a JSON object of topic names or globs to bytes, payload or registry')),
  },
  {
    key: 'tlsCertFile',
    arg: 'FILE',
    description:
      'PEM certificate chain the client listeners present; with --tls-key-file every listener (bootstrap and brokers) speaks TLS; re-read when it changes and on SIGHUP',
    defaultText: 'none (plaintext listeners)',
    parse: readableFile,
  },
  {
    key: 'tlsKeyFile',
    arg: 'FILE',
    description: 'PEM private key (unencrypted) of --tls-cert-file',
    defaultText: 'none',
    parse: readableFile,
  },
  {
    key: 'tlsClientCaFile',
    arg: 'FILE',
    description: 'PEM CA certificates: clients must present a certificate one of them signed (mutual TLS)',
    defaultText: 'none (clients are not asked for a certificate)',
    parse: readableFile,
  },
  {
    key: 'upstreamTls',
    arg: 'true|false',
    description: "connect to the upstream with TLS: every connection, clients' and the proxy's own",
    defaultText: 'false',
    parse: boolean,
  },
  {
    key: 'upstreamTlsCaFile',
    arg: 'FILE',
    description: "PEM CA certificates the upstream's certificate must chain to; re-read when it changes and on SIGHUP",
    defaultText: "Node's bundled public CAs",
    parse: readableFile,
  },
  {
    key: 'upstreamTlsCertFile',
    arg: 'FILE',
    description: 'PEM client certificate chain for an upstream that requires mutual TLS (with --upstream-tls-key-file)',
    defaultText: 'none',
    parse: readableFile,
  },
  {
    key: 'upstreamTlsKeyFile',
    arg: 'FILE',
    description: 'PEM private key (unencrypted) of --upstream-tls-cert-file',
    defaultText: 'none',
    parse: readableFile,
  },
  {
    key: 'upstreamTlsServerName',
    arg: 'HOST',
    description: "name sent as SNI and checked in the upstream's certificates instead of each broker's host",
    defaultText: "each broker's host",
    parse: text,
  },
  {
    key: 'upstreamTlsVerifyHostname',
    arg: 'true|false',
    description: "check that the upstream's certificate names the broker's host (or --upstream-tls-server-name); the chain is verified either way",
    defaultText: 'true',
    parse: boolean,
  },
  {
    key: 'upstreamSaslMechanism',
    arg: 'MECHANISM',
    description:
      "SASL mechanism of the proxy's own upstream connections (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512); clients authenticate themselves through the proxy",
    defaultText: 'none (the proxy does not authenticate)',
    parse: (raw) => {
      const v = String(raw).trim();
      if (!(SASL_MECHANISMS as readonly string[]).includes(v)) throw new Error(`expected one of ${SASL_MECHANISMS.join(', ')}`);
      return v;
    },
  },
  {
    key: 'upstreamSaslUsername',
    arg: 'USER',
    description: "user of the proxy's own upstream connections",
    defaultText: 'none',
    parse: text,
  },
  {
    key: 'upstreamSaslPassword',
    arg: 'PASSWORD',
    description:
      'password of --upstream-sasl-username; prefer the environment variable or --upstream-sasl-password-file to a flag or the config file; never logged',
    defaultText: 'none',
    parse: (raw) => {
      if (typeof raw !== 'string' || raw === '') throw new Error('expected a non-empty string');
      return raw;
    },
    quote: hidden,
  },
  {
    key: 'upstreamSaslPasswordFile',
    arg: 'FILE',
    description: 'file holding the password of --upstream-sasl-username (one trailing line break ignored); re-read when it changes',
    defaultText: 'none',
    parse: readableFile,
  },
  {
    key: 'logLevel',
    arg: 'LEVEL',
    description: 'debug, info, warn or error',
    defaultText: 'info',
    parse: (raw) => {
      const v = String(raw);
      if (!isLogLevel(v)) throw new Error('expected one of debug, info, warn, error');
      return v;
    },
  },
];

export const flagOf = (key: string): string => key.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase());
export const envOf = (key: string): string => 'KCOMPACT_' + flagOf(key).replace(/-/g, '_').toUpperCase();

export function describeKey(key: string): string {
  return `--${flagOf(key)} / ${envOf(key)} / config key "${key}"`;
}

export const DEFAULT_METRICS_LISTEN: Readonly<HostPort> = { host: '127.0.0.1', port: 9644 };
export const DEFAULT_ADMIN_LISTEN: Readonly<HostPort> = { host: '127.0.0.1', port: 9645 };

function checkFileKeys(file: Record<string, unknown>): void {
  const known = new Set<string>(SETTINGS.map((s) => s.key));
  for (const key of Object.keys(file)) {
    if (!known.has(key)) throw new ConfigError(`unknown config file key "${key}"; allowed keys: ${[...known].join(', ')}`);
  }
}

/** The given settings' values, first found on the command line, in the environment, in the file; absent ones are left out. */
function parseValues(
  settings: readonly Setting[],
  cli: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
  file: Record<string, unknown>,
): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const setting of settings) {
    const raw = cli[setting.key] ?? env[envOf(setting.key)] ?? file[setting.key];
    if (raw === undefined || raw === '') continue;
    try {
      values[setting.key] = setting.parse(raw);
    } catch (err) {
      throw new ConfigError(`invalid ${describeKey(setting.key)}: ${(err as Error).message}, got ${setting.quote ? setting.quote(raw) : JSON.stringify(raw)}`);
    }
  }
  return values;
}

/**
 * Some settings alone, validated as resolveConfig does, without defaults: the admin verbs read a
 * proxy's management address and data directory from the same flags, environment and file.
 */
export function resolveSettings<K extends keyof ProxyConfig>(
  keys: readonly K[],
  cli: Record<string, unknown>,
  env: NodeJS.ProcessEnv,
  file: Record<string, unknown>,
): Partial<Pick<ProxyConfig, K>> {
  checkFileKeys(file);
  return parseValues(
    SETTINGS.filter((s) => (keys as readonly string[]).includes(s.key)),
    cli,
    env,
    file,
  ) as Partial<Pick<ProxyConfig, K>>;
}

/**
 * Static topics and broker defaults go through the config layer's own checks here, so that a bad
 * one stops the start with the key named rather than after the data directory and upstream.
 */
function checkTopicSettings(topics: readonly StaticTopic[], brokerConfigs: Readonly<Record<string, string>>): void {
  let defaults: BrokerDefaults;
  try {
    defaults = new BrokerDefaults(brokerConfigs);
  } catch (err) {
    if (err instanceof TopicConfigError) throw new ConfigError(`invalid ${describeKey('brokerConfigs')}: ${err.message}`);
    throw err;
  }
  try {
    new TopicConfigState(defaults, new TopicIds(), topics, createLogger());
  } catch (err) {
    if (err instanceof TopicConfigError) throw new ConfigError(`invalid ${describeKey('topics')}: ${err.message}`);
    throw err;
  }
}

/** The files' contents, read for a check; an unreadable file is a ConfigError naming its key. */
function readForCheck(files: readonly [key: keyof ProxyConfig, path: string][]): Buffer[] {
  return files.map(([key, file]) => {
    try {
      return fs.readFileSync(file);
    } catch (err) {
      throw new ConfigError(`cannot read ${file} (${describeKey(key)}): ${(err as Error).message}`);
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
        `the listener TLS files of ${keysOf(keys)} cannot be used together: ${(err as Error).message}; give a PEM certificate chain, its unencrypted PEM key and PEM CA certificates`,
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
        `the upstream TLS files of ${keysOf(keys)} cannot be used together: ${(err as Error).message}; give PEM CA certificates, a PEM client certificate chain and its unencrypted PEM key`,
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

const wildcard = (host: string) => host === '0.0.0.0' || host === '::';

/**
 * The admin routes can drop every index and make the proxy re-read the store: off loopback they
 * need a token. The two listeners cannot share a port: which routes a request reaches is decided
 * by the listener it arrived on.
 */
function checkManagementListeners(c: ProxyConfig): void {
  const { adminListen: admin, metricsListen: metrics } = c;
  if (admin.port !== 0 && admin.port === metrics.port && (admin.host === metrics.host || wildcard(admin.host) || wildcard(metrics.host))) {
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
  try {
    tokenOf(readForCheck([['adminTokenFile', c.adminTokenFile]])[0]!);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`${describeKey('adminTokenFile')}: ${c.adminTokenFile}: ${(err as Error).message}`);
  }
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

/**
 * Builds the validated config. `cli` holds values given on the command line, `env` the
 * process environment, `file` the parsed config file. Fails on the first bad value, naming it.
 */
export function resolveConfig(cli: Record<string, unknown>, env: NodeJS.ProcessEnv, file: Record<string, unknown>): ProxyConfig {
  checkFileKeys(file);
  const values = parseValues(SETTINGS, cli, env, file);
  if (!values.upstream) throw new ConfigError(`missing ${describeKey('upstream')}: the address of the upstream store is required`);
  const listen = (values.listen as HostPort | undefined) ?? { host: '127.0.0.1', port: 9092 };
  const anyInterface = listen.host === '0.0.0.0' || listen.host === '::';
  const brokerPortBase = (values.brokerPortBase as number | undefined) ?? listen.port + 1;
  const metricsPerPartition = (values.metricsPerPartition as boolean | undefined) ?? false;
  for (const key of ['metricsTopicsInclude', 'metricsTopicsExclude'] as const) {
    if (!metricsPerPartition && (values[key] as string[] | undefined)?.length) {
      throw new ConfigError(`${describeKey(key)} has no effect without ${describeKey('metricsPerPartition')} set to true; set both or drop the topic list`);
    }
  }
  if (brokerPortBase <= listen.port && brokerPortBase + 1000 > listen.port) {
    throw new ConfigError(
      `invalid ${describeKey('brokerPortBase')}: ${brokerPortBase} would put broker ports on the listen port ${listen.port}; use a base above it`,
    );
  }
  checkTopicSettings((values.topics as StaticTopic[] | undefined) ?? [], (values.brokerConfigs as Record<string, string> | undefined) ?? {});
  const keyIdentity = (values.keyIdentity as Record<string, KeyIdentityMode> | undefined) ?? {};
  const schemaRegistryUrl = values.schemaRegistryUrl as string | undefined;
  const needRegistry = registryPatterns(keyIdentity);
  if (needRegistry.length > 0 && schemaRegistryUrl === undefined) {
    throw new ConfigError(
      `invalid ${describeKey('keyIdentity')}: "registry" (for ${needRegistry.join(', ')}) decodes keys with the schema registry, but ${describeKey('schemaRegistryUrl')} is not set; set it or use "bytes" or "payload"`,
    );
  }
  const config: ProxyConfig = {
    upstream: values.upstream as HostPort[],
    listen,
    dataDir: (values.dataDir as string | undefined) ?? './kcompact-data',
    advertisedHost: (values.advertisedHost as string | undefined) ?? (anyInterface ? '127.0.0.1' : listen.host),
    brokerPortBase,
    maxFrameBytes: (values.maxFrameBytes as number | undefined) ?? 100 * 1024 * 1024,
    requestTimeoutMs: (values.requestTimeoutMs as number | undefined) ?? 30_000,
    logLevel: (values.logLevel as LogLevel | undefined) ?? 'info',
    cleanerBackoffMs: (values.cleanerBackoffMs as number | undefined) ?? 15_000,
    viewCacheBytes: (values.viewCacheBytes as number | undefined) ?? DEFAULT_VIEW_CACHE_BYTES,
    metricsListen: (values.metricsListen as HostPort | undefined) ?? { ...DEFAULT_METRICS_LISTEN },
    adminListen: (values.adminListen as HostPort | undefined) ?? { ...DEFAULT_ADMIN_LISTEN },
    adminTokenFile: values.adminTokenFile as string | undefined,
    topics: (values.topics as StaticTopic[] | undefined) ?? [],
    brokerConfigs: (values.brokerConfigs as Record<string, string> | undefined) ?? {},
    drainTimeoutMs: (values.drainTimeoutMs as number | undefined) ?? 10_000,
    metricsPerPartition,
    metricsTopicsInclude: (values.metricsTopicsInclude as string[] | undefined) ?? [],
    metricsTopicsExclude: (values.metricsTopicsExclude as string[] | undefined) ?? [],
    schemaRegistryUrl,
    keyIdentity,
    tlsCertFile: values.tlsCertFile as string | undefined,
    tlsKeyFile: values.tlsKeyFile as string | undefined,
    tlsClientCaFile: values.tlsClientCaFile as string | undefined,
    upstreamTls: (values.upstreamTls as boolean | undefined) ?? false,
    upstreamTlsCaFile: values.upstreamTlsCaFile as string | undefined,
    upstreamTlsCertFile: values.upstreamTlsCertFile as string | undefined,
    upstreamTlsKeyFile: values.upstreamTlsKeyFile as string | undefined,
    upstreamTlsServerName: values.upstreamTlsServerName as string | undefined,
    upstreamTlsVerifyHostname: (values.upstreamTlsVerifyHostname as boolean | undefined) ?? true,
    upstreamSaslMechanism: values.upstreamSaslMechanism as SaslMechanism | undefined,
    upstreamSaslUsername: values.upstreamSaslUsername as string | undefined,
    upstreamSaslPassword: values.upstreamSaslPassword as string | undefined,
    upstreamSaslPasswordFile: values.upstreamSaslPasswordFile as string | undefined,
  };
  checkSecurity(config);
  checkManagementListeners(config);
  return config;
}
