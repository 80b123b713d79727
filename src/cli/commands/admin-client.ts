/**
 * The admin verbs' one way to a running proxy: JSON over HTTP to its admin listener
 * (--admin-listen), with the bearer token of --admin-token-file when one is given. Failures become
 * CliErrors that say which address was tried and what to check; a refusal by the proxy (unknown
 * topic, topic not compacted) carries the proxy's message.
 */
import http from 'node:http';
import { connectableHost, type HostPort } from '../../common/host-port.js';
import { describeKey } from '../../config/settings.js';
import { CliError } from './cli-error.js';

/** Reads answer at once; a clean or a rebuild may take long, so only reads have a deadline. */
const READ_TIMEOUT_MS = 30_000;

/** The endpoint did not answer at all (nothing listening, wrong address, firewall). */
export class EndpointUnreachable extends CliError {
  override readonly name = 'EndpointUnreachable';
}

export function formatAddress(a: HostPort): string {
  return a.host.includes(':') ? `[${a.host}]:${a.port}` : `${a.host}:${a.port}`;
}

export interface AdminCredentials {
  token: string;
  /** Where the token came from, for messages (never the token itself). */
  file: string;
}

export class AdminClient {
  /** Where requests go: a wildcard listen address is reached on loopback. */
  readonly address: HostPort;

  constructor(
    listen: HostPort,
    private readonly credentials?: AdminCredentials,
  ) {
    this.address = { host: connectableHost(listen.host), port: listen.port };
  }

  get<T>(path: string, params: Record<string, string | number | undefined> = {}): Promise<T> {
    return this.request<T>('GET', path, params);
  }

  post<T>(path: string, params: Record<string, string | number | undefined> = {}): Promise<T> {
    return this.request<T>('POST', path, params);
  }

  private async request<T>(method: string, path: string, params: Record<string, string | number | undefined>): Promise<T> {
    const base = `http://${formatAddress(this.address)}`;
    const url = new URL(path, base);
    for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, String(v));
    let answer: { status: number; text: string };
    try {
      answer = await this.send(method, url);
    } catch (err) {
      throw new EndpointUnreachable(
        `cannot reach the proxy's admin listener at ${base} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): check that the proxy is running and that ` +
          `${describeKey('adminListen')} is its admin address (loopback by default: in Kubernetes, run the verb in the pod with kubectl exec, or kubectl port-forward to it)`,
      );
    }
    let body: unknown;
    try {
      body = JSON.parse(answer.text);
    } catch {
      throw new CliError(
        `${base} answered ${method} ${url.pathname} with HTTP ${answer.status} and no JSON: is ${formatAddress(this.address)} a kcompact admin listener?`,
      );
    }
    if (answer.status === 200) return body as T;
    const { error, listener } = body as { error?: unknown; listener?: unknown };
    if (listener === 'metrics') {
      throw new CliError(
        `${base} is the proxy's metrics listener (probes and /metrics), not its admin listener: give ${describeKey('adminListen')} the proxy's admin address`,
      );
    }
    if (answer.status === 401) {
      throw new CliError(
        this.credentials
          ? `the admin listener at ${base} refused the token in ${this.credentials.file}: it is not the one the proxy's adminTokenFile holds now; give ${describeKey('adminTokenFile')} the proxy's token file`
          : `the admin listener at ${base} requires a bearer token: give ${describeKey('adminTokenFile')} the proxy's token file`,
      );
    }
    throw new CliError(typeof error === 'string' ? error : `${method} ${url.pathname} failed with HTTP ${answer.status}`);
  }

  /** node:http rather than fetch, which refuses some ports (6000, 6665-6669, ...) an admin listener may use. */
  private send(method: string, url: URL): Promise<{ status: number; text: string }> {
    return new Promise((resolve, reject) => {
      const headers = this.credentials ? { authorization: `Bearer ${this.credentials.token}` } : {};
      const req = http.request({ host: this.address.host, port: this.address.port, method, path: url.pathname + url.search, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      });
      if (method === 'GET')
        req.setTimeout(READ_TIMEOUT_MS, () => req.destroy(Object.assign(new Error(`no answer within ${READ_TIMEOUT_MS} ms`), { code: 'ETIMEDOUT' })));
      req.on('error', reject);
      req.end();
    });
  }
}
