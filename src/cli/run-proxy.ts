import { mkdirSync } from 'node:fs';
import { log, setLogLevel } from '../ops/log.js';
import { startManagementServer, type ManagementServer, type Route } from '../ops/management-server.js';
import { ProxyServer } from '../proxy/server.js';
import { TopicIds } from '../proxy/topic-ids.js';
import { startCompaction, type Compaction } from '../compaction/compaction.js';
import type { ProxyConfig } from '../config/settings.js';

const SHUTDOWN_DEADLINE_MS = 10_000;

/** Runs the proxy until SIGTERM/SIGINT. */
export async function runProxy(config: ProxyConfig): Promise<void> {
  setLogLevel(config.logLevel);
  mkdirSync(config.dataDir, { recursive: true });
  const topicIds = new TopicIds();
  let compaction: Compaction;
  try {
    compaction = await startCompaction({
      upstream: config.upstream,
      dataDir: config.dataDir,
      topicIds,
      log,
      maxFrameBytes: config.maxFrameBytes,
      requestTimeoutMs: config.requestTimeoutMs,
      cleanerBackoffMs: config.cleanerBackoffMs,
      staticTopics: config.topics,
      brokerConfigs: config.brokerConfigs,
    });
  } catch (err) {
    log.error('cannot start compaction', { err, dataDir: config.dataDir, fix: 'check that the data directory is writable and the upstream reachable' });
    process.exit(1);
  }
  const server = new ProxyServer({
    listen: config.listen,
    upstream: config.upstream,
    advertisedHost: config.advertisedHost,
    brokerPortBase: config.brokerPortBase,
    maxFrameBytes: config.maxFrameBytes,
    requestTimeoutMs: config.requestTimeoutMs,
    log,
    interceptors: compaction.interceptors,
    topics: topicIds,
  });
  const routes = new Map<string, Route>([
    ['POST /compact', (url) => compaction.engine.compactNow(url.searchParams.get('topic') ?? undefined)],
    ['GET /status', () => compaction.engine.status()],
  ]);
  let management: ManagementServer;
  try {
    await server.start();
    management = await startManagementServer(config.metricsListen, routes, log);
  } catch (err) {
    log.error('cannot start the proxy', {
      listen: `${config.listen.host}:${config.listen.port}`,
      metricsListen: `${config.metricsListen.host}:${config.metricsListen.port}`,
      err,
      fix: 'free the port or choose another --listen / --metrics-listen',
    });
    process.exit(1);
  }
  log.info('kcompact proxy started', {
    bootstrap: `${config.advertisedHost}:${config.listen.port}`,
    management: `http://${config.metricsListen.host}:${management.address.port}`,
    upstream: config.upstream.map((u) => `${u.host}:${u.port}`),
    dataDir: config.dataDir,
  });
  const shutdown = (signal: string) => {
    log.info('shutting down', { signal });
    const deadline = setTimeout(() => {
      log.error('shutdown deadline passed, exiting', { deadlineMs: SHUTDOWN_DEADLINE_MS });
      process.exit(1);
    }, SHUTDOWN_DEADLINE_MS);
    deadline.unref();
    Promise.all([server.stop(), management.close()])
      .then(() => compaction.close())
      .then(
        () => process.exit(0),
        (err) => {
          log.error('shutdown failed', { err });
          process.exit(1);
        },
      );
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}
