/**
 * `kcompact get` and `put`'s way to the table API: HTTP to the proxy's table listener
 * (--tables-listen or --tables-url) with the bearer token of --tables-token-file when given.
 * Answers come back as status and JSON; only a listener that does not answer, or answers
 * something that is not the table API, is an error here.
 */
import http from 'node:http';
import { describeKey } from '../../config/settings.js';
import { CliError } from './cli-error.js';

const TIMEOUT_MS = 70_000;

export interface TablesAnswer {
  status: number;
  body: Record<string, unknown>;
}

export class TablesClient {
  constructor(
    readonly base: URL,
    private readonly token?: { token: string; file: string },
  ) {}

  request(method: string, path: string, opts: { headers?: Record<string, string>; body?: Buffer } = {}): Promise<TablesAnswer> {
    const url = new URL(path, this.base);
    const headers = { ...opts.headers, ...(this.token && { authorization: `Bearer ${this.token.token}` }) };
    return new Promise((resolve, reject) => {
      const req = http.request(url, { method, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          try {
            resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) as Record<string, unknown> });
          } catch {
            reject(
              new CliError(
                `${this.base.origin} answered ${method} ${url.pathname} with HTTP ${res.statusCode} and no JSON: is it a kcompact table API listener?`,
              ),
            );
          }
        });
      });
      req.setTimeout(TIMEOUT_MS, () => req.destroy(Object.assign(new Error(`no answer within ${TIMEOUT_MS} ms`), { code: 'ETIMEDOUT' })));
      req.on('error', (err: NodeJS.ErrnoException) =>
        reject(
          err instanceof CliError
            ? err
            : new CliError(
                `cannot reach the table API at ${this.base.origin} (${err.code ?? err.message}): check that the proxy runs with ${describeKey('tablesListen')} and that --tables-url or --tables-listen names it`,
              ),
        ),
      );
      req.end(opts.body);
    });
  }

  /** The CliError for an answer that is not what the verb wanted: the proxy's own message and fix. */
  refusal(answer: TablesAnswer): CliError {
    if (answer.status === 401) {
      return new CliError(
        this.token
          ? `the table API refused the token in ${this.token.file}: it is not the one the proxy's tablesTokenFile holds now`
          : `the table API requires a bearer token: give ${describeKey('tablesTokenFile')} the proxy's token file`,
      );
    }
    const { error, fix } = answer.body;
    const what = typeof error === 'string' ? error : `HTTP ${answer.status}`;
    return new CliError(typeof fix === 'string' ? `${what}; ${fix}` : what);
  }
}
