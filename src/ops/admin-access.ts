/**
 * Who may use which management listener. The metrics listener is open to the pod network (the
 * kubelet, Prometheus) and serves none of the admin routes; the admin listener serves only them,
 * to requests bearing the token when one is configured, and never to a browser page (which could
 * otherwise send a loopback request from any site the operator visits). The table API's listener
 * (src/tables/) is guarded the same way, with its own token.
 */
import { isIP } from 'node:net';
import { isLoopbackHost } from '../common/host-port.js';
import type { BearerToken } from './bearer-token.js';
import { Reply, type Gate, type Refusal, type RequestGate } from './management-server.js';

/** On the metrics listener: the admin routes' paths are not there, by any method. */
export function adminRoutesElsewhere(adminPaths: ReadonlySet<string>): Gate {
  return (_req, url) =>
    adminPaths.has(url.pathname)
      ? {
          reason: 'admin-route',
          reply: Reply.json(404, {
            error: `no route ${url.pathname} here: this is the metrics listener (probes and /metrics); the admin routes are served on the admin listener (adminListen)`,
            listener: 'metrics',
          }),
          fix: 'use the admin listener (--admin-listen), through kubectl exec or kubectl port-forward',
        }
      : undefined;
}

/** The Host a request names, without its port. */
function hostOf(header: string | undefined): string {
  const h = header ?? '';
  return h.startsWith('[') ? h.slice(1, h.indexOf(']')) : h.replace(/:\d*$/, '');
}

/** How a listener that takes a bearer token words its refusals. */
export interface GuardedListener {
  /** The realm of the Bearer challenge (RFC 6750): what the token is for. */
  realm: string;
  /** "the admin listener", as a refusal names it. */
  name: string;
  /** "the admin routes", as the refusal of a web page names them. */
  routes: string;
  /** The setting of the token file, as the CLI's flag: --admin-token-file. */
  tokenFlag: string;
  /** The setting's config key: adminTokenFile. */
  tokenKey: string;
}

const ADMIN: GuardedListener = {
  realm: 'kcompact-admin',
  name: 'the admin listener',
  routes: 'the admin routes',
  tokenFlag: '--admin-token-file',
  tokenKey: 'adminTokenFile',
};

/**
 * No browser requests, and the token when one is configured; without one, only a Host that is an
 * address or loopback (a page served from a name that resolves to 127.0.0.1, DNS rebinding, names
 * that name). The refusals say what to do in their body too, for clients other than the CLI.
 */
export function bearerGate(token: BearerToken | undefined, listener: GuardedListener): RequestGate {
  /** RFC 6750: the realm names what the token is for; `error` says why a token was refused. */
  const challenge = (error?: string) => ({ 'www-authenticate': `Bearer realm="${listener.realm}"${error ? `, error="${error}"` : ''}` });
  const refusal = (reason: Refusal['reason'], status: number, error: string, fix: string, headers: Record<string, string> = {}): Refusal => ({
    reason,
    reply: Reply.json(status, { error, fix }, headers),
    fix,
  });
  const browser = refusal(
    'browser',
    403,
    `${listener.routes} do not answer requests from web pages (Origin or Sec-Fetch-Site set, or a Host that is not an address)`,
    `use the kcompact CLI or curl; a web page cannot reach ${listener.routes}`,
  );
  const missing = refusal(
    'no-token',
    401,
    `${listener.name} requires a bearer token (Authorization: Bearer TOKEN): give the CLI the proxy's token file with ${listener.tokenFlag}`,
    `send the token of ${listener.tokenKey} as Authorization: Bearer TOKEN (the CLI: ${listener.tokenFlag})`,
    challenge(),
  );
  const wrong = refusal(
    'wrong-token',
    401,
    `${listener.name} refused the bearer token: it is not the one in the proxy's token file (${listener.tokenKey}; rotated?)`,
    `send the token the proxy's ${listener.tokenKey} holds now`,
    challenge('invalid_token'),
  );
  return (req) => {
    if (req.headers.origin !== undefined || req.headers['sec-fetch-site'] !== undefined) return browser;
    if (!token) {
      const host = hostOf(req.headers.host);
      return isLoopbackHost(host) || isIP(host) !== 0 ? undefined : browser;
    }
    const verdict = token.check(req.headers.authorization);
    return verdict === 'ok' ? undefined : verdict === 'missing' ? missing : wrong;
  };
}

/** On the admin listener: no browser requests, and the token when one is configured. */
export function adminGate(token: BearerToken | undefined): Gate {
  return bearerGate(token, ADMIN);
}
