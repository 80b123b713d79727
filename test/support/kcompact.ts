/**
 * Runs the proxy inside the test process, on free loopback ports, in front of an upstream.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ProxyServer } from '../../src/proxy/server.js';
import { createLogger, setLogLevel, isLogLevel } from '../../src/common/log.js';
import { parseHostPortList } from '../../src/common/host-port.js';
import { TopicIds } from '../../src/proxy/topic-ids.js';
import { startCompaction, type Compaction } from '../../src/compaction/compaction.js';
import { configLayerOptions, type StaticTopic } from '../../src/compaction/config/topic-configs.js';
import { DEFAULT_FETCH_VIEW } from '../../src/compaction/fetch-view/fetch-view.js';
import { engineOptions } from '../../src/engine/api/engine-options.js';
import type { Filter } from '../../src/proxy/filter/filter.js';
import type { KeyIdentityRules } from '../../src/engine/api/key-identity-rules.js';

export interface RunningProxy {
  bootstrap: string;
  server: ProxyServer;
  brokerPortBase: number;
  stop(): Promise<void>;
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen({ host: '127.0.0.1', port }, () => s.close(() => resolve(true)));
  });
}

/** Where runs are taken: below Linux's ephemeral range (32768-60999), which outgoing connections and freePort() draw from. */
const RUN_PORTS = { from: 20000, to: 32768 };

/**
 * A run of `count` consecutive free ports: the bootstrap port and the broker ports after it. The
 * broker ports are bound only once the proxy has met the upstream, so they must lie where no
 * client connection made meanwhile can be given one as its local port.
 */
export async function freePortRun(count: number): Promise<number> {
  for (let attempt = 0; attempt < 200; attempt++) {
    const base = RUN_PORTS.from + Math.floor(Math.random() * (RUN_PORTS.to - RUN_PORTS.from - count));
    let ok = true;
    for (let p = base; p < base + count && ok; p++) ok = await portFree(p);
    if (ok) return base;
  }
  throw new Error(`no run of ${count} free ports found on 127.0.0.1`);
}

/** `topics`: the topic id map the filters were made with (one is made when omitted). */
export async function startProxy(
  upstream: string,
  opts: { maxFrameBytes?: number; brokerSlots?: number; filters?: readonly Filter[]; topics?: TopicIds } = {},
): Promise<RunningProxy> {
  const level = process.env.KCOMPACT_TEST_LOG_LEVEL ?? 'warn';
  setLogLevel(isLogLevel(level) ? level : 'warn');
  const slots = opts.brokerSlots ?? 4;
  const port = await freePortRun(slots + 1);
  const server = new ProxyServer({
    listen: { host: '127.0.0.1', port },
    upstream: parseHostPortList(upstream),
    advertisedHost: '127.0.0.1',
    brokerPortBase: port + 1,
    maxFrameBytes: opts.maxFrameBytes ?? 100 * 1024 * 1024,
    requestTimeoutMs: 10_000,
    log: createLogger({ component: 'kcompact-test' }),
    filters: opts.filters,
    topics: opts.topics,
  });
  await server.start();
  return { bootstrap: `127.0.0.1:${port}`, server, brokerPortBase: port + 1, stop: () => server.stop() };
}

export interface RunningCompactingProxy extends RunningProxy {
  compaction: Compaction;
  /** Cleans every compacted topic now (or the one named). */
  compactNow(topic?: string): Promise<unknown>;
}

/** The whole product in-process: the proxy with compaction, its data in a temp dir. */
export async function startCompactingProxy(
  upstream: string,
  opts: {
    brokerDefaults?: Record<string, string>;
    cleanerBackoffMs?: number;
    dataDir?: string;
    staticTopics?: StaticTopic[];
    maxFrameBytes?: number;
    keyIdentity?: KeyIdentityRules;
    schemaRegistryUrl?: string;
    /** Filters to run before compaction's (a test's observers). */
    filters?: readonly Filter[];
    /**
     * Whether this proxy takes part in carrying survivors forward: true joins a carrier group of
     * its own (it carries every partition), a string joins that group (the proxies sharing it
     * divide the partitions).
     */
    carry?: boolean | string;
    /** The carrier group's session timeout (default 6 s, Kafka's least). */
    carrierSessionTimeoutMs?: number;
    /** What the proxy's carry passes may write and read per second (the carryBytesPerSecond setting); unset: unbounded. */
    carryBytesPerSecond?: number;
    /**
     * Whether the proxy indexes only the partitions it carries or its clients use (the product's
     * default); false here unless a test asks: most tests write around the proxy and wait for its index.
     */
    indexOnDemand?: boolean;
    /** How long a partition it does not carry stays indexed after its last use (the product's default: 10 minutes). */
    indexIdleMs?: number;
  } = {},
): Promise<RunningCompactingProxy> {
  const level = process.env.KCOMPACT_TEST_LOG_LEVEL ?? 'warn';
  setLogLevel(isLogLevel(level) ? level : 'warn');
  const log = createLogger({ component: 'kcompact-test' });
  const dataDir = opts.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'kcompact-data-'));
  const topicIds = new TopicIds();
  const compaction = await startCompaction(
    {
      engine: engineOptions({
        connection: { upstream: parseHostPortList(upstream), maxFrameBytes: opts.maxFrameBytes, requestTimeoutMs: 10_000 },
        dataDir,
        cleaner: { backoffMs: opts.cleanerBackoffMs ?? 3_600_000 },
        ...(opts.carry !== undefined &&
          opts.carry !== false && {
            election: {
              groupId: opts.carry === true ? `kcompact-test-${randomUUID()}` : opts.carry,
              sessionTimeoutMs: opts.carrierSessionTimeoutMs ?? 6_000,
            },
          }),
        carry: { bytesPerSecond: opts.carryBytesPerSecond },
        indexing: { onDemand: opts.indexOnDemand ?? false, idleMs: opts.indexIdleMs },
        keyIdentity: { rules: opts.keyIdentity, schemaRegistryUrl: opts.schemaRegistryUrl },
      }),
      configLayer: configLayerOptions({ staticTopics: opts.staticTopics, brokerConfigs: opts.brokerDefaults, pollIntervalMs: 200 }),
      fetchView: DEFAULT_FETCH_VIEW,
    },
    { topicIds, log },
  );
  const port = await freePortRun(5);
  const server = new ProxyServer({
    listen: { host: '127.0.0.1', port },
    upstream: parseHostPortList(upstream),
    advertisedHost: '127.0.0.1',
    brokerPortBase: port + 1,
    maxFrameBytes: opts.maxFrameBytes ?? 100 * 1024 * 1024,
    requestTimeoutMs: 10_000,
    log,
    filters: [...(opts.filters ?? []), ...compaction.filters],
    topics: topicIds,
  });
  await server.start();
  return {
    bootstrap: `127.0.0.1:${port}`,
    server,
    brokerPortBase: port + 1,
    compaction,
    compactNow: (topic) => compaction.engine.compactNow(topic),
    stop: async () => {
      await server.stop();
      await compaction.close();
      if (!opts.dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
