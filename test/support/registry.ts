/**
 * Apicurio Registry as a schema registry speaking the Confluent REST API (the "ccompat" API), on
 * a fresh loopback port with its storage in memory (H2), from the build that install.sh makes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { javaBin } from './java.js';
import { apicurioCompleteMarker, apicurioJar } from './paths.js';
import { freePort } from './ports.js';
import { makeTempDir, pollUntil, startBackground, tail } from './processes.js';

export interface RunningSchemaRegistry {
  /** The Confluent-compatible base URL, e.g. http://127.0.0.1:PORT/apis/ccompat/v7. */
  url: string;
  /** The last lines the registry logged. */
  logTail(lines?: number): string;
  stop(): Promise<void>;
}

/** Why the registry cannot start here, or undefined when install.sh has built it. */
export function registryMissing(): string | undefined {
  if (fs.existsSync(apicurioCompleteMarker)) return undefined;
  return `schema registry (Apicurio) not built at ${path.dirname(apicurioJar)}: run bash test/peers/install.sh`;
}

export async function startSchemaRegistry(opts: { startTimeoutMs?: number } = {}): Promise<RunningSchemaRegistry> {
  const missing = registryMissing();
  if (missing) throw new Error(missing);
  const port = await freePort();
  const temp = makeTempDir('kcompact-registry-');
  const stdoutFile = path.join(temp.path, 'stdout.log');
  const stderrFile = path.join(temp.path, 'stderr.log');
  const args = [
    '-Xmx256m',
    '-XX:+UseSerialGC',
    // C1 only: the registry serves a handful of test requests, so startup matters more than peak speed.
    '-XX:TieredStopAtLevel=1',
    '-Xshare:auto',
    `-Dquarkus.http.port=${port}`,
    '-Dquarkus.http.host=127.0.0.1',
    // Explicit, so a stray REGISTRY_DATASOURCE_URL in the environment cannot point it elsewhere.
    '-Dquarkus.datasource.jdbc.url=jdbc:h2:mem:registry_db',
    '-jar',
    apicurioJar,
  ];
  const proc = startBackground(javaBin(), args, { stdoutFile, stderrFile, cwd: temp.path });
  // Quarkus logs to stdout; the JVM and SLF4J write to stderr.
  const logTail = (lines = 40) => [stdoutFile, stderrFile].map((f) => tail(fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : '', lines)).join('\n');
  const stop = async () => {
    try {
      await proc.stop(10_000);
    } finally {
      temp.remove();
    }
  };
  const url = `http://127.0.0.1:${port}/apis/ccompat/v7`;
  try {
    // Listing subjects goes through the REST layer to the storage, so a 200 means both are up.
    await pollUntil(
      'schema registry',
      opts.startTimeoutMs ?? 60_000,
      async () => {
        const res = await fetch(`${url}/subjects`, { signal: AbortSignal.timeout(2_000) });
        await res.arrayBuffer();
        return res.ok ? true : undefined;
      },
      () => {
        const s = proc.exitStatus();
        return s ? `exited (code ${s.code}, signal ${s.signal}) while starting` : undefined;
      },
    );
    return { url, logTail, stop };
  } catch (e) {
    const message = `${(e as Error).message}\nschema registry log tail:\n${logTail()}`;
    await stop();
    throw new Error(message, { cause: e });
  }
}
