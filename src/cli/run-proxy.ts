import { mkdirSync } from 'node:fs';
import { log, setLogLevel } from '../ops/log.js';
import { ProxyServer } from '../proxy/server.js';
import type { ProxyConfig } from '../config/settings.js';

const SHUTDOWN_DEADLINE_MS = 10_000;

/** Runs the proxy until SIGTERM/SIGINT. */
export async function runProxy(config: ProxyConfig): Promise<void> {
  setLogLevel(config.logLevel);
  mkdirSync(config.dataDir, { recursive: true });
  const server = new ProxyServer({
    listen: config.listen,
    upstream: config.upstream,
    advertisedHost: config.advertisedHost,
    brokerPortBase: config.brokerPortBase,
    maxFrameBytes: config.maxFrameBytes,
    requestTimeoutMs: config.requestTimeoutMs,
    log,
  });
  try {
    await server.start();
  } catch (err) {
    log.error('cannot start the proxy', { listen: `${config.listen.host}:${config.listen.port}`, err, fix: 'free the port or choose another --listen' });
    process.exit(1);
  }
  log.info('kcompact proxy started', {
    bootstrap: `${config.advertisedHost}:${config.listen.port}`,
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
    server.stop().then(() => process.exit(0));
  };
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  process.once('SIGINT', () => shutdown('SIGINT'));
}
