import { mkdirSync } from 'node:fs';
import { log, setLogLevel } from '../common/log.js';
import { Reply, startManagementServer, type Gate, type ListenerName, type Route } from '../ops/management-server.js';
import { adminRoutes } from '../ops/admin-routes.js';
import { adminGate, adminRoutesElsewhere } from '../ops/admin-access.js';
import { BearerToken } from '../ops/bearer-token.js';
import { collectWhenIdle } from '../common/idle-collection.js';
import { createMetrics } from '../ops/metrics/metrics.js';
import { Health } from '../ops/health/health.js';
import { UpstreamReachability } from '../ops/health/upstream-reachability.js';
import { ProxyServer } from '../proxy/server.js';
import { TopicIds } from '../proxy/topic-ids.js';
import { startCompaction, type Compaction } from '../compaction/compaction.js';
import { compactionSettings, flagOf, listenerTlsSettings, type ProxyConfig } from '../config/settings.js';
import { reloadWatchedFiles } from '../common/watched-files.js';
import { UpstreamConnector } from '../upstream/upstream-connector.js';
import { connectCluster } from '../upstream/connection-options.js';
import { startTableServer, type TableServer } from '../tables/table-server.js';
import { tablesGate } from '../tables/table-access.js';
import { MetadataPartitions } from '../tables/topic-partitions.js';
import { UpstreamTableWriter } from '../tables/table-writer.js';

/**
 * After the drain, how long checkpointing and closing the key index may take before the process
 * gives up and exits 1 (a clean pass under way finishes first: a few seconds at most).
 */
const CLOSE_BUDGET_MS = 20_000;

function fail(msg: string, fields: Record<string, unknown>): never {
  log.error(msg, fields);
  process.exit(1);
}

/**
 * Runs the proxy until SIGTERM/SIGINT. The management listeners come up first, so the startup
 * probe can watch index recovery; the Kafka listeners open once the index is recovered.
 */
