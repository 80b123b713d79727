/**
 * A real Apache Kafka 4.4 broker (KRaft, one node acting as broker and controller) in a temp dir
 * on fresh loopback ports, from the jars that install.sh collects. Three kinds of store:
 * - 'off': a store without compaction (the cleaner is off, topics keep what Kafka's defaults keep);
 * - 'reference': Kafka's own cleaner, tuned to act within a second or so;
 * - 'capped': a store that caps retention, as OCI Streaming (at most 7 days) and Event Hubs do.
 *   The cleaner is off, the broker default retention is the cap, and RetentionCapPolicy
 *   (test/peers/java/src) refuses any topic asking retention.ms=-1 or more than the cap, at
 *   creation or later, with POLICY_VIOLATION. Segments roll and retention runs often, so records
 *   are really gone soon after the cap: what survives only survives if someone writes it again.
 *   Kafka applies time retention only under cleanup.policy=delete, so a topic given compact (or
 *   an empty policy) directly escapes the cap; kcompact never forwards cleanup.policy upstream.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
// kafkajs is CommonJS: Node's ESM loader sees only its default export as a value.
import kafkajs from 'kafkajs';
import { javaArgs, javaBin, KAFKA_MAIN_CLASSES, javaToolOk } from './java.js';
import { javaClassesDir } from './paths.js';
import { freePorts } from './ports.js';
import { makeTempDir, pollUntil, startBackground, tail } from './processes.js';

export type KafkaCompaction = 'off' | 'reference' | 'capped';

export interface KafkaOptions {
  /**
   * 'off': an upstream that lacks compaction; 'reference': Kafka's own cleaner, tuned to run
   * quickly; 'capped': no compaction and retention capped at `retentionCapMs`.
   */
  compaction: KafkaCompaction;
  /** The 'capped' store's longest retention (DEFAULT_RETENTION_CAP_MS unless set); only for 'capped'. */
  retentionCapMs?: number;
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

/** A cap short enough for a test to watch records expire, long enough to produce and read them first. */
export const DEFAULT_RETENTION_CAP_MS = 10_000;

/** The broker property RetentionCapPolicy reads its cap from (custom keys reach a policy's configure()). */
export const RETENTION_CAP_PROPERTY = 'kcompact.test.retention.cap.ms';
const RETENTION_CAP_POLICY = 'RetentionCapPolicy';

/**
 * The 'capped' store. Retention deletes only whole segments, judged by their newest record, and
 * Kafka rolls a segment only on an append once log.roll.ms has passed (log.segment.bytes cannot
 * go below 1 MiB): rolling at half the cap keeps a record from outliving the cap by more than
 * half of it while writes go on. An idle log is no shelter either, since retention rolls the
 * active segment itself once all of it is due. log.initial.task.delay.ms is 30 s by default,
 * which would hold the first retention check back that long after every start.
 */
function cappedStore(capMs: number): Record<string, string | number> {
  return {
    'log.cleaner.enable': 'false',
    [RETENTION_CAP_PROPERTY]: capMs,
    'log.retention.ms': capMs,
    'log.roll.ms': Math.max(1, Math.floor(capMs / 2)),
    'log.retention.check.interval.ms': 1000,
    'log.segment.delete.delay.ms': 100,
    'log.initial.task.delay.ms': 0,
    'create.topic.policy.class.name': RETENTION_CAP_POLICY,
    'alter.config.policy.class.name': RETENTION_CAP_POLICY,
  };
}

function storeProperties(compaction: KafkaCompaction, retentionCapMs: number | undefined): Record<string, string | number> {
  if (retentionCapMs !== undefined && compaction !== 'capped') throw new Error(`retentionCapMs is only for the 'capped' store, not '${compaction}'`);
  if (compaction === 'reference') return REFERENCE_CLEANER;
  if (compaction === 'off') return { 'log.cleaner.enable': 'false' };
  const cap = retentionCapMs ?? DEFAULT_RETENTION_CAP_MS;
  if (!Number.isSafeInteger(cap) || cap <= 0) throw new Error(`retentionCapMs must be a positive whole number of ms, not ${cap}`);
  return cappedStore(cap);
}

/**
 * The shared class dir may predate the policy (install.sh recompiles only when run): say so,
 * rather than leave a broker dying of ClassNotFoundException at startup.
 */
function requireCapPolicyClass(): void {
  if (!fs.existsSync(path.join(javaClassesDir, `${RETENTION_CAP_POLICY}.class`))) {
    throw new Error(`${RETENTION_CAP_POLICY} is not compiled in ${javaClassesDir}: run bash test/peers/install.sh`);
  }
}

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
  retentionCapMs?: number;
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
    ...storeProperties(opts.compaction, opts.retentionCapMs),
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
  if (opts.compaction === 'capped') requireCapPolicyClass();
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
      retentionCapMs: opts.retentionCapMs,
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
