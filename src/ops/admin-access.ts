/**
 * Who may use which management listener. The metrics listener is open to the pod network (the
 * kubelet, Prometheus) and serves none of the admin routes; the admin listener serves only them,
 * to requests bearing the token when one is configured, and never to a browser page (which could
 * otherwise send a loopback request from any site the operator visits).
 */
import { isIP } from 'node:net';
import { isLoopbackHost } from '../common/host-port.js';
import type { AdminToken } from './admin-token.js';
import { Reply, type Gate, type Refusal } from './management-server.js';

/** RFC 6750: the realm names what the token is for; `error` says why a token was refused. */
const challenge = (error?: string) => ({ 'www-authenticate': `Bearer realm="kcompact-admin"${error ? `, error="${error}"` : ''}` });

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

/** On the admin listener: no browser requests, and the token when one is configured. */
export function adminGate(token: AdminToken | undefined): Gate {
  const browser: Refusal = {
    reason: 'browser',
    reply: Reply.json(403, {
      error: 'the admin routes do not answer requests from web pages (Origin or Sec-Fetch-Site set, or a Host that is not an address)',
    }),
    fix: 'use the kcompact CLI or curl; a web page cannot reach the admin routes',
  };
  return (req) => {
    if (req.headers.origin !== undefined || req.headers['sec-fetch-site'] !== undefined) return browser;
    if (!token) {
      // A page served from a name that resolves to 127.0.0.1 (DNS rebinding) names that host.
      const host = hostOf(req.headers.host);
      return isLoopbackHost(host) || isIP(host) !== 0 ? undefined : browser;
    }
    const verdict = token.check(req.headers.authorization);
    if (verdict === 'ok') return undefined;
    return verdict === 'missing'
      ? {
          reason: 'no-token',
          reply: Reply.json(
            401,
            { error: "the admin listener requires a bearer token (Authorization: Bearer TOKEN): give the CLI the proxy's token file with --admin-token-file" },
            challenge(),
          ),
          fix: 'send the token of adminTokenFile as Authorization: Bearer TOKEN (the CLI: --admin-token-file)',
        }
      : {
          reason: 'wrong-token',
          reply: Reply.json(
            401,
            { error: "the admin listener refused the bearer token: it is not the one in the proxy's admin token file (rotated?)" },
            challenge('invalid_token'),
          ),
          fix: "send the token the proxy's adminTokenFile holds now",
        };
  };
}