export async function runProxy(config: ProxyConfig): Promise<void> {
  setLogLevel(config.logLevel);
  mkdirSync(config.dataDir, { recursive: true });
  const metrics = createMetrics({
    perPartition: config.metricsPerPartition,
    topicsInclude: config.metricsTopicsInclude,
    topicsExclude: config.metricsTopicsExclude,
    log,
  });
  let server: ProxyServer | undefined;
  let compaction: Compaction | undefined;
  const options = compactionSettings(config);
  const { connection } = options.engine;
  // One connector for every upstream connection of this thread; the worker builds its own.
  const connector = new UpstreamConnector(connection.security, log);
  // One client of the upstream for everything this thread asks it itself (config store, fetch
  // view reads, produce guard, broker discovery, readiness, admin routes); the worker has its own.
  const upstream = connectCluster(connection, { clientId: 'kcompact', connector, log });
  // From the start: SIGHUP's default action would end the process. The worker thread gets no
  // signals; it sees changed files through its own file checks.
  process.on('SIGHUP', () => {
    log.info('SIGHUP: re-reading the TLS and password files');
    reloadWatchedFiles();
  });
  const health = new Health({
    listening: () => server?.listening ?? false,
    upstream: new UpstreamReachability({ client: upstream, lastConnectMs: () => metrics.proxy.lastUpstreamConnectMs }),
  });
  /** A route that needs the compaction engine, answered 503 while the index is being recovered. */
  const withCompaction =
    (use: (c: Compaction, url: URL) => Promise<unknown>): Route =>
    async (url) =>
      compaction
        ? use(compaction, url)
        : Reply.json(503, { error: 'kcompact is still starting (recovering the key index); try again once /startupz answers 200' });
  const admin = adminRoutes({ config, server: () => server, withCompaction, upstream });
  const metricsRoutes = new Map<string, Route>([
    ...health.routes(),
    [
      'GET /metrics',
      async () => {
        const { contentType, body } = await metrics.scrape();
        return Reply.text(200, body, contentType);
      },
    ],
  ]);
  /** Opens one of the management listeners; a port that cannot be had ends the start, naming its setting. */
  const listener = (name: ListenerName, setting: 'metricsListen' | 'adminListen', routes: ReadonlyMap<string, Route>, gate: Gate) =>
    startManagementServer(config[setting], routes, log, { listener: name, gate, onRefused: (reason) => metrics.refused(name, reason) }).catch((err: unknown) =>
      fail(`cannot start the ${name} listener`, {
        [setting]: `${config[setting].host}:${config[setting].port}`,
        err,
        fix: `free the port or choose another --${flagOf(setting)}`,
      }),
    );
  const adminPaths = new Set(admin.map(([key]) => key.slice(key.indexOf(' ') + 1)));
  const management = await listener('metrics', 'metricsListen', metricsRoutes, adminRoutesElsewhere(adminPaths));
  let adminToken: BearerToken | undefined;
  try {
    adminToken = config.adminTokenFile === undefined ? undefined : new BearerToken(config.adminTokenFile, log);
  } catch (err) {
    fail('cannot read the admin token file', {
      adminTokenFile: config.adminTokenFile,
      err,
      fix: 'make the file readable by the proxy and write a token into it',
    });
  }
  const adminServer = await listener('admin', 'adminListen', new Map(admin), adminGate(adminToken));
  const tables = config.tablesListen === undefined ? undefined : await startTables(config, config.tablesListen);

  /** The table API's listener, before compaction like the others: its routes answer 503 until the engine is up. */
  async function startTables(c: ProxyConfig, listen: NonNullable<ProxyConfig['tablesListen']>): Promise<{ server: TableServer; token?: BearerToken }> {
    let token: BearerToken | undefined;
    try {
      token = c.tablesTokenFile === undefined ? undefined : new BearerToken(c.tablesTokenFile, log, 'tables token file');
    } catch (err) {
      fail('cannot read the tables token file', {
        tablesTokenFile: c.tablesTokenFile,
        err,
        fix: 'make the file readable by the proxy and write a token into it',
      });
    }
    const server = await startTableServer({
      listen,
      gate: tablesGate(token),
      onRefused: (reason) => metrics.refused('tables', reason),
      deps: {
        reads: () => compaction?.engine.tables,
        compacted: (topic) => compaction?.configs.view.compacted(topic) !== undefined,
        partitions: new MetadataPartitions(upstream),
        writer: new UpstreamTableWriter(upstream, { produceTimeoutMs: Math.max(100, c.requestTimeoutMs - 1_000) }),
        metrics: metrics.tables,
        log: log.child({ subsystem: 'tables' }),
      },
    }).catch((err: unknown) =>
      fail('cannot start the table API listener', {
        tablesListen: `${listen.host}:${listen.port}`,
        err,
        fix: `free the port or choose another --${flagOf('tablesListen')}`,
      }),
    );
    return { server, ...(token && { token }) };
  }

  const topicIds = new TopicIds();
  topicIds.watch(upstream);
  const engine = await startCompaction(options, { topicIds, log, upstreamConnector: connector, upstreamClient: upstream }).catch((err: unknown) =>
    fail('cannot start compaction', { err, dataDir: config.dataDir, fix: 'check that the data directory is writable and the upstream reachable' }),
  );
  compaction = engine;
  metrics.compaction.attach({
    status: () => engine.engine.status(),
    filteredRecords: () => engine.fetchView.stats.removedRecords,
    shareFilteredRecords: () => engine.shareFetchView.stats.removedRecords,
    shareCopiedRecords: () => engine.shareFetchView.stats.copiedRecords,
    heldFetches: () => engine.fetchView.stats.outOfRangeHeld,
    viewCache: () => engine.fetchView.cache,
    copiesAhead: () => engine.fetchView.copiesAhead,
  });

  const proxy = new ProxyServer({
    listen: config.listen,
    upstream: config.upstream,
    advertisedHost: config.advertisedHost,
    brokerPortBase: config.brokerPortBase,
    maxFrameBytes: config.maxFrameBytes,
    requestTimeoutMs: config.requestTimeoutMs,
    log,
    filters: engine.filters,
    topics: topicIds,
    meter: metrics.proxy,
    tls: listenerTlsSettings(config),
    connector,
    upstreamClient: upstream,
  });
  server = proxy;
  await proxy.start().catch((err: unknown) =>
    fail('cannot start the proxy', {
      listen: `${config.listen.host}:${config.listen.port}`,
      err,
      fix: 'free the port or choose another --listen / --broker-port-base',
    }),
  );
  health.markStarted();
  const idleCollection = collectWhenIdle(log);
  log.info('kcompact proxy started', {
    bootstrap: `${config.advertisedHost}:${config.listen.port}`,
    metrics: `http://${config.metricsListen.host}:${management.address.port}`,
    admin: `http://${config.adminListen.host}:${adminServer.address.port}`,
    adminToken: adminToken ? 'required' : 'none (loopback)',
    tables: tables ? `http://${config.tablesListen!.host}:${tables.server.address.port}${tables.token ? ' (token required)' : ''}` : 'off',
    upstream: config.upstream.map((u) => `${u.host}:${u.port}`),
    dataDir: config.dataDir,
    listenerTls: config.tlsCertFile === undefined ? 'off' : config.tlsClientCaFile === undefined ? 'on' : 'on, client certificates required',
    upstreamTls: config.upstreamTls,
    upstreamSasl: config.upstreamSaslMechanism === undefined ? 'off' : `${config.upstreamSaslMechanism} as ${config.upstreamSaslUsername}`,
  });

  // SIGTERM: fail readiness, stop accepting, drain, checkpoint and close SQLite, exit 0.
  const shutdown = async (signal: string) => {
    const deadlineMs = config.drainTimeoutMs + CLOSE_BUDGET_MS;
    setTimeout(() => fail('shutdown did not finish in time, exiting', { deadlineMs }), deadlineMs).unref();
    health.markStopping();
    idleCollection.stop();
    log.info('shutting down: readiness fails, listeners close, in-flight requests drain', {
      signal,
      connections: proxy.connectionCount,
      drainTimeoutMs: config.drainTimeoutMs,
    });
    const undrained = await proxy.drain(config.drainTimeoutMs);
    if (undrained > 0)
      log.warn('drain deadline passed; closing connections with requests still in flight', { connections: undrained, drainTimeoutMs: config.drainTimeoutMs });
    else log.info('connections drained');
    await proxy.stop();
    await Promise.all([management.close(), adminServer.close(), tables?.server.close()]);
    adminToken?.close();
    tables?.token?.close();
    // Before the index: the config store's and the reads' requests in flight end now, not at their timeout.
    upstream.close();
    log.info('closing the key index');
    await engine.close();
    log.info('shutdown complete', { signal });
    process.exit(0);
  };
  let shuttingDown = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (shuttingDown) fail('second signal during shutdown, exiting now', { signal });
    shuttingDown = true;
    shutdown(signal).catch((err: unknown) => fail('shutdown failed', { err }));
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
