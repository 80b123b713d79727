/**
 * How the proxy reaches the upstream: every connection it opens there (each client's
 * pass-through connection, its own clients, the reachability probe) comes from here, in plain
 * TCP or in TLS, and the proxy's own clients take their SASL credentials from here.
 *
 * The settings are plain data so the compaction worker thread can be given them and build its
 * own connector. The files they name (CA, client certificate and key, password file) are re-read
 * when they change; new connections use the new contents.
 */
import net from 'node:net';
import tls from 'node:tls';
import { log as processLog, type Logger } from '../common/log.js';
import { WatchedFiles } from '../common/watched-files.js';
import { caBundle } from '../common/pem.js';
import type { HostPort } from '../common/host-port.js';
import type { SaslCredentials, SaslMechanism } from './sasl-client.js';

export interface UpstreamTlsSettings {
  /** PEM CA certificates the upstream's certificate must chain to; Node's bundled CAs when absent. */
  caFile?: string;
  /** PEM client certificate chain and key, for upstreams that require mutual TLS. */
  certFile?: string;
  keyFile?: string;
  /** The name to send (SNI) and to verify the certificate against instead of each broker's host. */
  serverName?: string;
  /** Whether the certificate must name the host (or serverName); the chain is verified regardless. */
  verifyHostname: boolean;
}

export interface UpstreamSaslSettings {
  mechanism: SaslMechanism;
  username: string;
  /** The password itself, or a file holding it (re-read when it changes); exactly one is set. */
  password?: string;
  passwordFile?: string;
}

export interface UpstreamSecurity {
  tls?: UpstreamTlsSettings;
  sasl?: UpstreamSaslSettings;
}

const CONNECT_TIMEOUT_MS = 10_000;

/** The files of the TLS settings in the order upstreamContext reads them. */
function upstreamTlsFiles(settings: UpstreamTlsSettings): string[] {
  return [settings.caFile, settings.certFile, settings.keyFile].filter((f): f is string => f !== undefined);
}

/** The secure context of the files' contents (upstreamTlsFiles order); throws when they do not fit together. */
export function upstreamContext(settings: UpstreamTlsSettings, contents: readonly Buffer[]): tls.SecureContext {
  let at = 0;
  const next = (present: string | undefined) => (present === undefined ? undefined : contents[at++]);
  const ca = next(settings.caFile);
  const cert = next(settings.certFile);
  const key = next(settings.keyFile);
  return tls.createSecureContext({ ...(ca ? { ca: caBundle(ca) } : {}), ...(cert ? { cert } : {}), ...(key ? { key } : {}) });
}

/** A password file holds the password, perhaps followed by a line break that is not part of it. */
export function passwordOf(contents: Buffer): string {
  return contents.toString('utf8').replace(/\r?\n$/, '');
}

/** Certificate errors whose fix is the CA or the name to verify, not the network. */
const VERIFY_ERRORS = /CERT|SELF_SIGNED|UNABLE_TO_|ALTNAME|HOSTNAME/;
/** The upstream's alerts about the proxy's client certificate (missing, or not from its CA). */
const CLIENT_CERT_ALERTS = /ALERT_(CERTIFICATE_REQUIRED|BAD_CERTIFICATE|UNKNOWN_CA|CERTIFICATE_UNKNOWN|HANDSHAKE_FAILURE)/;

export class UpstreamConnector {
  /** Plain TCP, no SASL: the default where nothing was configured. */
  static readonly plaintext = new UpstreamConnector({}, processLog);

  /** With TLS: the context of the CA, certificate and key files (Node's bundled CAs when none). */
  private readonly tlsFiles: WatchedFiles<tls.SecureContext> | undefined;
  private readonly passwordFile: WatchedFiles<string> | undefined;

  constructor(
    readonly settings: UpstreamSecurity,
    log: Logger,
  ) {
    const t = settings.tls;
    if (t) {
      this.tlsFiles = new WatchedFiles(upstreamTlsFiles(t), (contents) => upstreamContext(t, contents), { log, what: 'upstream TLS CA, certificate and key' });
    }
    const passwordFile = settings.sasl?.passwordFile;
    if (passwordFile) {
      this.passwordFile = new WatchedFiles([passwordFile], ([contents]) => passwordOf(contents!), { log, what: 'upstream SASL password file' });
    }
  }

  get tls(): boolean {
    return this.settings.tls !== undefined;
  }

  /** The credentials the proxy's own clients authenticate with; undefined without SASL. */
  credentials(): SaslCredentials | undefined {
    const sasl = this.settings.sasl;
    if (!sasl) return undefined;
    return { mechanism: sasl.mechanism, username: sasl.username, password: this.passwordFile?.value ?? sasl.password ?? '' };
  }

  /**
   * A connection to the broker, TLS handshake done when TLS is on. `onread`, when given, takes
   * what the socket reads (large-reads.ts for relaying, frame-reads.ts for whole frames).
   */
  connect(target: HostPort, timeoutMs = CONNECT_TIMEOUT_MS, onread?: net.OnReadOpts): Promise<net.Socket> {
    const t = this.settings.tls;
    if (!t) return connectPlain(target, timeoutMs, onread);
    const where = `${target.host}:${target.port}`;
    const name = t.serverName ?? target.host;
    return new Promise((resolve, reject) => {
      const socket = tls.connect({
        host: target.host,
        port: target.port,
        // Node warns about (and RFC 6066 forbids) an IP address as the SNI name.
        ...(net.isIP(name) ? {} : { servername: name }),
        secureContext: this.tlsFiles!.value,
        checkServerIdentity: t.verifyHostname ? (_host, cert) => tls.checkServerIdentity(name, cert) : () => undefined,
        ...(onread ? { onread } : {}),
      });
      const fail = (err: Error & { code?: string }) => {
        clearTimeout(timer);
        socket.destroy();
        const code = err.code ?? '';
        const fix = CLIENT_CERT_ALERTS.test(code)
          ? 'check upstreamTlsCertFile and upstreamTlsKeyFile: the upstream wants a client certificate its CA signed'
          : VERIFY_ERRORS.test(code)
            ? 'check upstreamTlsCaFile (the CA that signed the broker certificate) and upstreamTlsServerName'
            : 'check that this upstream listener speaks TLS (upstreamTls)';
        reject(Object.assign(new Error(`TLS connection to upstream ${where} failed: ${err.message}; ${fix}`), { code: err.code }));
      };
      const timer = setTimeout(() => fail(new Error(`connect and TLS handshake did not finish within ${timeoutMs} ms`)), timeoutMs);
      socket.once('error', fail);
      socket.once('secureConnect', () => {
        clearTimeout(timer);
        socket.off('error', fail);
        resolve(socket);
      });
    });
  }

  close(): void {
    this.tlsFiles?.close();
    this.passwordFile?.close();
  }
}

function connectPlain(target: HostPort, timeoutMs: number, onread?: net.OnReadOpts): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: target.host, port: target.port, ...(onread ? { onread } : {}) });
    const timer = setTimeout(() => fail(new Error(`connect to ${target.host}:${target.port} timed out after ${timeoutMs} ms`)), timeoutMs);
    const fail = (err: Error) => {
      clearTimeout(timer);
      socket.destroy();
      reject(err);
    };
    socket.once('error', fail);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.off('error', fail);
      resolve(socket);
    });
  });
}
