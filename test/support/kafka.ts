/**
 * A real Apache Kafka 4.4 broker (KRaft, one node acting as broker and controller) in a temp dir
 * on fresh loopback ports, from the jars that install.sh collects.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
// kafkajs is CommonJS: Node's ESM loader sees only its default export as a value.
import kafkajs from 'kafkajs';
import { javaArgs, javaBin, KAFKA_MAIN_CLASSES, javaToolOk } from './java.js';
import { freePorts } from './ports.js';
import { makeTempDir, pollUntil, startBackground, tail } from './processes.js';

export type KafkaCompaction = 'off' | 'reference';

export interface KafkaOptions {
  /** 'off': an upstream that lacks compaction; 'reference': Kafka's own cleaner, tuned to run quickly. */
  compaction: KafkaCompaction;
  /** Extra or overriding server.properties entries. */
  properties?: Record<string, string | number>;
  /** The broker's JVM heap (512 MiB unless set). */
  heapMiB?: number;
  /**
   * More listeners, each advertising its own port (or another one: a relay listening there and
   * forwarding to the listener keeps clients that bootstrapped through it on it). A TLS or SASL
   * listener takes its settings from `properties` (listener.name.<name>.ssl.*, sasl.jaas.config).
   */
  extraListeners?: ExtraListener[];
  /** SCRAM credentials written at format time (the storage tool's --add-scram). */
  scramUsers?: ScramUser[];
  /** How long to wait for the broker to serve metadata. */
  startTimeoutMs?: number;
}

