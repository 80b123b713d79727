/**
 * A Kafka Connect 4.4 distributed worker (ConnectDistributed) from the test bed's jars, with its
 * REST API on a fresh loopback port. Its directory keeps worker.properties and the logs across a
 * stop and a restart, so a restarted worker is the same worker configured the same way.
 */
import fs from 'node:fs';
import path from 'node:path';
import { javaBin, jvmArgs, KAFKA_MAIN_CLASSES } from './java.js';
import { freePort } from './ports.js';
import { pollUntil, startBackground, tail } from './processes.js';

export interface ConnectWorkerOptions {
  /** bootstrap.servers: the proxy, in these tests. */
  bootstrap: string;
  /** Holds worker.properties and the worker's logs; reuse it to restart the same worker. */
  dir: string;
  /** group.id, also the prefix of the internal topics (<groupId>-configs, -offsets, -status). */
  groupId: string;
  /** Extra or overriding worker properties. */
  properties?: Record<string, string | number>;
  startTimeoutMs?: number;
}

export interface RestAnswer<T> {
  status: number;
  body: T;
}

export interface RunningConnectWorker {
  /** The REST API's base URL, e.g. http://127.0.0.1:PORT. */
  url: string;
  topics: { configs: string; offsets: string; status: string };
  /** Everything the worker has logged to stderr in this directory (earlier runs included). */
  log(): string;
  request<T = unknown>(method: string, urlPath: string, body?: unknown): Promise<RestAnswer<T>>;
  /** SIGTERM (Connect's graceful shutdown), SIGKILL after a grace period. */
  stop(): Promise<void>;
}

/**
 * The worker's own log4j2 configuration: the bed's (warnings to stderr), plus TopicAdmin at DEBUG,
 * which logs the cleanup.policy Connect found when it checks its internal topics.
 */
function log4jProperties(): string {
  return [
    'status = warn',
    'appender.stderr.type = Console',
    'appender.stderr.name = STDERR',
    'appender.stderr.target = SYSTEM_ERR',
    'appender.stderr.layout.type = PatternLayout',
    'appender.stderr.layout.pattern = [%d{HH:mm:ss.SSS}] %p %m (%c{1})%n',
    'rootLogger.level = warn',
    'rootLogger.appenderRef.stderr.ref = STDERR',
    'logger.topicadmin.name = org.apache.kafka.connect.util.TopicAdmin',
    'logger.topicadmin.level = debug',
    '',
  ].join('\n');
}

export async function startConnectWorker(opts: ConnectWorkerOptions): Promise<RunningConnectWorker> {
  const restPort = await freePort();
  const topics = { configs: `${opts.groupId}-configs`, offsets: `${opts.groupId}-offsets`, status: `${opts.groupId}-status` };
  const props: Record<string, string | number> = {
    'bootstrap.servers': opts.bootstrap,
    'group.id': opts.groupId,
    'config.storage.topic': topics.configs,
    'offset.storage.topic': topics.offsets,
    'status.storage.topic': topics.status,
    'config.storage.replication.factor': 1,
    'offset.storage.replication.factor': 1,
    'status.storage.replication.factor': 1,
    'key.converter': 'org.apache.kafka.connect.storage.StringConverter',
    'value.converter': 'org.apache.kafka.connect.storage.StringConverter',
    listeners: `http://127.0.0.1:${restPort}`,
    'rest.advertised.host.name': '127.0.0.1',
    // The bed's connectors (java-classes) have no ServiceLoader manifests: find them by scanning.
    'plugin.discovery': 'only_scan',
    ...opts.properties,
  };
  const configFile = path.join(opts.dir, 'worker.properties');
  const log4jFile = path.join(opts.dir, 'log4j2.properties');
  const stderrFile = path.join(opts.dir, 'worker.stderr.log');
  fs.writeFileSync(
    configFile,
    Object.entries(props)
      .map(([k, v]) => `${k}=${v}`)
      .join('\n') + '\n',
  );
  fs.writeFileSync(log4jFile, log4jProperties());
  const log = () => (fs.existsSync(stderrFile) ? fs.readFileSync(stderrFile, 'utf8') : '');
  // The later -Dlog4j2.configurationFile wins over the bed's, which jvmArgs sets.
  const proc = startBackground(javaBin(), [...jvmArgs(256), `-Dlog4j2.configurationFile=${log4jFile}`, KAFKA_MAIN_CLASSES['connect-distributed'], configFile], {
    cwd: opts.dir,
    stdoutFile: path.join(opts.dir, 'worker.stdout.log'),
    stderrFile,
  });
  const url = `http://127.0.0.1:${restPort}`;
  const request = async <T>(method: string, urlPath: string, body?: unknown): Promise<RestAnswer<T>> => {
    const res = await fetch(`${url}${urlPath}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    // Jetty answers some failures with an HTML page: keep it as text for the assertion message.
    const json = (res.headers.get('content-type') ?? '').includes('json');
    return { status: res.status, body: (json && text !== '' ? JSON.parse(text) : text) as T };
  };
  const worker: RunningConnectWorker = { url, topics, log, request, stop: () => proc.stop(30_000) };
  try {
    // /health (KIP-1017) answers 200 only once the herder has started: internal topics created
    // and checked, configs and offsets read to their end, the worker in its group.
    await pollUntil(
      `connect worker at ${url}`,
      opts.startTimeoutMs ?? 90_000,
      async () => ((await request('GET', '/health')).status === 200 ? true : undefined),
      () => {
        const s = proc.exitStatus();
        return s ? `exited (code ${s.code}, signal ${s.signal}) while starting; stderr tail:\n${tail(log())}` : undefined;
      },
    );
  } catch (e) {
    await proc.stop(5_000);
    throw new Error(`${(e as Error).message}\nworker stderr tail:\n${tail(log())}`, { cause: e });
  }
  return worker;
}