export interface RunningKafka {
  bootstrap: string;
  port: number;
  controllerPort: number;
  /** The temp dir holding server.properties, the data dir and the broker's stdout/stderr. */
  dir: string;
  /** The last lines the broker wrote to stderr. */
  stderrTail(lines?: number): string;
  /** The broker's process id (it changes with restart()). */
  pid(): number;
  /**
   * Ends the broker process, keeping its ports, config and log dir for restart(): SIGKILL (a
   * crash) or SIGTERM (a controlled shutdown).
   */
  halt(signal: 'SIGKILL' | 'SIGTERM'): Promise<void>;
  /** Starts the halted broker again on the same ports and log dir; resolves once it serves. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** PEERS.md's settings that make Kafka's cleaner act within a second or so. */
const REFERENCE_CLEANER = {
  'log.cleaner.enable': 'true',
  'log.cleaner.backoff.ms': 100,
  'log.cleaner.min.cleanable.ratio': 0.01,
  'log.cleaner.delete.retention.ms': 100,
  'log.cleaner.dedupe.buffer.size': 16777216,
  'log.segment.delete.delay.ms': 100,
  'log.retention.check.interval.ms': 1000,
};

export interface ExtraListener {
  /** Listener name, e.g. RELAY. */
  name: string;
  port: number;
  advertisedPort: number;
  /** PLAINTEXT when omitted. */
  securityProtocol?: 'PLAINTEXT' | 'SSL' | 'SASL_PLAINTEXT' | 'SASL_SSL';
}

export interface ScramUser {
  mechanism: 'SCRAM-SHA-256' | 'SCRAM-SHA-512';
  name: string;
  password: string;
}

export function kafkaServerProperties(opts: {
  port: number;
  controllerPort: number;
  logDir: string;
  compaction: KafkaCompaction;
  properties?: Record<string, string | number>;
  extraListeners?: ExtraListener[];
}): string {
  const extra = opts.extraListeners ?? [];
  const more = (f: (l: ExtraListener) => string) => extra.map((l) => `,${f(l)}`).join('');
  const props: Record<string, string | number> = {
    'process.roles': 'broker,controller',
    'node.id': 1,
    'controller.quorum.bootstrap.servers': `127.0.0.1:${opts.controllerPort}`,
    listeners: `PLAINTEXT://127.0.0.1:${opts.port},CONTROLLER://127.0.0.1:${opts.controllerPort}${more((l) => `${l.name}://127.0.0.1:${l.port}`)}`,
    'advertised.listeners': `PLAINTEXT://127.0.0.1:${opts.port},CONTROLLER://127.0.0.1:${opts.controllerPort}${more((l) => `${l.name}://127.0.0.1:${l.advertisedPort}`)}`,
    'controller.listener.names': 'CONTROLLER',
    'inter.broker.listener.name': 'PLAINTEXT',
    'listener.security.protocol.map': `CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT${more((l) => `${l.name}:${l.securityProtocol ?? 'PLAINTEXT'}`)}`,
    'log.dirs': opts.logDir,
    'num.partitions': 1,
    'offsets.topic.replication.factor': 1,
    'transaction.state.log.replication.factor': 1,
    'transaction.state.log.min.isr': 1,
    'share.coordinator.state.topic.replication.factor': 1,
    'share.coordinator.state.topic.min.isr': 1,
    // One partition each instead of 50: the first group or transaction comes up in a blink.
    'offsets.topic.num.partitions': 1,
    'transaction.state.log.num.partitions': 1,
    'share.coordinator.state.topic.num.partitions': 1,
    'group.initial.rebalance.delay.ms': 0,
    ...(opts.compaction === 'reference' ? REFERENCE_CLEANER : { 'log.cleaner.enable': 'false' }),
    ...opts.properties,
  };
  return (
    Object.entries(props)
      .map(([k, v]) => `${k}=${v}`)
      .join('\n') + '\n'
  );
}

/**
 * What `StorageTool random-uuid` prints (a random UUID in unpadded base64url), made here to
 * spare a JVM start. Like Kafka, avoid a leading '-', which a command line would take for a flag.
 */
function clusterId(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

/** Resolves once the broker answers Metadata with itself registered. */
async function brokerServes(bootstrap: string): Promise<true | undefined> {
  const admin = new kafkajs.Kafka({
    clientId: 'kcompact-readiness',
    brokers: [bootstrap],
    logLevel: kafkajs.logLevel.NOTHING,
    connectionTimeout: 1000,
    retry: { retries: 0 },
  }).admin();
  try {
    await admin.connect();
    const cluster = await admin.describeCluster();
    return cluster.brokers.length > 0 ? true : undefined;
  } finally {
    await admin.disconnect();
  }
}

export async function startKafka(opts: KafkaOptions): Promise<RunningKafka> {
  const temp = makeTempDir('kcompact-kafka-');
  const dir = temp.path;
  const [port, controllerPort] = await freePorts(2);
  const configFile = path.join(dir, 'server.properties');
  const stderrFile = path.join(dir, 'stderr.log');
  fs.writeFileSync(
    configFile,
    kafkaServerProperties({
      port,
      controllerPort,
      logDir: path.join(dir, 'data'),
      compaction: opts.compaction,
      properties: opts.properties,
      extraListeners: opts.extraListeners,
    }),
  );
  const stderrTail = (lines = 40) => tail(fs.existsSync(stderrFile) ? fs.readFileSync(stderrFile, 'utf8') : '', lines);
  try {
    const scram = (opts.scramUsers ?? []).flatMap((u) => ['--add-scram', `${u.mechanism}=[name=${u.name},password=${u.password}]`]);
    await javaToolOk('storage', ['format', '--standalone', '-t', clusterId(), '-c', configFile, '--ignore-formatted', ...scram]);
  } catch (e) {
    temp.remove();
    throw e;
  }
  const launch = () =>
    startBackground(javaBin(), javaArgs(KAFKA_MAIN_CLASSES.server, [configFile], opts.heapMiB ?? 512), {
      cwd: dir,
      stdoutFile: path.join(dir, 'stdout.log'),
      stderrFile,
    });
  let proc = launch();
  const bootstrap = `127.0.0.1:${port}`;
  const stop = async () => {
    try {
      await proc.stop(15_000);
    } finally {
      temp.remove();
    }
  };
  const serving = () =>
    pollUntil(
      `kafka at ${bootstrap}`,
      opts.startTimeoutMs ?? 60_000,
      () => brokerServes(bootstrap),
      () => {
        const s = proc.exitStatus();
        return s ? `exited (code ${s.code}, signal ${s.signal}) while starting` : undefined;
      },
    );
  try {
    await serving();
  } catch (e) {
    const message = `${(e as Error).message}\nbroker stderr tail:\n${stderrTail()}`;
    await stop();
    throw new Error(message, { cause: e });
  }
  const halt = async (signal: 'SIGKILL' | 'SIGTERM') => {
    if (signal === 'SIGKILL') process.kill(-proc.pid, 'SIGKILL');
    await proc.stop(15_000);
  };
  const restart = async () => {
    if (!proc.exitStatus()) throw new Error(`kafka at ${bootstrap} is still running: halt() it first`);
    proc = launch();
    try {
      await serving();
    } catch (e) {
      throw new Error(`${(e as Error).message}\nbroker stderr tail:\n${stderrTail()}`, { cause: e });
    }
  };
  return { bootstrap, port, controllerPort, dir, stderrTail, pid: () => proc.pid, halt, restart, stop };
}
